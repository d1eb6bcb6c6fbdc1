"""The HTTP surface, declared once: the stack, the local runner and the declarations all read it.

Each route names the function that serves it; a function is named by its handler string relative to
the ``functions/`` asset root.
"""

from typing import NamedTuple

READ_FUNCTION = "read"
WRITE_FUNCTION = "write"
MAINTENANCE_FUNCTION = "maintenance"

HANDLERS = {
    READ_FUNCTION: "read_api.handler.handler",
    WRITE_FUNCTION: "write_api.handler.handler",
    MAINTENANCE_FUNCTION: "maintenance.handler.handler",
}


class Route(NamedTuple):
    method: str
    path: str
    function: str


ROUTES: tuple[Route, ...] = (
    Route("GET", "/flags", READ_FUNCTION),
    Route("GET", "/flags/{name}", READ_FUNCTION),
    Route("PATCH", "/flags", WRITE_FUNCTION),
    Route("GET", "/flags/history", WRITE_FUNCTION),
    Route("POST", "/flags/revert", WRITE_FUNCTION),
)

FLAGS_COLLECTION = "/flags"

# A static child of /flags shadows a flag of the same name in GET /flags/{name}: such names are reserved.
RESERVED_FLAG_NAMES = frozenset(
    route.path.removeprefix(FLAGS_COLLECTION + "/")
    for route in ROUTES
    if route.path.startswith(FLAGS_COLLECTION + "/") and "{" not in route.path
) | frozenset({"openapi", "schema", "_scheduler"})
