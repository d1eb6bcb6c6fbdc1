"""``flagctl console``: its pages, its refusals, and the calls it signs and forwards, over real sockets.

The upstream is a fake API on 127.0.0.1 that records what reaches it and checks the SigV4 signature against the
fake credentials the proxy was started with (environment variables, botocore's chain); a test runs the command
itself in front of the local runner. The last tests put a scripted upstream (``tests/support/scripted_server.py``)
behind the console: redirects, malformed answers, a server dripping its answer, and the seeded hostile answers.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from flagctl.console import TOKEN_HEADER, ConsoleProxy, send_upstream, signer_for
from flagctl.http_server import LocalServer
from local.web import CONSOLE_DIR
from tests.support.hostile_answers import ANSWER, REDIRECT, hostile_answers
from tests.support.runner import REPO_ROOT, Runner, flagctl_console as console_process
from tests.support.scripted_server import Script, ScriptedServer, scripted_server

ACCESS_KEY, SECRET_KEY, SESSION_TOKEN = "AKIAFAKECONSOLE", "fake-secret-for-the-console-tests", "fake-session"
REGION = "eu-west-1"
TOKEN = "the-token-of-this-start"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeApi:
    """An upstream on 127.0.0.1 answering every request 200 with an ETag, recording each one."""

    server: ThreadingHTTPServer
    seen: list[Seen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/prod"


def _serve(server: ThreadingHTTPServer) -> None:
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    holder: list[FakeApi] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            holder[0].seen.append(Seen(self.command, self.path, dict(self.headers.items()), body))
            answer = json.dumps({"flags": {"signup_enabled": True}, "version": 7}).encode()
            self.send_response(200)
            for name, value in (
                ("Content-Type", "application/json"),
                ("ETag", '"7"'),
                ("Set-Cookie", "tracking=1"),
                ("Content-Length", str(len(answer))),
            ):
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(answer)

        do_GET = do_PATCH = do_POST = _any  # noqa: N815 - BaseHTTPRequestHandler's names

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder.append(FakeApi(server))
    _serve(server)
    yield holder[0]
    server.shutdown()
    server.server_close()


def fake_aws_env(tmp_path: Any) -> dict[str, str]:
    """botocore's chain finds these fake credentials and region, and no profile or file."""
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_SESSION_TOKEN": SESSION_TOKEN,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }


@pytest.fixture
def fake_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name, value in fake_aws_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def console(fake_api: FakeApi, fake_credentials: None) -> Iterator[LocalServer]:
    server = LocalServer(0, ConsoleProxy(fake_api.url, TOKEN, signer=signer_for(fake_api.url)))
    _serve(server)
    yield server
    server.shutdown()
    server.server_close()


def send(
    port: int, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> tuple[int, dict[str, str], bytes]:
    """One request with exactly these headers (Host included, unless given)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    sent = {"Host": f"127.0.0.1:{port}", **({"Content-Length": str(len(body))} if body else {}), **(headers or {})}
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in sent.items():
        connection.putheader(name, value)
    connection.endheaders(body or None)
    response = connection.getresponse()
    answer = (response.status, {name.lower(): value for name, value in response.getheaders()}, response.read())
    connection.close()
    return answer


def signature_is_valid(seen: Seen, upstream_url: str) -> bool:
    """Recompute the SigV4 signature of what arrived with the fake credentials: it matches only when the
    request was signed with them, for this method, path, query, signed headers and body."""
    authorization = seen.headers["Authorization"]
    match = re.fullmatch(
        r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/execute-api/aws4_request, "
        r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})",
        authorization,
    )
    assert match, authorization
    assert (match["key"], match["region"]) == (ACCESS_KEY, REGION)
    signed = match["signed"].split(";")
    lowered = {name.lower(): value for name, value in seen.headers.items()}
    host = upstream_url.split("//", 1)[1].split("/", 1)[0]
    request = AWSRequest(
        method=seen.method,
        url=f"http://{host}{seen.path}",
        data=seen.body,
        headers={name: lowered[name] for name in signed},
    )
    request.context["timestamp"] = lowered["x-amz-date"]
    auth = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), "execute-api", REGION)
    canonical = auth.canonical_request(request)
    expected = auth.signature(auth.string_to_sign(request, canonical), request)
    return bool(expected == match["signature"])


def test_a_forwarded_call_reaches_the_api_signed_by_the_operator_and_without_the_token(console, fake_api):
    # Given a PATCH from the page, with the token, an If-Match, and what a browser or a page could add
    port = console.port
    body = json.dumps({"flags": {"signup_enabled": False}, "reason": "from the console"}).encode()
    status, headers, answer = send(
        port,
        "PATCH",
        "/flags?x=1",
        {
            TOKEN_HEADER: TOKEN,
            "Content-Type": "application/json",
            "If-Match": '"6"',
            "Origin": f"http://127.0.0.1:{port}",
            "Authorization": "Bearer someone-elses",
            "X-Amz-Security-Token": "someone-elses",
            "Cookie": "session=abc",
            "Connection": "keep-alive, X-Hop",
            "X-Hop": "hop-by-hop",
            "Proxy-Authorization": "Basic eA==",
            "X-Local-Actor": "arn:aws:iam::111122223333:user/someone-else",
        },
        body,
    )
    # Then the API's answer comes back: status, ETag, body; its cookie stays upstream
    assert status == 200
    assert headers["etag"] == '"7"'
    assert json.loads(answer)["version"] == 7
    assert "set-cookie" not in headers
    # And the API received one signed request: same method, path under the stage, query and body
    (seen,) = fake_api.seen
    assert (seen.method, seen.path, seen.body) == ("PATCH", "/prod/flags?x=1", body)
    assert signature_is_valid(seen, fake_api.url)
    assert seen.headers["X-Amz-Security-Token"] == SESSION_TOKEN
    assert seen.headers["If-Match"] == '"6"' and seen.headers["Content-Type"] == "application/json"
    # And none of the token, the incoming credentials, cookies or hop-by-hop headers
    received = {name.lower() for name in seen.headers}
    assert not received & {"x-console-token", "cookie", "x-hop", "proxy-authorization", "origin", "x-local-actor"}
    assert SECRET_KEY not in json.dumps(seen.headers)


def test_the_answer_never_carries_a_credential_to_the_browser(console, fake_api):
    status, headers, answer = send(console.port, "GET", "/flags", {TOKEN_HEADER: TOKEN})
    assert status == 200
    text = json.dumps(headers) + answer.decode()
    assert ACCESS_KEY not in text and SECRET_KEY not in text and SESSION_TOKEN not in text
    assert "authorization" not in headers


@pytest.mark.parametrize(
    "token_headers",
    [
        {},
        {TOKEN_HEADER: ""},
        {TOKEN_HEADER: "wrong"},
        {TOKEN_HEADER: TOKEN + "x"},
        {TOKEN_HEADER.lower(): TOKEN[:-1]},
    ],
)
def test_an_api_call_without_the_token_is_401_and_nothing_is_forwarded(console, fake_api, token_headers):
    status, _, answer = send(console.port, "GET", "/flags", token_headers)
    assert status == 401
    assert json.loads(answer)["error"]["code"] == "CONSOLE_TOKEN_REQUIRED"
    assert fake_api.seen == []


def test_the_token_twice_is_refused(console, fake_api):
    connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=10)
    connection.putrequest("GET", "/flags")
    connection.putheader(TOKEN_HEADER, TOKEN)
    connection.putheader(TOKEN_HEADER, TOKEN)
    connection.endheaders()
    assert connection.getresponse().status == 401
    connection.close()
    assert fake_api.seen == []


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/_scheduler/weekly-patching/start"),
        ("POST", "/_throttle"),
        ("GET", "/openapi.json"),
        ("GET", "/docs"),
        ("GET", "/vendor/swagger-ui/swagger-ui-bundle.js"),
        ("GET", "/flags/a/b"),
        ("PUT", "/flags"),
        ("GET", "/prod/flags"),
        ("GET", "/admin"),
    ],
)
def test_anything_but_an_api_route_is_404_and_nothing_is_forwarded(console, fake_api, method, path):
    status, _, answer = send(console.port, method, path, {TOKEN_HEADER: TOKEN}, b"{}" if method != "GET" else b"")
    assert status == 404
    assert json.loads(answer)["error"]["code"] == "NOT_FOUND"
    assert fake_api.seen == []


@pytest.mark.parametrize(
    "target",
    [
        b"/flags/caf\xc3\xa9",  # raw UTF-8, not percent-encoded
        b"/flags/a\x00b",
        b"/flags/a\x7f",
        b"/flags/schedules/\x01",
        b"/flags/guards?limit=\xff",
        b"/flags/history?cursor=a\x00",
    ],
)
def test_a_target_that_is_not_printable_ascii_is_400_and_nothing_is_forwarded(console, fake_api, target):
    # Given the console's token, and a request line with a byte a browser would have percent-encoded
    method = b"DELETE" if target.startswith(b"/flags/schedules/") else b"GET"
    request = (
        method
        + b" "
        + target
        + b" HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % console.port
        + TOKEN_HEADER.encode()
        + b": "
        + TOKEN.encode()
        + b"\r\nConnection: close\r\n\r\n"
    )
    # When it is sent as bytes (http.client would refuse to send it)
    with socket.create_connection(("127.0.0.1", console.port), timeout=10) as connection:
        connection.sendall(request)
        answer = http.client.HTTPResponse(connection)
        answer.begin()
        status, body = answer.status, answer.read()
    # Then a 400 in the error contract, and nothing reaches the API
    assert status == 400, body
    error = json.loads(body)["error"]
    assert error["code"] == "BAD_REQUEST" and "percent-encode" in error["message"]
    assert fake_api.seen == []


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "localhost"])
def test_another_host_is_refused_421_and_nothing_is_forwarded(console, fake_api, host):
    status, _, answer = send(
        console.port, "GET", "/flags", {"Host": host.format(port=console.port), TOKEN_HEADER: TOKEN}
    )
    assert status == 421
    assert json.loads(answer)["error"]["code"] == "HOST_NOT_ALLOWED"
    assert fake_api.seen == []


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:1", "null"])
def test_another_origin_is_refused_403_and_nothing_is_forwarded(console, fake_api, origin):
    body = b'{"flags": {"signup_enabled": false}, "reason": "x"}'
    headers = {"Origin": origin, TOKEN_HEADER: TOKEN, "Content-Type": "application/json"}
    status, _, answer = send(console.port, "PATCH", "/flags", headers, body)
    assert status == 403
    assert json.loads(answer)["error"]["code"] == "ORIGIN_NOT_ALLOWED"
    assert fake_api.seen == []


def test_the_pages_are_served_without_the_token_and_only_on_the_loopback_address(console, fake_api):
    status, headers, page = send(console.port, "GET", "/")
    assert status == 200 and page == (CONSOLE_DIR / "index.html").read_bytes()
    assert headers["x-content-type-options"] == "nosniff"
    assert send(console.port, "GET", "/console/index.html")[0] == 200
    assert send(console.port, "GET", "/console/../web.py")[0] == 404
    assert console.server_address[0] == "127.0.0.1"
    assert fake_api.seen == []


def test_flagctl_console_prints_its_url_with_a_fresh_token_and_forwards_to_the_local_runner(runner: Runner, tmp_path):
    # Given fake credentials in the environment (the local runner ignores the signature), a stack outputs file
    # naming the runner, and a "browser" that records the URL it is asked to open
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **fake_aws_env(tmp_path)}
    env.pop("AWS_PROFILE", None)
    outputs = tmp_path / "cdk-outputs.json"
    outputs.write_text(json.dumps({"SingletonFlags": {"ApiUrl": runner.url + "/"}}))
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    recorder.write_text(f"import sys; open({str(opened)!r}, 'a').write(sys.argv[1] + '\\n')\n")
    env["BROWSER"] = f"{sys.executable} {recorder} %s"
    starts = (
        ["--url", runner.url, "console", "--port", "0"],
        ["--stack-output-file", str(outputs), "console", "--open"],
    )
    links = []
    for args in starts:
        # When flagctl console starts in front of the runner
        with console_process(args, env) as (process, line):
            # Then it prints its loopback URL with the token in the fragment, never in the query
            match = re.fullmatch(
                r"console: (?P<link>http://127\.0\.0\.1:(?P<port>\d+)/#token=(?P<token>[A-Za-z0-9_-]{43}))\n", line
            )
            assert match, line
            assert process.stdout is not None
            assert runner.url in process.stdout.readline()  # where its calls go
            port, token = int(match["port"]), match["token"]
            links.append(match["link"])
            # And an API call with the token is the runner's own answer; without it, 401
            status, headers, answer = send(port, "GET", "/flags", {TOKEN_HEADER: token})
            assert status == 200, answer
            direct = runner.get("/flags")
            assert json.loads(answer)["flags"] == direct.body["flags"]
            assert headers["etag"] == direct.header("ETag")
            assert send(port, "GET", "/flags")[0] == 401
        assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    # And each start has its own token; --open opened exactly the printed URL
    assert links[0] != links[1]
    assert opened.read_text().splitlines() == [links[1]]


# -- an upstream that cannot be trusted ------------------------------------------------------------------------

UPSTREAM_DEADLINE_SECONDS = 1.0
SWEEP_SEED, SWEEP_COUNT = 20261202, 120


@pytest.fixture
def elsewhere() -> Iterator[ScriptedServer]:
    """Where the upstream's redirects point: it would answer, and counts every connection. It must see none."""
    with scripted_server(Script((b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",))) as server:
        yield server


@contextmanager
def console_before(answer: Script | Callable[[int], Script]) -> Iterator[tuple[LocalServer, ScriptedServer]]:
    """The console in front of a scripted upstream, with a short upstream deadline."""
    with scripted_server(answer) as api:
        upstream = functools.partial(send_upstream, timeout=UPSTREAM_DEADLINE_SECONDS)
        proxy = ConsoleProxy(api.url() + "/prod", TOKEN, signer=signer_for(api.url()), upstream=upstream)
        server = LocalServer(0, proxy)
        _serve(server)
        try:
            yield server, api
        finally:
            server.shutdown()
            server.server_close()


def assert_error_contract(status: int, headers: dict[str, str], body: bytes, expected: tuple[int, str]) -> str:
    assert (status, headers["content-type"]) == (expected[0], "application/json"), body
    error = json.loads(body)["error"]
    assert error["code"] == expected[1]
    assert body.decode("ascii").isprintable()  # JSON escapes for anything else
    assert "location" not in headers
    return str(error["message"])


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_from_the_api_is_neither_followed_nor_passed_on(fake_credentials, elsewhere, status):
    # Given an upstream that redirects the signed call to another host
    location = elsewhere.url() + "/prod/flags"
    answer = f"HTTP/1.1 {status} Moved\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode()
    with console_before(Script((answer,))) as (console, api):
        # When the page calls the API through the console
        status_seen, headers, body = send(console.port, "GET", "/flags", {TOKEN_HEADER: TOKEN})
    # Then a 502 in the error contract naming where it pointed, no Location, and the other host never called
    message = assert_error_contract(status_seen, headers, body, (502, "UPSTREAM_REDIRECT"))
    assert f"the API answered {status} with a redirect to {location}" in message
    assert elsewhere.connections == 0
    assert api.connections == 1 and "Authorization: AWS4-HMAC-SHA256" in api.received[0].decode("latin-1")


@pytest.mark.parametrize(
    "answer",
    [
        b"\x1b[2J\x1b]0;owned\x07 garbage\r\n\r\n",
        b'{"flags": {}}',  # HTTP/0.9: a body without a status line
        b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"flags"',
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 600 Odd\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\n" + b"X-Many: v\r\n" * 200 + b"Content-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nX-Huge: " + b"h" * 100_000 + b"\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{}",
        b"",
        b'HTTP/1.1 200 OK\r\nETag: "7\x1b[2J"\r\nContent-Length: 2\r\n\r\n{}',
    ],
    ids=[
        "garbage-status-line",
        "http-0.9",
        "truncated",
        "bad-chunk-size",
        "status-600",
        "http-2.0",
        "too-many-headers",
        "huge-head",
        "huge-body",
        "closed-at-once",
        "control-character-in-a-header-the-page-reads",
    ],
)
def test_a_malformed_answer_from_the_api_is_a_502_in_the_error_contract(fake_credentials, answer):
    with console_before(Script((answer,))) as (console, _):
        status, headers, body = send(console.port, "GET", "/flags", {TOKEN_HEADER: TOKEN})
    message = assert_error_contract(status, headers, body, (502, "UPSTREAM_BAD_RESPONSE"))
    assert message.startswith("bad answer from http://127.0.0.1:")


def test_an_api_dripping_its_answer_is_a_504_at_the_upstream_deadline(fake_credentials):
    # Given an upstream sending one byte of its head every 0.2 s
    with console_before(Script((b"HTTP/1.1 200 OK\r\n",), drip=b"X-Slow: yes\r\n")) as (console, _):
        started = time.monotonic()
        status, headers, body = send(console.port, "GET", "/flags", {TOKEN_HEADER: TOKEN})
        elapsed = time.monotonic() - started
    # Then the page gets a 504 at the deadline, not a connection held for ever
    message = assert_error_contract(status, headers, body, (504, "UPSTREAM_TIMEOUT"))
    assert "within 1 s" in message
    assert UPSTREAM_DEADLINE_SECONDS <= elapsed < UPSTREAM_DEADLINE_SECONDS + 1.0


def test_whatever_the_api_answers_the_page_gets_an_answer_and_no_other_host_is_called(fake_credentials, elsewhere):
    # Given an upstream giving the seeded hostile answers (tests/support/hostile_answers.py), one per call
    cases = hostile_answers(SWEEP_SEED, SWEEP_COUNT, elsewhere.url())
    with console_before(lambda index: Script(cases[index].chunks)) as (console, api):
        for case in cases:
            # When the page calls the API through the console
            status, headers, body = send(console.port, "GET", "/flags", {TOKEN_HEADER: TOKEN})
            # Then a well-formed answer passes as it came, JSON nested however deep included (the page parses it)
            if case.kind == ANSWER or case.id.split("-")[1] == "deep":
                assert (status, "location" in headers) == (case.status, False), case.id
            # And an unusable answer or a redirect is the error contract, 502
            else:
                code = "UPSTREAM_REDIRECT" if case.kind == REDIRECT else "UPSTREAM_BAD_RESPONSE"
                assert_error_contract(status, headers, body, (502, code))
        assert api.connections == len(cases)
    assert elsewhere.connections == 0


@pytest.mark.parametrize(
    ("method", "target"),
    [("GET", "flags"), ("GET", "http://127.0.0.1:{port}/flags"), ("OPTIONS", "*"), ("CONNECT", "127.0.0.1:{port}")],
)
def test_a_target_that_is_not_a_path_is_400_nothing_is_forwarded_and_the_connection_goes_on(
    console, fake_api, method, target, capfd
):
    # Given the console's token and a request whose target is not a path
    connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=10)
    connection.putrequest(method, target.format(port=console.port), skip_accept_encoding=True)
    connection.putheader(TOKEN_HEADER, TOKEN)
    connection.endheaders()
    # When the console answers
    refused = connection.getresponse()
    error = json.loads(refused.read())["error"]
    kept = connection.sock
    # Then a 400 in the error contract; nothing reaches the API; the same connection forwards the next call
    assert refused.status == 400
    assert error["code"] == "BAD_REQUEST" and "origin-form" in error["message"]
    assert kept is not None
    connection.request("GET", "/flags", headers={TOKEN_HEADER: TOKEN})
    assert connection.sock is kept
    answered = connection.getresponse()
    answered.read()
    connection.close()
    assert answered.status == 200
    assert [seen.path for seen in fake_api.seen] == ["/prod/flags"]
    assert "Traceback" not in capfd.readouterr().err


def test_a_folded_field_is_forwarded_unfolded(console, fake_api):
    # Given an If-Match folded over two lines (obs-fold, RFC 9112 5.2)
    body = b'{"flags": {"signup_enabled": false}, "reason": "folded"}'
    request = (
        b"PATCH /flags HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % console.port
        + TOKEN_HEADER.encode()
        + b": "
        + TOKEN.encode()
        + b'\r\nContent-Type: application/json\r\nIf-Match: "6",\r\n  "7"\r\nContent-Length: %d\r\n' % len(body)
        + b"Connection: close\r\n\r\n"
        + body
    )
    # When it is sent through the console
    with socket.create_connection(("127.0.0.1", console.port), timeout=10) as connection:
        connection.sendall(request)
        answer = http.client.HTTPResponse(connection)
        answer.begin()
        answer.read()
    # Then the API receives one line: each fold replaced by a space
    assert answer.status == 200
    (seen,) = fake_api.seen
    assert seen.headers["If-Match"] == '"6", "7"'
