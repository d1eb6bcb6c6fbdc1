"""What the local runner serves besides the API: the console's and Swagger UI's files, and to whom it answers.

Requests go through ``http.client`` so each test sets ``Host`` and ``Origin`` itself.
"""

from __future__ import annotations

import http.client
import json
import re
from urllib.parse import urlsplit

import pytest

from local.web import CONSOLE_DIR, CONTENT_SECURITY_POLICY, SWAGGER_UI_DIR
from tests.support.runner import Runner


def raw(
    runner: Runner, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> http.client.HTTPResponse:
    """One request with exactly these headers (``Host`` too: http.client adds none when it is given)."""
    port = urlsplit(runner.url).port
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    sent = {"Host": f"127.0.0.1:{port}", **(headers or {})}
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in sent.items():
        connection.putheader(name, value)
    connection.endheaders(body or None)
    response = connection.getresponse()
    response.body = response.read()  # type: ignore[attr-defined]
    connection.close()
    return response


def port_of(runner: Runner) -> int:
    port = urlsplit(runner.url).port
    assert port is not None
    return port


@pytest.mark.parametrize(
    ("path", "content_type", "source"),
    [
        ("/", "text/html; charset=utf-8", CONSOLE_DIR / "index.html"),
        ("/console/index.html", "text/html; charset=utf-8", CONSOLE_DIR / "index.html"),
        ("/vendor/swagger-ui/swagger-ui-bundle.js", "text/javascript; charset=utf-8", None),
        ("/vendor/swagger-ui/swagger-ui.css", "text/css; charset=utf-8", None),
        ("/vendor/swagger-ui/LICENSE", "text/plain; charset=utf-8", None),
    ],
)
def test_static_files_are_served_with_their_type_nosniff_and_a_self_only_policy(runner, path, content_type, source):
    response = raw(runner, "GET", path)
    assert response.status == 200
    assert response.getheader("Content-Type") == content_type
    assert response.getheader("X-Content-Type-Options") == "nosniff"
    assert response.getheader("Content-Security-Policy") == CONTENT_SECURITY_POLICY
    expected = source or SWAGGER_UI_DIR / path.rsplit("/", 1)[1]
    assert response.body == expected.read_bytes()  # type: ignore[attr-defined]


def test_the_policy_allows_this_origin_only_and_no_inline_script() -> None:
    directives = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["default-src"] == directives["script-src"] == directives["connect-src"] == "'self'"
    assert "unsafe" not in CONTENT_SECURITY_POLICY and "http" not in CONTENT_SECURITY_POLICY
    assert directives["frame-ancestors"] == "'none'"


@pytest.mark.parametrize(
    "path",
    [
        "/console/../api.py",
        "/console/%2e%2e/api.py",
        "/console/..%2fapi.py",
        "/console/../../pyproject.toml",
        "/console//etc/passwd",
        "/console/.hidden",
        "/console/",
        "/console/sub/index.html",
        "/vendor/swagger-ui/../swagger-ui-dist/package.json",
        "/vendor/swagger-ui/../../package.json",
        "/vendor/swagger-ui/%2e%2e%2f%2e%2e%2fpackage.json",
        "/vendor/swagger-ui/README.md",  # a type it does not serve
    ],
)
def test_only_files_of_those_directories_are_served(runner, path):
    response = raw(runner, "GET", path)
    assert response.status == 404
    assert json.loads(response.body)["error"]["code"] == "NOT_FOUND"  # type: ignore[attr-defined]


def test_docs_references_no_url_outside_this_server(runner):
    page = raw(runner, "GET", "/docs")
    init = raw(runner, "GET", "/docs/init.js")
    assert page.status == init.status == 200
    text = page.body.decode() + init.body.decode()  # type: ignore[attr-defined]
    references = re.findall(r"""(?:src|href|url)\s*[=:]\s*["']([^"']+)["']""", text)
    assert references, text
    assert all(ref.startswith("/") and not ref.startswith("//") for ref in references), references
    assert "http:" not in text and "https:" not in text
    for ref in references:
        assert raw(runner, "GET", ref).status == 200, ref


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",  # DNS rebinding: another name resolving to 127.0.0.1
        "127.0.0.1",  # no port
        "127.0.0.1:1",  # another port
        "localhost.evil.example:{port}",
        "[::1]:{port}",
        "",
    ],
)
def test_another_host_is_refused_421(runner, host):
    response = raw(runner, "GET", "/flags", {"Host": host.format(port=port_of(runner))})
    assert response.status == 421
    assert json.loads(response.body)["error"]["code"] == "HOST_NOT_ALLOWED"  # type: ignore[attr-defined]


def test_localhost_and_the_loopback_address_are_both_answered(runner):
    port = port_of(runner)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert raw(runner, "GET", "/flags", {"Host": host}).status == 200


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "http://127.0.0.1:1", "https://127.0.0.1:{port}", "null", "http://localhost"],
)
def test_another_origin_is_refused_403_and_nothing_is_written(runner, origin):
    before = raw(runner, "GET", "/flags")
    body = json.dumps({"flags": {"signup_enabled": False}, "reason": "cross-site"}).encode()
    response = raw(
        runner,
        "PATCH",
        "/flags",
        {
            "Origin": origin.format(port=port_of(runner)),
            "Content-Type": "application/json",
            "Content-Length": str(len(body)),
        },
        body,
    )
    assert response.status == 403
    assert json.loads(response.body)["error"]["code"] == "ORIGIN_NOT_ALLOWED"  # type: ignore[attr-defined]
    assert raw(runner, "GET", "/flags").getheader("ETag") == before.getheader("ETag")


def test_the_servers_own_origin_is_answered(runner):
    port = port_of(runner)
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        assert raw(runner, "GET", "/flags", {"Origin": origin}).status == 200
