"""The front door (``flagctl.http_server.LocalServer``) against hostile clients: the server in this process with
small limits, a handler that records what reaches it, and raw sockets sending what no polite client sends.

Every refusal is an answer in the error contract; "then closed" means the client reads the answer, then the end
of the stream, and nothing after the refused head is ever answered.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from flagctl.http_server import HttpResponse, Limits, LocalServer, Request

MB = 1024 * 1024


class Recorder:
    """Answers every request 200 with what it saw (``/empty``: 204; ``/boom``: raises); keeps each request."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def handle(self, request: Request) -> HttpResponse:
        self.requests.append(request)
        if request.raw_path == "/empty":
            return HttpResponse(204, [("X-Empty", "yes")], b"ignored")
        if request.raw_path == "/boom":
            raise RuntimeError("a defect of the handler")
        seen = {
            "method": request.method,
            "path": request.raw_path,
            "query": request.query,
            "headers": [list(pair) for pair in request.headers],
            "body": request.body.decode("latin-1"),
        }
        return HttpResponse(200, [("Content-Type", "application/json")], json.dumps(seen).encode())


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def error(self) -> dict[str, Any]:
        assert self.headers["content-type"] == "application/json", self
        assert self.headers.get("x-amzn-requestid"), self
        error = json.loads(self.body)["error"]
        assert isinstance(error, dict)
        return error

    @property
    def seen(self) -> dict[str, Any]:
        seen = json.loads(self.body)
        assert isinstance(seen, dict)
        return seen


def parse(data: bytes, methods: list[str] | None = None) -> tuple[list[Answer], bytes]:
    """The complete answers at the start of ``data`` (a HEAD's, per ``methods``, has no body), and the rest."""
    answers: list[Answer] = []
    methods = list(methods or [])
    while b"\r\n\r\n" in data:
        head, rest = data.split(b"\r\n\r\n", 1)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ")[1])
        headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
        method = methods.pop(0) if methods and status >= 200 else None
        bodyless = method == "HEAD" or status in (100, 204, 304)
        length = 0 if bodyless else int(headers.get("content-length", "0"))
        if len(rest) < length:
            break
        answers.append(Answer(status, headers, rest[:length]))
        data = rest[length:]
    return answers, data


def receive(
    client: socket.socket, count: int = 1, timeout: float = 5.0, methods: list[str] | None = None
) -> list[Answer]:
    """Read until ``count`` answers are complete (fails after ``timeout``)."""
    data = b""
    deadline = time.monotonic() + timeout
    while True:
        answers, _ = parse(data, methods)
        if len(answers) >= count:
            return answers
        client.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = client.recv(65536)
        assert chunk, f"the connection closed after {data!r}"
        data += chunk


def rest_of_stream(client: socket.socket, timeout: float = 5.0) -> bytes:
    """Everything the server still sends until it closes; fails when it does not close within ``timeout``."""
    data = b""
    deadline = time.monotonic() + timeout
    while True:
        client.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = client.recv(65536)
        except ConnectionResetError:
            return data
        except TimeoutError:
            pytest.fail(f"the server did not close the connection within {timeout} s, after sending {data!r}")
        if not chunk:
            return data
        data += chunk


def answers_then_closed(client: socket.socket, timeout: float = 5.0) -> list[Answer]:
    """Every answer the server sends before it closes the connection."""
    answers, rest = parse(rest_of_stream(client, timeout))
    assert rest == b"", rest
    return answers


@contextmanager
def serving(limits: Limits | None = None, server_class: type[LocalServer] = LocalServer) -> Iterator[Any]:
    server = server_class(0, Recorder(), limits=limits)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def recorder(server: LocalServer) -> Recorder:
    assert isinstance(server.api, Recorder)
    return server.api


def head(server: LocalServer, target: str = "/echo", *fields: str, method: str = "GET", version: str = "1.1") -> bytes:
    lines = [f"{method} {target} HTTP/{version}", f"Host: 127.0.0.1:{server.port}", *fields]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def connect(server: LocalServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=5)


# -- lines without an end ---------------------------------------------------------------------------------


def _stream_until_refused(client: socket.socket, piece: bytes, total: int) -> None:
    sent = 0
    try:
        while sent < total:
            client.sendall(piece)
            sent += len(piece)
        client.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the server stopped reading: what the test wants


@pytest.mark.parametrize(
    ("prelude", "endless"),
    [
        pytest.param(b"", b"1", id="chunk-size line"),
        pytest.param(b"5\r\nhello\r\n0\r\nX-Trailer: ", b"a", id="trailer line"),
    ],
)
def test_a_line_without_an_end_in_a_chunked_body_is_cut_at_the_line_limit(prelude: bytes, endless: bytes) -> None:
    # Given a server whose lines may be 1 KiB long
    with serving(Limits(max_head_bytes=1024, linger_seconds=2)) as server, connect(server) as client:
        client.sendall(head(server, "/echo", "Transfer-Encoding: chunked", method="POST") + prelude)
        # When the client streams 32 MB of one line that never ends
        tracemalloc.start()
        sender = threading.Thread(target=_stream_until_refused, args=(client, endless * 65536, 32 * MB))
        sender.start()
        answers = answers_then_closed(client, timeout=20)
        sender.join(20)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        # Then one 400 naming the line limit, then the connection is closed
        assert [answer.status for answer in answers] == [400]
        assert answers[0].error == {
            "code": "BAD_REQUEST",
            "message": "a chunk-size or trailer line is over 1024 bytes",
        }
        # And the process held a bounded buffer, not what was sent; nothing reached the handler
        assert peak < 2 * MB, peak
        assert recorder(server).requests == []


# -- deadlines and the connection cap -------------------------------------------------------------------------


class Watched(LocalServer):
    """Records, as each connection's thread starts, how many connections the server is serving (each on a
    thread of its own)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.at_start: list[int] = []

    def connection_socket(self, sock: socket.socket) -> socket.socket:
        self.at_start.append(self.connections)
        return sock


def test_half_sent_requests_are_closed_at_the_head_deadline_and_never_hold_more_than_the_cap() -> None:
    # Given a server of 2 connections whose heads must arrive within 0.5 s
    limits = Limits(max_connections=2, head_seconds=0.5, idle_seconds=30, linger_seconds=0.2)
    with serving(limits, Watched) as server:
        # When 6 clients each send half a head, and nothing more
        clients = [connect(server) for _ in range(6)]
        for client in clients:
            client.sendall(head(server)[:-4] + b"\r\nX-Slow: still coming")
        # Then each is answered 408 and closed, those beyond the cap once a slot freed
        for client in clients:
            answers = answers_then_closed(client, timeout=15)
            assert [answer.status for answer in answers] == [408]
            assert answers[0].error["code"] == "REQUEST_TIMEOUT"
            client.close()
        # And no more than 2 connections (2 threads) were ever served at once; none reached the handler
        assert len(server.at_start) == 6
        assert max(server.at_start) == 2
        assert recorder(server).requests == []


def test_a_head_trickled_byte_by_byte_is_cut_at_the_deadline_of_its_first_byte() -> None:
    with serving(Limits(head_seconds=0.5, linger_seconds=0.2)) as server, connect(server) as client:
        # Given a client that sends one byte of a long head every 50 ms
        trickle = head(server)[:-4] + b"\r\nX-Slow: " + b"a" * 1000
        first = time.monotonic()
        answered = False
        for byte in trickle:
            client.sendall(bytes([byte]))
            if select.select([client], [], [], 0.05)[0]:
                answered = True
                break
        # Then it is answered 408 about 0.5 s after its first byte, long before the head could end
        elapsed = time.monotonic() - first
        assert answered
        answers = answers_then_closed(client)
        assert [answer.status for answer in answers] == [408]
        assert elapsed < 3.0, elapsed


def test_an_idle_connection_is_closed_without_an_answer_before_and_after_a_request() -> None:
    with serving(Limits(idle_seconds=0.3)) as server:
        # Given a connection that never sends a byte: closed, nothing said
        with connect(server) as silent:
            assert rest_of_stream(silent, timeout=3) == b""
        # Given a kept-alive connection after one answer: closed once idle
        with connect(server) as kept:
            kept.sendall(head(server))
            assert receive(kept)[0].status == 200
            assert rest_of_stream(kept, timeout=3) == b""


def test_a_body_that_stops_coming_is_408_at_the_body_deadline() -> None:
    with serving(Limits(body_seconds=0.3, linger_seconds=0.2)) as server, connect(server) as client:
        client.sendall(head(server, "/echo", "Content-Length: 10", method="POST") + b"abc")
        answers = answers_then_closed(client)
        assert [answer.status for answer in answers] == [408]
        assert answers[0].error["message"] == "the request body did not arrive within 0.3 s of its head"
        assert recorder(server).requests == []


def test_at_the_cap_each_answer_closes_its_connection_so_a_waiting_one_is_served() -> None:
    # Given a server of one connection, taken by a first client
    with serving(Limits(max_connections=1, idle_seconds=30)) as server, connect(server) as first:
        deadline = time.monotonic() + 5
        while server.connections < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        with connect(server) as second:
            # When a second client connects (it waits in the backlog) and both ask, keep-alive
            second.sendall(head(server, "/second"))
            first.sendall(head(server, "/first"))
            # Then the first's answer closes its connection, and the second is served
            answers = answers_then_closed(first)
            assert [(answer.status, answer.headers.get("connection")) for answer in answers] == [(200, "close")]
            assert receive(second)[0].seen["path"] == "/second"


# -- framing: one request is one request ------------------------------------------------------------------


def test_content_length_with_transfer_encoding_is_400_and_the_smuggled_request_is_never_answered() -> None:
    with serving(Limits(linger_seconds=0.5)) as server, connect(server) as client:
        smuggled = head(server, "/smuggled")
        request = head(server, "/echo", "Content-Length: 5", "Transfer-Encoding: chunked", method="POST")
        client.sendall(request + b"0\r\n\r\n" + smuggled)
        answers = answers_then_closed(client)
        assert [(answer.status, answer.headers.get("connection")) for answer in answers] == [(400, "close")]
        assert "Content-Length and Transfer-Encoding together" in answers[0].error["message"]
        assert recorder(server).requests == []


@pytest.mark.parametrize(
    ("fields", "version", "says"),
    [
        pytest.param(["Transfer-Encoding: gzip", "Content-Length: 0"], "1.1", "Transfer-Encoding", id="te-gzip-cl"),
        pytest.param(["Transfer-Encoding: gzip"], "1.1", "Transfer-Encoding must be chunked", id="te-gzip"),
        pytest.param(["Transfer-Encoding: chunked, gzip"], "1.1", "Transfer-Encoding must be chunked", id="te-last"),
        pytest.param(["Transfer-Encoding: gzip, chunked"], "1.1", "Transfer-Encoding must be chunked", id="te-first"),
        pytest.param(
            ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], "1.1", "Transfer-Encoding", id="te-twice"
        ),
        pytest.param(["Transfer-Encoding: chunked"], "1.0", "HTTP/1.0", id="te-in-http-1.0"),
        pytest.param(["X-Space : before the colon"], "1.1", "no whitespace before the colon", id="space-colon"),
        pytest.param(["X-Nul: a\x00b"], "1.1", "no control character", id="nul-in-value"),
        pytest.param(["X-Cr: a\rb"], "1.1", "no control character", id="bare-cr-in-value"),
        pytest.param(["Content-Length: 1, 2"], "1.1", "Content-Length", id="two-lengths"),
        pytest.param(["Content-Length: -1"], "1.1", "Content-Length", id="negative-length"),
        pytest.param([], "2.0", "HTTP/2.0 is not served here", id="http-2.0"),
    ],
)
def test_a_head_with_broken_framing_or_syntax_is_400_then_closed(fields: list[str], version: str, says: str) -> None:
    with serving(Limits(linger_seconds=0.5)) as server, connect(server) as client:
        client.sendall(head(server, "/echo", *fields, method="POST", version=version) + head(server, "/next"))
        answers = answers_then_closed(client)
        assert [answer.status for answer in answers] == [400]
        error = answers[0].error
        assert error["code"] == "BAD_REQUEST" and says in error["message"], error
        assert recorder(server).requests == []


def test_an_obsolete_line_fold_is_unfolded_and_values_lose_their_surrounding_spaces() -> None:
    with serving() as server, connect(server) as client:
        client.sendall(head(server, "/echo", "X-Folded: one,\r\n \t two", "Idempotency-Key: \t abc \t "))
        fields = dict(receive(client)[0].seen["headers"])
        assert fields["X-Folded"] == "one, two"
        assert fields["Idempotency-Key"] == "abc"


# -- sizes ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("at_once", [True, False], ids=["in-one-piece", "piece-by-piece"])
def test_a_head_over_the_limit_is_414_for_its_request_line_and_431_for_its_fields(at_once: bool) -> None:
    with serving(Limits(max_head_bytes=1024, linger_seconds=0.5)) as server:
        long_line = head(server, "/" + "a" * 1100)
        long_fields = head(server, "/echo", *(f"X-Field-{number}: {'b' * 40}" for number in range(30)))
        for request, status, code in (
            (long_line, 414, "URI_TOO_LONG"),
            (long_fields, 431, "REQUEST_HEADER_FIELDS_TOO_LARGE"),
        ):
            with connect(server) as client:
                if at_once:
                    client.sendall(request)
                else:
                    for start in range(0, len(request), 100):
                        client.sendall(request[start : start + 100])
                        time.sleep(0.005)
                answers = answers_then_closed(client)
                assert [answer.error["code"] for answer in answers] == [code]
                assert answers[0].status == status
        assert recorder(server).requests == []


def test_more_header_fields_than_the_limit_is_431() -> None:
    with serving(Limits(max_headers=10, linger_seconds=0.5)) as server, connect(server) as client:
        client.sendall(head(server, "/echo", *(f"X-{number}: v" for number in range(10))))
        answers = answers_then_closed(client)
        assert [(answer.status, answer.error["message"]) for answer in answers] == [(431, "more than 10 header fields")]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(["Content-Length: 1001"], id="declared"),
        pytest.param(["Transfer-Encoding: chunked"], id="chunked"),
    ],
)
def test_a_body_over_the_limit_is_413_then_closed(body: list[str]) -> None:
    with serving(Limits(max_body_bytes=1000, linger_seconds=0.5)) as server, connect(server) as client:
        chunked = body == ["Transfer-Encoding: chunked"]
        client.sendall(head(server, "/echo", *body, method="POST"))
        if chunked:
            client.sendall(b"258\r\n" + b"x" * 600 + b"\r\n258\r\n" + b"x" * 600 + b"\r\n")
        answers = answers_then_closed(client)
        assert [(answer.status, answer.error["code"]) for answer in answers] == [(413, "REQUEST_TOO_LARGE")]
        assert recorder(server).requests == []


def test_a_body_of_exactly_the_limit_is_read_and_a_waiting_client_is_told_to_continue() -> None:
    with serving(Limits(max_body_bytes=1000)) as server, connect(server) as client:
        client.sendall(head(server, "/echo", "Content-Length: 1000", "Expect: 100-continue", method="POST"))
        assert receive(client)[0].status == 100
        client.sendall(b"y" * 1000)
        answer = receive(client)[0]
        assert answer.status == 200 and answer.seen["body"] == "y" * 1000


# -- targets -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("GET", "flags"),
        ("GET", "http://127.0.0.1:{port}/echo"),
        ("OPTIONS", "*"),
        ("CONNECT", "127.0.0.1:{port}"),
        ("GET", "/echo#fragment"),
    ],
)
def test_a_target_that_is_not_a_path_is_400_and_the_connection_serves_the_next_request(
    method: str, target: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with serving() as server, connect(server) as client:
        client.sendall(head(server, target.format(port=server.port), method=method) + head(server, "/next"))
        refused, served = receive(client, count=2)
        assert refused.status == 400
        assert refused.error["code"] == "BAD_REQUEST" and "origin-form" in refused.error["message"]
        assert served.status == 200 and served.seen["path"] == "/next"
        assert [request.raw_path for request in recorder(server).requests] == ["/next"]
    assert "Traceback" not in capfd.readouterr().err


def test_a_handler_that_raises_is_a_500_in_the_error_contract_and_the_connection_goes_on() -> None:
    with serving() as server, connect(server) as client:
        client.sendall(head(server, "/boom") + head(server, "/next"))
        failed, served = receive(client, count=2)
        assert (failed.status, failed.error["code"]) == (500, "INTERNAL_ERROR")
        assert served.status == 200


# -- writing -------------------------------------------------------------------------------------------------


class Writes:
    """A socket that records every call that writes to it."""

    def __init__(self, sock: socket.socket, calls: list[tuple[str, int]]) -> None:
        self._sock = sock
        self._calls = calls

    def sendall(self, data: bytes) -> None:
        self._calls.append(("sendall", len(data)))
        self._sock.sendall(data)

    def send(self, data: bytes) -> int:
        self._calls.append(("send", len(data)))
        return self._sock.send(data)

    def sendmsg(self, *args: Any) -> int:
        self._calls.append(("sendmsg", 0))
        return self._sock.sendmsg(*args)

    def makefile(self, *args: Any, **kwargs: Any) -> Any:
        self._calls.append(("makefile", 0))
        return self._sock.makefile(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class RecordingWrites(LocalServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, int]] = []
        self.nodelay: list[int] = []

    def connection_socket(self, sock: socket.socket) -> socket.socket:
        self.nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        return Writes(sock, self.calls)  # type: ignore[return-value]


def test_each_answer_leaves_in_one_write_on_a_socket_without_nagle() -> None:
    requests = [
        ("GET", ("/echo",)),
        ("HEAD", ("/echo",)),
        ("GET", ("/empty",)),
        ("GET", ("flags",)),
        ("POST", ("/echo", "Content-Length: 3")),
    ]
    with serving(server_class=RecordingWrites) as server, connect(server) as client:
        statuses = []
        for method, args in requests:
            client.sendall(head(server, *args, method=method) + (b"abc" if method == "POST" else b""))
            (answer,) = receive(client, methods=[method])
            statuses.append((answer.status, len(answer.body)))
        # Then every answer came whole (a HEAD's and a 204's without a body), each from one sendall
        assert [status for status, _ in statuses] == [200, 200, 204, 400, 200]
        assert statuses[1][1] == statuses[2][1] == 0
        assert server.calls == [("sendall", server.calls[index][1]) for index in range(len(requests))]
        assert server.nodelay == [1]


# -- stopping ------------------------------------------------------------------------------------------------


def test_an_interrupt_while_a_connection_starts_stops_serving_and_frees_its_slot_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a client waiting to be accepted, and Ctrl-C arriving just as its thread starts
    server = LocalServer(0, Recorder())
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    real_start = threading.Thread.start

    def start_then_interrupt(thread: threading.Thread) -> None:
        real_start(thread)
        raise KeyboardInterrupt

    with connect(server) as client:
        monkeypatch.setattr(threading.Thread, "start", start_then_interrupt)
        # When the server accepts it
        with pytest.raises(KeyboardInterrupt):
            server.serve_forever(poll_interval=0.05)
        monkeypatch.setattr(threading.Thread, "start", real_start)
        # Then serving stopped with the interrupt, and the started connection is still answered
        client.sendall(head(server, "/echo", "Connection: close"))
        assert [answer.status for answer in answers_then_closed(client)] == [200]
    for thread in threading.enumerate():
        if thread.name.startswith(f"http-{server.port}-connection-"):
            thread.join(5)
    server.server_close()
    # And its thread freed its slot without a second release
    assert failures == []


@pytest.mark.parametrize(
    "bad",
    [{"max_connections": 0}, {"max_connections": 1.5}, {"max_headers": True}, {"idle_seconds": -1}, {"backlog": "8"}],
)
def test_a_limit_that_is_not_a_positive_number_of_its_kind_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=f"Limits.{next(iter(bad))} must be a positive"):
        Limits(**bad)
