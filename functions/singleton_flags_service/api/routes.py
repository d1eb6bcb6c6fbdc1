"""The HTTP surface, declared once: the stack, the local runner and the declarations all read it.

Each route names the function that serves it (``singleton_flags_service.contract``'s names).
"""

import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from singleton_flags.declarations import RESERVED_FLAG_NAMES
from singleton_flags_service.reader_contract import READ_FUNCTION, WRITE_FUNCTION


class Route(NamedTuple):
    method: str
    path: str
    function: str
    summary: str = ""
    errors: tuple[int, ...] = (400, 500, 503)  # what the function answers besides success (and a read's 304)
    success: int = 200  # 201 where a request creates something


# The OpenFeature Remote Evaluation Protocol's paths (docs/ofrep.md): errors there are OFREP's shape.
OFREP_FLAGS = "/ofrep/v1/evaluate/flags"
OFREP_FLAG = OFREP_FLAGS + "/{key}"

SCHEDULES = "/flags/schedules"
SCHEDULE = SCHEDULES + "/{id}"

CHANGE_REQUESTS = "/flags/change-requests"
CHANGE_REQUEST = CHANGE_REQUESTS + "/{id}"

MIGRATION = "/flags/migration"

_WRITE_ERRORS = (400, 409, 412, 413, 415, 422, 500, 503)  # a write: refused, conflicted, stale, too big, ...

# Each route once, by name: the handlers register their views under these (``Views``), never retyping a path.
GET_FLAGS = Route("GET", "/flags", READ_FUNCTION, "Every flag, with the version and where the values came from", ())
GET_FLAG = Route("GET", "/flags/{name}", READ_FUNCTION, "One flag", (404,))
OFREP_EVALUATE_FLAG = Route(
    "POST",
    OFREP_FLAG,
    READ_FUNCTION,
    "OFREP: evaluate one flag (OpenFeature Remote Evaluation Protocol; the context is ignored)",
    (400, 404),
)
OFREP_EVALUATE_FLAGS = Route(
    "POST", OFREP_FLAGS, READ_FUNCTION, "OFREP: evaluate every flag (ETag / If-None-Match)", (400,)
)
PATCH_FLAGS = Route(
    "PATCH",
    "/flags",
    WRITE_FUNCTION,
    "Change one or more flags (audited; If-Match makes it conditional)",
    _WRITE_ERRORS,
)
GET_HISTORY = Route("GET", "/flags/history", WRITE_FUNCTION, "Audit records, newest first, paginated", (400, 500, 503))
GET_DECLARATIONS = Route(
    "GET",
    "/flags/declarations",
    WRITE_FUNCTION,
    "The flag declarations: type, fallback, initial value, description and constraints, in declaration order",
    (500,),
)
GET_WINDOWS = Route(
    "GET",
    "/flags/windows",
    WRITE_FUNCTION,
    "The maintenance windows as deployed, with each one's next start and end",
    (500,),
)
REVERT_FLAGS = Route(
    "POST",
    "/flags/revert",
    WRITE_FUNCTION,
    "Restore the values of an earlier version, as a new version",
    (404, *_WRITE_ERRORS),
)
RESTORE_FLAGS = Route(
    "POST",
    "/flags/restore",
    WRITE_FUNCTION,
    "Bring a missing flags item back from its audit trail",
    (400, 413, 415, 422, 500, 503),
)
CREATE_SCHEDULE = Route(
    "POST",
    SCHEDULES,
    WRITE_FUNCTION,
    "Schedule a change of the flags at a set time (applied once, as a version of kind scheduled)",
    (400, 409, 413, 415, 422, 500, 503),
    201,
)
LIST_SCHEDULES = Route("GET", SCHEDULES, WRITE_FUNCTION, "Scheduled changes, newest first, paginated", (400, 500, 503))
CANCEL_SCHEDULE = Route("DELETE", SCHEDULE, WRITE_FUNCTION, "Cancel a pending scheduled change", (404, 409, 500, 503))
GET_GUARDS = Route(
    "GET",
    "/flags/guards",
    WRITE_FUNCTION,
    "Guards of guarded changes, newest first, paginated: state, alarms, bake end, outcome",
    (400, 500, 503),
)

CREATE_CHANGE_REQUEST = Route(
    "POST",
    CHANGE_REQUESTS,
    WRITE_FUNCTION,
    "Ask for a change of protected flags (or break glass: apply it at once, alone)",
    (400, 403, 404, 409, 412, 413, 415, 422, 500, 503),
    201,
)
LIST_CHANGE_REQUESTS = Route(
    "GET", CHANGE_REQUESTS, WRITE_FUNCTION, "Change requests, newest first, paginated", (400, 500, 503)
)
GET_CHANGE_REQUEST = Route("GET", CHANGE_REQUEST, WRITE_FUNCTION, "One change request", (404, 409, 500, 503))
APPROVE_CHANGE_REQUEST = Route(
    "POST",
    CHANGE_REQUEST + "/approve",
    WRITE_FUNCTION,
    "Approve a change request; the last required approval applies it",
    (400, 403, 404, 409, 412, 413, 415, 422, 500, 503),
)
REJECT_CHANGE_REQUEST = Route(
    "POST",
    CHANGE_REQUEST + "/reject",
    WRITE_FUNCTION,
    "Reject a pending change request (an approver)",
    (400, 403, 404, 409, 413, 415, 500, 503),
)
WITHDRAW_CHANGE_REQUEST = Route(
    "POST",
    CHANGE_REQUEST + "/withdraw",
    WRITE_FUNCTION,
    "Withdraw a pending change request (its author)",
    (400, 403, 404, 409, 413, 415, 500, 503),
)
GET_MIGRATION = Route(
    "GET",
    MIGRATION,
    WRITE_FUNCTION,
    "The migration of the flags item to a new shape (FLAGS#V1 -> FLAGS#V2) this service's item takes part in",
    (404, 500, 503),
)
MIGRATE_FLAGS = Route(
    "POST",
    MIGRATION,
    WRITE_FUNCTION,
    "Migrate the flags item to a new shape: the later item at version L+1, the earlier one mirrored until finalised",
    (400, 409, 413, 415, 500, 503),
    201,
)
FINALISE_MIGRATION = Route(
    "POST",
    MIGRATION + "/finalise",
    WRITE_FUNCTION,
    "Finalise the migration: the earlier item superseded (its readers serve their fallbacks), the mirror ended",
    (400, 409, 413, 415, 500, 503),
)
ROLL_BACK_MIGRATION = Route(
    "POST",
    MIGRATION + "/rollback",
    WRITE_FUNCTION,
    "Roll back the migration before it is finalised: the earlier item read again, the later one superseded",
    (400, 409, 413, 415, 500, 503),
)

ROUTES: tuple[Route, ...] = (
    GET_FLAGS,
    GET_FLAG,
    OFREP_EVALUATE_FLAG,
    OFREP_EVALUATE_FLAGS,
    PATCH_FLAGS,
    GET_HISTORY,
    GET_DECLARATIONS,
    GET_WINDOWS,
    REVERT_FLAGS,
    RESTORE_FLAGS,
    CREATE_SCHEDULE,
    LIST_SCHEDULES,
    CANCEL_SCHEDULE,
    GET_GUARDS,
    CREATE_CHANGE_REQUEST,
    LIST_CHANGE_REQUESTS,
    GET_CHANGE_REQUEST,
    APPROVE_CHANGE_REQUEST,
    REJECT_CHANGE_REQUEST,
    WITHDRAW_CHANGE_REQUEST,
    GET_MIGRATION,
    MIGRATE_FLAGS,
    FINALISE_MIGRATION,
    ROLL_BACK_MIGRATION,
)


class RouteMatch(NamedTuple):
    route: Route
    path_parameters: dict[str, str]


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/")


def _bind(template: str, raw_path: str) -> dict[str, str] | None:
    """Path parameters of ``raw_path`` under ``template``, or None. Values stay percent-encoded, as a REST API
    delivers ``pathParameters`` (docs/decisions.md): ``/flags/%2F`` names the flag ``%2F``, not the collection."""
    wanted, actual = _segments(template), _segments(raw_path)
    if len(wanted) != len(actual):
        return None
    parameters: dict[str, str] = {}
    for pattern, segment in zip(wanted, actual, strict=True):
        if pattern.startswith("{") and pattern.endswith("}"):
            if not segment:
                return None
            parameters[pattern[1:-1]] = segment
        elif pattern != segment:
            return None
    return parameters


def _specificity(template: str) -> tuple[int, ...]:
    """API Gateway prefers a static segment to a parameter at the first place two resources differ."""
    return tuple(0 if part.startswith("{") else 1 for part in _segments(template))


def resource_routes(routes: Iterable[Route], raw_path: str) -> list[RouteMatch]:
    """The routes of the one resource API Gateway picks for ``raw_path`` (the most specific that matches);
    empty for a path no resource matches. ``/flags/revert`` is the static resource, not a flag name."""
    bound = [RouteMatch(route, params) for route in routes if (params := _bind(route.path, raw_path)) is not None]
    if not bound:
        return []
    resource = max((match.route.path for match in bound), key=_specificity)
    return [match for match in bound if match.route.path == resource]


def match_route(routes: Iterable[Route], method: str, raw_path: str) -> RouteMatch | list[str]:
    """The route serving ``method raw_path``, or the sorted methods the path allows (empty: unknown path)."""
    on_resource = resource_routes(routes, raw_path)
    for match in on_resource:
        if match.route.method == method:
            return match
    return sorted({match.route.method for match in on_resource})


_PARAMETER = re.compile(r"\{(\w+)\}")
View = TypeVar("View", bound=Callable[..., Any])


def powertools_rule(template: str) -> str:
    """A route's template as Powertools' resolver takes it: ``/flags/{name}`` -> ``/flags/<name>``."""
    return _PARAMETER.sub(r"<\1>", template)


class Views:
    """One function's views by route: each registered with a Powertools resolver or router under its route's
    method and path as the table states them, so a handler never writes a path.

    ``resolver`` is an ``APIGatewayRestResolver`` or a ``Router`` (typed loosely: this module imports no
    Powertools, as the CDK app and flagctl read the table too). A view for another function's route is refused at
    import.
    """

    def __init__(self, resolver: Any, function: str) -> None:
        self._resolver = resolver
        self._function = function
        self._views: dict[Route, Callable[..., Any]] = {}

    def __call__(self, route: Route, *, answer: Any = None, described: str = "") -> Callable[[View], View]:
        """Register the decorated view for ``route``; ``answer`` (a model) and ``described`` document its
        success answer (``route.success``) in the function's own schema."""
        if route.function != self._function:
            raise ValueError(f"{route.method} {route.path} is the {route.function} function's route")
        options: dict[str, Any] = {}
        if answer is not None:
            content = {"application/json": {"model": answer}}
            options["responses"] = {route.success: {"description": described, "content": content}}

        def register(view: View) -> View:
            self._resolver.route(powertools_rule(route.path), route.method, **options)(view)
            self._views[route] = view
            return view

        return register

    def view(self, match: RouteMatch) -> Callable[[], Any] | None:
        """The view of a matched route, bound to its path parameters (None: no view of this function serves it).

        For a path the route table matches and Powertools' pattern does not (it refuses some characters a path
        segment may hold, a raw ``"`` among them): the route's own view answers it, in that route's shape."""
        found = self._views.get(match.route)
        if found is None:
            return None
        return lambda: found(**match.path_parameters)


FLAGS_COLLECTION = "/flags"

# A static child of /flags shadows a flag of the same name in GET /flags/{name}: every such child (the first segment
# below /flags of a route, when it is not a parameter) must be a name the declarations refuse
# (singleton_flags.declarations.RESERVED_FLAG_NAMES, the rule's one statement).
STATIC_FLAG_CHILDREN = frozenset(
    child
    for route in ROUTES
    if route.path.startswith(FLAGS_COLLECTION + "/")
    and not (child := _segments(route.path.removeprefix(FLAGS_COLLECTION))[0]).startswith("{")
)
if not STATIC_FLAG_CHILDREN <= RESERVED_FLAG_NAMES:  # a new static route whose name a flag could still take
    raise RuntimeError(f"reserve {sorted(STATIC_FLAG_CHILDREN - RESERVED_FLAG_NAMES)} in the declarations' rules")
