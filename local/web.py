"""What the local runner and ``flagctl console`` share in front of their routes: who may talk to them, and the
console's and Swagger UI's static files.

- ``refuse_foreign(headers, port)``: ``Host`` must be exactly ``127.0.0.1:<port>`` or ``localhost:<port>`` (421
  otherwise: a page on another name that resolves to 127.0.0.1, DNS rebinding, never reaches a route), and an
  ``Origin``, when sent, ``http://127.0.0.1:<port>`` or ``http://localhost:<port>`` (403 otherwise: another page
  in the browser, on another port or site, cannot drive the API);
- ``static_file(path)``: ``/`` and ``/console/<file>`` from ``local/console/``, ``/vendor/swagger-ui/<file>`` from
  npm's ``swagger-ui-dist`` (its LICENSE included), ``/docs`` and its initializer. Only a file directly in its
  directory, of a known type, is served (no ``..``, no subdirectory, no hidden file); each answer says its type,
  ``X-Content-Type-Options: nosniff`` and a Content-Security-Policy allowing this origin only.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from http import HTTPStatus
from pathlib import Path

from local.gateway import HttpResponse
from local.paths import REPO_ROOT

LOOPBACK_NAMES = ("127.0.0.1", "localhost")
CONSOLE_DIR = REPO_ROOT / "local" / "console"
SWAGGER_UI_DIR = REPO_ROOT / "node_modules" / "swagger-ui-dist"
CONSOLE_PREFIX = "/console/"
SWAGGER_PREFIX = "/vendor/swagger-ui/"
DOCS_PATH = "/docs"
DOCS_INIT_PATH = "/docs/init.js"
# Everything from this origin only; images may also be data: URIs (Swagger UI's icons are). No inline script.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
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


def security_headers() -> list[tuple[str, str]]:
    return [("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", CONTENT_SECURITY_POLICY)]


def error(status: HTTPStatus, code: str, message: str) -> HttpResponse:
    body = json.dumps({"error": {"code": code, "message": message}}, separators=(",", ":")).encode("utf-8")
    headers = [("Content-Type", "application/json"), ("x-amzn-RequestId", str(uuid.uuid4())), *security_headers()]
    return HttpResponse(int(status), headers, body)


def _values(headers: Sequence[tuple[str, str]], name: str) -> list[str]:
    return [value for key, value in headers if key.lower() == name]


def refuse_foreign(headers: Sequence[tuple[str, str]], port: int) -> HttpResponse | None:
    """The refusal of a request this server must not answer (another Host, another Origin), or None."""
    hosts = _values(headers, "host")
    allowed_hosts = [f"{name}:{port}" for name in LOOPBACK_NAMES]
    if len(hosts) != 1 or hosts[0] not in allowed_hosts:
        shown = hosts[0] if len(hosts) == 1 else f"{len(hosts)} Host headers"
        return error(
            HTTPStatus.MISDIRECTED_REQUEST,
            "HOST_NOT_ALLOWED",
            f"Host must be {' or '.join(allowed_hosts)}, got {shown!r}: this server answers its loopback address only",
        )
    origins = _values(headers, "origin")
    allowed_origins = [f"http://{host}" for host in allowed_hosts]
    if origins and (len(origins) != 1 or origins[0] not in allowed_origins):
        return error(
            HTTPStatus.FORBIDDEN,
            "ORIGIN_NOT_ALLOWED",
            f"Origin must be {' or '.join(allowed_origins)} when sent, got {', '.join(origins)!r}",
        )
    return None


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
