"""The console's pages, which ``flagctl console`` and the local runner both serve: ``/`` and ``/console/<file>``
from this package's ``console_pages/`` (installed with flagctl).

Only a file directly in its directory, of a known type, is served (no ``..``, no subdirectory, no hidden file); each
answer says its type, ``X-Content-Type-Options: nosniff`` and a Content-Security-Policy allowing this origin only
(``flagctl.http_server.security_headers``). Who may talk to either server (its own Host and Origin only) and the
error contract's answers are the server's.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from pathlib import Path

from flagctl.http_server import HttpResponse, error, security_headers

__all__ = ["CONSOLE_DIR", "CONSOLE_PREFIX", "CONTENT_TYPES", "console_page", "serve_file"]

CONSOLE_DIR = Path(__file__).resolve().with_name("console_pages")
CONSOLE_PREFIX = "/console/"
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
PLAIN_TEXT_FILES = frozenset({"LICENSE", "NOTICE"})  # a licence and a notice, without a suffix
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def serve_file(directory: Path, name: str) -> HttpResponse:
    """``name`` from ``directory`` (directly in it, of a known type), or 404 in the error contract."""
    path = directory / name
    content_type = CONTENT_TYPES[".txt"] if name in PLAIN_TEXT_FILES else CONTENT_TYPES.get(path.suffix.lower())
    if not _FILE_NAME.match(name) or content_type is None or not path.is_file() or path.parent != directory:
        return error(HTTPStatus.NOT_FOUND, "NOT_FOUND", f"no file {name!r} here")
    return HttpResponse(200, [("Content-Type", content_type), *security_headers()], path.read_bytes())


def console_page(method: str, raw_path: str) -> HttpResponse | None:
    """A console page for ``GET /`` or ``GET /console/<file>`` (None: not a page's path)."""
    if method != "GET":
        return None
    if raw_path == "/":
        return serve_file(CONSOLE_DIR, "index.html")
    if raw_path.startswith(CONSOLE_PREFIX):
        return serve_file(CONSOLE_DIR, raw_path.removeprefix(CONSOLE_PREFIX))
    return None
