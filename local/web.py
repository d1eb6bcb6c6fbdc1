"""The local runner's static files: the console's pages (``flagctl.static``, as ``flagctl console`` serves them),
and Swagger UI over the runner's OpenAPI document: ``/docs``, its initializer, and ``/vendor/swagger-ui/<file>``
from npm's ``swagger-ui-dist`` (its LICENSE included), with the same rules for a file as the console's.

Swagger UI is the one part of ``make run`` that npm installs (``make run`` alone installs Python requirements
only): without it ``/docs`` is a page that says so, how to install it, and where the OpenAPI document is, never a
blank page.
"""

from __future__ import annotations

from flagctl.http_server import CONTENT_SECURITY_POLICY, HttpResponse, error, security_headers
from flagctl.static import CONSOLE_DIR, CONTENT_TYPES, console_page, serve_file
from local.paths import REPO_ROOT

__all__ = [
    "CONSOLE_DIR",
    "CONTENT_SECURITY_POLICY",
    "SWAGGER_UI_DIR",
    "error",
    "security_headers",
    "static_file",
]

SWAGGER_UI_DIR = REPO_ROOT / "node_modules" / "swagger-ui-dist"
SWAGGER_PREFIX = "/vendor/swagger-ui/"
DOCS_PATH = "/docs"
DOCS_INIT_PATH = "/docs/init.js"

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
DOCS_WITHOUT_NPM = b"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>singleton-flags API: Swagger UI is not installed</title>
</head>
<body>
  <main>
    <h1>Swagger UI is not installed</h1>
    <p>Swagger UI comes from npm (<code>swagger-ui-dist</code>), which <code>make run</code> does not install.
      Run <code>npm ci</code> (or <code>make install</code>) in the checkout, then reload this page.</p>
    <p>The API itself is all here: its OpenAPI document is at <a href="/openapi.json">/openapi.json</a>, and
      <code>docs/api.md</code> describes every route.</p>
  </main>
</body>
</html>
"""
DOCS_INIT = b'window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", tryItOutEnabled: true});\n'


def swagger_ui_installed() -> bool:
    return (SWAGGER_UI_DIR / "swagger-ui-bundle.js").is_file()


def static_file(method: str, raw_path: str) -> HttpResponse | None:
    """The answer for a static path (a file, or 404 for a name that is not one), or None: not a static path."""
    if method != "GET":
        return None
    page = console_page(method, raw_path)
    if page is not None:
        return page
    if raw_path == DOCS_PATH:
        docs = DOCS_PAGE if swagger_ui_installed() else DOCS_WITHOUT_NPM
        return HttpResponse(200, [("Content-Type", CONTENT_TYPES[".html"]), *security_headers()], docs)
    if raw_path == DOCS_INIT_PATH:
        return HttpResponse(200, [("Content-Type", CONTENT_TYPES[".js"]), *security_headers()], DOCS_INIT)
    if raw_path.startswith(SWAGGER_PREFIX):
        return serve_file(SWAGGER_UI_DIR, raw_path.removeprefix(SWAGGER_PREFIX))
    return None
