"""flagctl against a hostile or broken API, over real sockets on 127.0.0.1.

The API is a scripted server (``tests/support/scripted_server.py``) answering raw bytes; a second one stands
where redirects point and counts whether anything ever reached it. flagctl signs for the scripted API as for a
deployed one (the loopback exemption is lifted; the test environment's fake credentials sign). Every command runs
through ``flagctl.cli.main`` as ``python -m flagctl`` runs it (a few as real processes). For every answer: no
credential reaches any host but the one signed for, nothing printed carries a raw control or format character,
no traceback, and the documented exit status (5 for a redirect or an answer that cannot be used), within the
request's deadline.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from flagctl import client as flagctl_client
from flagctl.cli import BAD_INPUT, CONFLICT, FALLBACKS, OK, SERVER, exit_code, main, with_reasons
from flagctl.errors import FlagctlError
from flagctl.http_client import LIMITS, Limits, exchange
from flagctl.text import safe
from tests.support.hostile_answers import ANSWER, BROKEN, REDIRECT, HostileAnswer, deep_json, hostile_answers
from tests.support.scripted_server import Script, ScriptedServer, request_headers, scripted_server, tls_files

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED = 20261201
COUNT = 300
DEADLINE_SECONDS = 3.0  # no generated answer makes a client wait: each one ends with the connection closed
DRIP_DEADLINE_SECONDS = 1.0
SLACK_SECONDS = 1.0
FLAGS = {"flags": {"signup_enabled": True}, "version": 7, "reason": "CACHED", "fetched_at": None}
UNSAFE_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    seconds: float


def sized(status: int, body: bytes, *headers: bytes, reason: bytes = b"X") -> bytes:
    head = b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\n" % (status, reason, len(body))
    return head + b"".join(header + b"\r\n" for header in headers) + b"\r\n" + body


OK_ANSWER = sized(200, json.dumps(FLAGS).encode(), b"Content-Type: application/json")


def raw_unsafe(text: str) -> list[str]:
    """The characters a terminal would obey: C0 but flagctl's own newlines, DEL, C1, bidirectional and other format
    characters, separators, lone surrogates."""
    return sorted(
        {f"U+{ord(char):04X}" for char in text if char != "\n" and unicodedata.category(char) in UNSAFE_CATEGORIES}
    )


def run_flagctl(api: ScriptedServer, *argv: str, deadline: float = DEADLINE_SECONDS, scheme: str = "http") -> Run:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    code = main(["--url", api.url(scheme), "--timeout", f"{deadline:g}", *argv], out=out, err=err)
    return Run(code, out.getvalue(), err.getvalue(), time.monotonic() - started)


def assert_clean(run: Run) -> None:
    assert raw_unsafe(run.out) == [], run.out
    assert raw_unsafe(run.err) == [], run.err
    assert "Traceback" not in run.err


@pytest.fixture
def signed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """flagctl signs for the scripted API as for a deployed one: the test environment's fake credentials and
    AWS_REGION, no profile, no instance metadata."""
    monkeypatch.setattr(flagctl_client, "is_loopback", lambda _url: False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[ScriptedServer]:
    """Where redirects point: it would answer, and counts every connection. It must never see one."""
    with scripted_server(Script((OK_ANSWER,))) as server:
        yield server
    assert server.connections == 0


def assert_signed_for_it_alone(api: ScriptedServer, elsewhere: ScriptedServer) -> None:
    assert elsewhere.connections == 0
    assert api.connections == 1  # one request, never sent again
    (request,) = api.received
    headers = request_headers(request)
    assert headers["host"] == f"127.0.0.1:{api.port}"
    assert headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert headers["x-amz-security-token"] == "testing"


# -- the seeded sweep --------------------------------------------------------------------------------------------

CASE_IDS = [case.id for case in hostile_answers(SEED, COUNT, "http://127.0.0.1:9")]


@pytest.fixture(scope="module")
def cases(elsewhere: ScriptedServer) -> list[HostileAnswer]:
    return hostile_answers(SEED, COUNT, elsewhere.url())


@pytest.mark.parametrize("index", range(COUNT), ids=CASE_IDS)
def test_whatever_the_api_answers_flagctl_signs_for_it_alone_prints_nothing_raw_and_exits_as_documented(
    index: int, cases: list[HostileAnswer], elsewhere: ScriptedServer, signed: None
) -> None:
    # Given the API answering one generated answer, to a read or a write, for a person or a script
    case = cases[index]
    as_json = index % 2 == 1
    command = ["get"] if index % 3 else ["set", "signup_enabled=false", "--reason", "hostile sweep"]
    # When
    with scripted_server(Script(case.chunks)) as api:
        run = run_flagctl(api, *(["--json"] if as_json else []), *command)
    # Then the signed request went to the API alone, nothing raw was printed, no traceback
    assert_signed_for_it_alone(api, elsewhere)
    assert_clean(run)
    assert run.seconds < DEADLINE_SECONDS
    # And the exit status says what the answer was
    error = json.loads(run.err) if as_json and run.err else None
    if case.kind == BROKEN:
        assert (run.code, run.out) == (SERVER, "")
        if as_json:
            assert error["error"]["code"] == "BAD_RESPONSE"
        else:
            assert run.err.startswith(f"flagctl: bad answer from http://127.0.0.1:{api.port}")
    elif case.kind == REDIRECT:
        assert (run.code, run.out) == (SERVER, "")
        if as_json:
            assert error["error"]["code"] == "REDIRECT"
            assert (error["error"]["status"], error["error"]["location"]) == (case.status, case.location)
        else:
            assert "never follows" in run.err and (case.location is None or safe(case.location) in run.err)
    else:
        assert case.kind == ANSWER and case.status is not None
        check_answer(case, run, as_json, command[0])


def is_fallbacks(body: object) -> bool:
    return isinstance(body, dict) and body.get("reason") == "DEFAULT"


def check_answer(case: HostileAnswer, run: Run, as_json: bool, command: str) -> None:
    assert case.status is not None
    if 200 <= case.status < 300 and not case.json_body:  # empty, or not JSON: the API always answers JSON
        assert (run.code, run.out) == (SERVER, "") and "bad answer" in run.err
    elif 200 <= case.status < 300 and as_json:  # the API's JSON, as valid JSON decoding to the same data
        # (`get` adds each flag's reason; an answer served as the fallbacks exits FALLBACKS)
        expected = with_reasons(case.body) if command == "get" else case.body
        assert run.code in (OK, FALLBACKS) and json.loads(run.out) == expected
        assert (run.code == FALLBACKS) == (command == "get" and is_fallbacks(case.body))
    elif 200 <= case.status < 300:  # a table, or one line saying the answer is not one flagctl knows
        assert run.code in (OK, SERVER)
    else:
        assert (run.code, run.out) == (exit_code(case.status), "")
        if not as_json:
            assert run.err.startswith(f"flagctl: HTTP {case.status}")
        elif case.json_body:
            assert json.loads(run.err) == case.body
        else:
            assert json.loads(run.err) is None or json.loads(run.err)["error"]["code"] == "NOT_JSON"


def test_the_sweep_covers_every_family_and_outcome() -> None:
    families = {case_id.split("-", 1)[1].split("-")[0] for case_id in CASE_IDS}
    assert families >= {
        "status",
        "http",
        "many",
        "huge",
        "truncated",
        "chunking",
        "deep",
        "interim",
        "redirect",
        "answer",
    }
    assert {case.kind for case in hostile_answers(SEED, COUNT, "http://127.0.0.1:9")} == {BROKEN, REDIRECT, ANSWER}


# -- redirects -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize(
    "command", [["get"], ["set", "signup_enabled=false", "--reason", "r"], ["revert", "3", "--reason", "r"]]
)
def test_a_redirect_is_never_followed_its_location_is_shown_and_flagctl_exits_5(
    status: int, command: list[str], elsewhere: ScriptedServer, signed: None
) -> None:
    # Given an API that redirects the signed request to another host
    location = elsewhere.url() + "/prod/flags"
    answer = sized(status, b"", b"Location: " + location.encode())
    # When
    with scripted_server(Script((answer,))) as api:
        run = run_flagctl(api, *command)
    # Then the other host never hears of it, and the operator sees where it pointed
    assert_signed_for_it_alone(api, elsewhere)
    assert (run.code, run.out) == (SERVER, "")
    assert run.err == (
        f"flagctl: HTTP {status}: the API answered with a redirect to {location}; flagctl never follows one (it "
        "would send your request and its signature elsewhere): check --url\n"
    )


def test_a_redirects_location_is_shown_escaped_and_in_json_as_the_same_text(
    elsewhere: ScriptedServer, signed: None
) -> None:
    location = elsewhere.url().encode() + b"/\x1b[2J\x1b]0;owned\x07\xe2\x80\xae\x9b"
    with scripted_server(Script((sized(302, b"", b"Location: " + location),))) as api:
        text, as_json = run_flagctl(api, "get"), run_flagctl(api, "--json", "get")
    assert elsewhere.connections == 0
    assert_clean(text)
    assert_clean(as_json)
    assert "/\\x1b[2J\\x1b]0;owned\\x07\u00e2\\x80\u00ae\\x9b; flagctl never follows" in text.err
    assert json.loads(as_json.err)["error"]["location"] == location.decode("latin-1")


# -- what is printed ---------------------------------------------------------------------------------------------


def test_an_error_body_that_is_a_json_string_is_printed_escaped() -> None:
    body = json.dumps("\x1b[2J\x1b[31mdisk on fire\u202e\x85").encode()
    with scripted_server(Script((sized(500, body),))) as api:
        run = run_flagctl(api, "get")
    assert_clean(run)
    assert run.code == SERVER
    assert run.err == "flagctl: HTTP 500: \\x1b[2J\\x1b[31mdisk on fire\\u202e\\x85\n"


def test_json_output_writes_controls_and_bidi_as_json_escapes_and_decodes_to_the_same_data() -> None:
    # Given flags whose names and values carry C1 controls, bidi overrides and isolates, a tag character, DEL
    flags = {"a\u202eb": "\x85\u2066x\U000e0001\x7f\u200f", "c": "\u061c\u2028\x9b"}
    body = {**FLAGS, "flags": flags, "reason": "\ud800"}
    with scripted_server(Script((sized(200, json.dumps(body).encode()),))) as api:
        run = run_flagctl(api, "--json", "get")
    # Then the output is valid JSON with every one of them as an escape, decoding to the same data
    assert_clean(run)
    assert run.code == OK and json.loads(run.out) == with_reasons(body)
    for escape in ("\\u202e", "\\u0085", "\\u2066", "\\udb40\\udc01", "\\u007f", "\\u061c", "\\u2028", "\\ud800"):
        assert escape in run.out
    assert "é" in flagctl_json_text({"v": "é"})  # readable text stays readable


def flagctl_json_text(value: object) -> str:
    with scripted_server(Script((sized(200, json.dumps(value).encode()),))) as api:
        return run_flagctl(api, "--json", "get").out


def test_a_garbage_status_line_with_escapes_is_a_bad_answer_shown_escaped() -> None:
    with scripted_server(Script((b"\x1b[2J\x1b]0;owned\x07\x9b garbage\r\n\r\n",))) as api:
        run = run_flagctl(api, "get")
    assert_clean(run)
    assert run.code == SERVER
    assert run.err.startswith(f"flagctl: bad answer from http://127.0.0.1:{api.port}: no valid HTTP/1.x status line")
    assert "\\x1b[2J\\x1b]0;owned\\x07" in run.err


@pytest.mark.parametrize(
    ("status", "code"), [(400, BAD_INPUT), (409, CONFLICT), (502, SERVER)], ids=["400", "409", "502"]
)
def test_an_error_answer_that_is_not_json_is_shown_escaped_with_its_status(status: int, code: int) -> None:
    with scripted_server(Script((sized(status, b"<h1>\x1b[5mBad\xc2\x9b gateway</h1>"),))) as api:
        run = run_flagctl(api, "get")
    assert_clean(run)
    assert run.code == code
    assert run.err == f"flagctl: HTTP {status} NOT_JSON: <h1>\\x1b[5mBad\\x9b gateway</h1>\n"


# -- limits ------------------------------------------------------------------------------------------------------


def nested_flags(depth: int) -> bytes:
    """A flags answer whose one value nests so that the whole document is ``depth`` levels deep."""
    return b'{"flags": {"deep": ' + deep_json(depth - 2) + b'}, "version": 1, "reason": "R"}'


def test_json_nested_to_the_limit_is_read_one_level_deeper_is_a_bad_answer() -> None:
    with scripted_server(Script((sized(200, nested_flags(flagctl_client.MAX_JSON_DEPTH)),))) as api:
        assert run_flagctl(api, "--json", "get").code == OK
    with scripted_server(Script((sized(200, nested_flags(flagctl_client.MAX_JSON_DEPTH + 1)),))) as api:
        run = run_flagctl(api, "get")
    assert run.code == SERVER
    assert run.err.endswith(f"HTTP 200 with JSON nested deeper than {flagctl_client.MAX_JSON_DEPTH} levels\n")


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_json_nested_beyond_the_parsers_recursion_is_a_bad_answer_not_a_recursion_error(depth: int) -> None:
    with scripted_server(Script((sized(500, deep_json(depth)),))) as api:
        run = run_flagctl(api, "--json", "get")
    assert run.code == SERVER
    assert json.loads(run.err)["error"]["code"] == "BAD_RESPONSE"


def test_a_streamed_body_over_the_limit_is_refused_as_it_arrives() -> None:
    # Given a chunked answer of 64 KiB pieces, past the body limit
    piece = b"[" + b"1," * (32 * 1024 - 1) + b"1]"
    chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    pieces = LIMITS.body_bytes // len(piece) + 2
    with scripted_server(Script((head, *([chunk] * pieces), b"0\r\n\r\n"))) as api:
        run = run_flagctl(api, "get")
    assert run.code == SERVER
    assert run.err.endswith(f": a body over {LIMITS.body_bytes} bytes\n")


@pytest.mark.parametrize(("count", "usable"), [(LIMITS.headers - 2, True), (LIMITS.headers - 1, False)])
def test_an_answer_may_carry_up_to_the_header_limit(count: int, usable: bool) -> None:
    # Given an answer with Content-Length, Content-Type and ``count`` more headers
    extra = [b"X-Extra-%d: v" % number for number in range(count)]
    with scripted_server(Script((sized(200, b"{}", b"Content-Type: application/json", *extra),))) as api:
        run = run_flagctl(api, "--json", "get")
    assert run.code == (OK if usable else SERVER)


def test_the_head_limit_holds_for_a_head_that_arrives_whole() -> None:
    big = b"X-Big: " + b"b" * (LIMITS.head_bytes - 100)
    with scripted_server(Script((sized(200, b"{}", big),))) as api:
        assert run_flagctl(api, "--json", "get").code == OK
    bigger = b"X-Big: " + b"b" * LIMITS.head_bytes
    with scripted_server(Script((sized(200, b"{}", bigger),))) as api:
        run = run_flagctl(api, "get")
    assert run.code == SERVER
    # measured once whole, or refused by h11 while it was still arriving (its buffer bound)
    assert f"a head over {LIMITS.head_bytes} bytes" in run.err or "Receive buffer too long" in run.err


def test_the_limits_can_be_set_per_exchange() -> None:
    with (
        scripted_server(Script((sized(200, b"[" + b"1," * 600 + b"1]"),))) as api,
        pytest.raises(FlagctlError) as caught,
    ):
        exchange("GET", api.url() + "/flags", {}, None, limits=Limits(body_bytes=1000))
    assert (caught.value.code, caught.value.exit_code) == ("BAD_RESPONSE", SERVER)


# -- the deadline --------------------------------------------------------------------------------------------------

DRIPS = {
    "status-line": Script(drip=b"HTTP/1.1 200 OK\r\n"),
    "headers": Script((b"HTTP/1.1 200 OK\r\n",), drip=b"X-Slow: yes\r\n"),
    "body": Script((b"HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n",), drip=b'{"flags": '),
    "chunks": Script((b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",), drip=b"1\r\nx\r\n"),
    "interim-answers": Script(drip=b"HTTP/1.1 100 Continue\r\n\r\n"),
    "silence": Script(hold=15.0),
}


@pytest.mark.parametrize("where", list(DRIPS))
def test_a_server_dripping_its_answer_is_cut_at_the_requests_deadline(where: str, signed: None) -> None:
    # Given a server sending one byte every 0.2 s (each read gets something: only a total deadline ends it)
    with scripted_server(DRIPS[where]) as api:
        # When flagctl is given a small deadline
        run = run_flagctl(api, "--json", "get", deadline=DRIP_DEADLINE_SECONDS)
    # Then it ends at the deadline, with exit 5 and TIMEOUT
    assert DRIP_DEADLINE_SECONDS <= run.seconds < DRIP_DEADLINE_SECONDS + SLACK_SECONDS
    assert_clean(run)
    assert run.code == SERVER
    error = json.loads(run.err)["error"]
    assert error["code"] == "TIMEOUT"
    assert error["message"] == f"no complete answer from http://127.0.0.1:{api.port} within 1 s"


def test_a_tls_handshake_dripped_is_cut_at_the_deadline() -> None:
    # Given a server that answers the client's hello with the header of a 16 KiB record, then one byte at a time
    record_header = b"\x16\x03\x03\x40\x00"
    with scripted_server(Script((record_header,), read_request=False, drip=b"\x02")) as api:
        run = run_flagctl(api, "get", deadline=DRIP_DEADLINE_SECONDS, scheme="https")
    assert DRIP_DEADLINE_SECONDS <= run.seconds < DRIP_DEADLINE_SECONDS + SLACK_SECONDS
    assert run.code == SERVER and "no complete answer" in run.err


def test_a_write_cut_at_the_deadline_says_it_may_have_been_applied() -> None:
    with scripted_server(DRIPS["body"]) as api:
        run = run_flagctl(api, "set", "signup_enabled=false", "--reason", "r", deadline=DRIP_DEADLINE_SECONDS)
    assert run.code == SERVER
    assert "a write may have been applied all the same" in run.err


def test_an_unreachable_api_is_a_network_error() -> None:
    with scripted_server(Script()) as api:
        port = api.port
    out, err = io.StringIO(), io.StringIO()
    code = main(["--url", f"http://127.0.0.1:{port}", "--json", "get"], out=out, err=err)
    assert code == SERVER
    assert json.loads(err.getvalue())["error"]["code"] == "NETWORK_ERROR"


# -- TLS -----------------------------------------------------------------------------------------------------------


def test_tls_verifies_the_certificate_and_its_host_name_and_sends_sni(tmp_path: Path) -> None:
    # Given an https API with a certificate for localhost, issued by an authority the client is told to trust
    files = tls_files(tmp_path)
    names: list[str | None] = []
    with scripted_server(Script((OK_ANSWER,)), files.server_context(names.append)) as api:
        # When it is called by that name: the answer, and the name was sent (SNI)
        answer = exchange("GET", api.url("https", "localhost") + "/flags", {}, None, tls=files.client_context())
        assert answer.status == 200 and json.loads(answer.body) == FLAGS
        assert names == ["localhost"]
        # When it is called by another name the certificate does not hold: refused
        with pytest.raises(FlagctlError) as mismatch:
            exchange("GET", api.url("https", "127.0.0.1") + "/flags", {}, None, tls=files.client_context())
        # When the authority is not one the system trusts (the default context): refused
        with pytest.raises(FlagctlError) as untrusted:
            exchange("GET", api.url("https", "localhost") + "/flags", {}, None)
    assert (mismatch.value.code, mismatch.value.exit_code) == ("TLS_ERROR", SERVER)
    assert "IP address mismatch" in str(mismatch.value)
    assert untrusted.value.code == "TLS_ERROR" and "unable to get local issuer certificate" in str(untrusted.value)
    assert api.connections == 3 and len(api.received) == 1  # only the verified connection carried a request


# -- as a process --------------------------------------------------------------------------------------------------


def run_process(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "flagctl", *argv],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        timeout=60,
        check=False,
    )


def first_of_each_family() -> list[HostileAnswer]:
    seen: dict[str, HostileAnswer] = {}
    for case in hostile_answers(SEED, COUNT, "http://127.0.0.1:9"):
        seen.setdefault(case.id.split("-", 1)[1].split("-")[0], case)
    return list(seen.values())


@pytest.mark.parametrize("case", first_of_each_family(), ids=lambda case: case.id)
def test_as_a_process_a_hostile_answer_ends_in_a_message_and_an_exit_status_never_a_traceback(
    case: HostileAnswer,
) -> None:
    with scripted_server(Script(case.chunks)) as api:
        done = run_process("--url", api.url(), "--timeout", "5", "get")
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert raw_unsafe(out) == [] and raw_unsafe(err) == []
    assert "Traceback" not in err
    if case.kind != ANSWER or case.status is None:
        expected = {SERVER}
    else:
        expected = {OK, SERVER} if 200 <= case.status < 300 else {exit_code(case.status)}
    assert done.returncode in expected
    assert done.returncode == OK or err.startswith("flagctl: ")


def test_as_a_process_a_dripping_server_is_cut_at_the_timeout_given() -> None:
    with scripted_server(DRIPS["headers"]) as api:
        started = time.monotonic()
        done = run_process("--url", api.url(), "--timeout", "1", "get")
        elapsed = time.monotonic() - started
    assert done.returncode == SERVER
    assert done.stderr.decode() == f"flagctl: no complete answer from http://127.0.0.1:{api.port} within 1 s\n"
    assert elapsed < 1 + 5  # the interpreter's start and imports included
