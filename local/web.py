"""The console's and Swagger UI's static files, which the local runner and ``flagctl console`` both serve.

``static_file(path)``: ``/`` and ``/console/<file>`` from ``local/console/``, ``/vendor/swagger-ui/<file>`` from
npm's ``swagger-ui-dist`` (its LICENSE included), ``/docs`` and its initializer. Only a file directly in its
directory, of a known type, is served (no ``..``, no subdirectory, no hidden file); each answer says its type,
``X-Content-Type-Options: nosniff`` and a Content-Security-Policy allowing this origin only. Who may talk to
either server (its own Host and Origin only) and the error contract's answers are the server's
(``flagctl.http_server``).
"""

from __future__ import annotations

import re
from http import HTTPStatus
from pathlib import Path

from flagctl.http_server import CONTENT_SECURITY_POLICY, HttpResponse, error, security_headers
from local.paths import REPO_ROOT

__all__ = ["CONTENT_SECURITY_POLICY", "error", "security_headers", "static_file"]

CONSOLE_DIR = REPO_ROOT / "local" / "console"
SWAGGER_UI_DIR = REPO_ROOT / "node_modules" / "swagger-ui-dist"
CONSOLE_PREFIX = "/console/"
SWAGGER_PREFIX = "/vendor/swagger-ui/"
DOCS_PATH = "/docs"
DOCS_INIT_PATH = "/docs/init.js"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}
PLAIN_TEXT_FILES = frozenset({"LICENSE", "NOTICE"})  # swagger-ui-dist's licence and notice, without a suffix
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

DOCS_PAGE = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>singleton-flags API</title>
  <link rel="stylesheet" href="{SWAGGER_PREFIX}swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{SWAGGER_PREFIX}swagger-ui-bundle.js"></script>
  <script src="{DOCS_INIT_PATH}"></script>
</body>
</html>
""".encode()
DOCS_INIT = b'window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", tryItOutEnabled: true});\n'


def _file(directory: Path, name: str) -> HttpResponse:
    path = directory / name
    content_type = CONTENT_TYPES[".txt"] if name in PLAIN_TEXT_FILES else CONTENT_TYPES.get(path.suffix.lower())
    if not _FILE_NAME.match(name) or content_type is None or not path.is_file() or path.parent != directory:
        return error(HTTPStatus.NOT_FOUND, "NOT_FOUND", f"no file {name!r} here")
    return HttpResponse(200, [("Content-Type", content_type), *security_headers()], path.read_bytes())


def static_file(method: str, raw_path: str, *, docs: bool = True) -> HttpResponse | None:
    """The answer for a static path (a file, or 404 for a name that is not one), or None: not a static path.
    ``docs``: Swagger UI too (the local runner, which serves the OpenAPI document it reads)."""
    if method != "GET":
        return None
    if raw_path == "/":
        return _file(CONSOLE_DIR, "index.html")
    if raw_path.startswith(CONSOLE_PREFIX):
        return _file(CONSOLE_DIR, raw_path.removeprefix(CONSOLE_PREFIX))
    if not docs:
        return None
    if raw_path == DOCS_PATH:
        return HttpResponse(200, [("Content-Type", CONTENT_TYPES[".html"]), *security_headers()], DOCS_PAGE)
    if raw_path == DOCS_INIT_PATH:
        return HttpResponse(200, [("Content-Type", CONTENT_TYPES[".js"]), *security_headers()], DOCS_INIT)
    if raw_path.startswith(SWAGGER_PREFIX):
        return _file(SWAGGER_UI_DIR, raw_path.removeprefix(SWAGGER_PREFIX))
    return None
