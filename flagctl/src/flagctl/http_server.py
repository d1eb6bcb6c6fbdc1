"""The HTTP/1.1 front door of the local runner and of ``flagctl console``: h11 on 127.0.0.1, a thread per
connection, every byte a client sends bounded in size and in time.

What a client meets (each number a ``Limits`` field):

- parsing is h11's (RFC 9112): a malformed request line or field line (whitespace before a colon, a control
  character in a value), a bad Content-Length, a Transfer-Encoding that is not ``chunked`` alone are 400 in the
  API's error contract (``{"error": {"code", "message"}}``), then the connection closes; an obsolete line fold
  is unfolded (each fold becomes one space, as RFC 9112 5.2 allows), and spaces around a value are stripped;
- Content-Length together with Transfer-Encoding is 400, then close (RFC 9112 6.1): the bytes after the head
  are never read as another request; so are Transfer-Encoding in an HTTP/1.0 request and an HTTP version
  other than 1.x (no request a client sends is a 5xx);
- the request head (request line and fields) is at most ``max_head_bytes`` (414 when the request line alone is
  longer, else 431) and ``max_headers`` fields (431); a chunk-size or trailer line longer than the same buffer
  is 400: h11 refuses any event still incomplete when its buffer passes ``max_head_bytes``, and this server
  reads at most ``RECV_BYTES`` past that; a body over ``max_body_bytes`` is 413 (a declared one before a byte
  of it is read);
- a connection that sends nothing for ``idle_seconds`` (a new one, or one kept alive) is closed; a head must
  arrive within ``head_seconds`` of its first byte, a body within ``body_seconds`` of the head's end (408, then
  close); an answer the client does not read within ``send_seconds`` is abandoned;
- the target must be a path (origin-form, RFC 9112 3.2.1: ``/`` first); ``*``, ``http://host/path`` or
  ``host:port`` are 400, and the connection stays open;
- only ``Host: 127.0.0.1:<port>`` / ``localhost:<port>`` is answered (else 421 ``HOST_NOT_ALLOWED``), and an
  ``Origin``, when sent, of the same two (else 403 ``ORIGIN_NOT_ALLOWED``): ``refuse_foreign``;
- at most ``max_connections`` connections are served at once: beyond them, new connections wait in the
  listen backlog (``backlog``) until one ends; while every slot is taken, each answer closes its connection
  (``Connection: close``), so a waiting client gets a slot after one answer or one idle timeout;
- each answer leaves in one ``sendall`` (head and body together) on a socket with ``TCP_NODELAY``; HEAD, 204
  and 304 answers carry no body; after an answer that closes, the server stops sending, then reads and drops
  what the client still sends for at most ``linger_seconds`` so that the client reads the answer rather than a
  reset;
- one line per answer on stderr: ``METHOD target -> status (ms)``.

The handler (``Answers.handle``) sees a ``Request`` whose path is still percent-encoded, with every field as
sent (names in their case, values stripped of surrounding spaces), and returns an ``HttpResponse``; its own
``Content-Length``, ``Transfer-Encoding`` and ``Connection`` fields are replaced by the server's, and ``Date``
is added when missing. A handler that raises is a 500 in the error contract, its traceback on stderr.
"""

from __future__ import annotations

import contextlib
import email.utils
import itertools
import json
import re
import selectors
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, fields
from http import HTTPStatus
from typing import Protocol

import h11

LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = (LOOPBACK, "localhost")
RECV_BYTES = 64 * 1024
# Everything from this origin only; images may also be data: URIs (Swagger UI's icons are). No inline script.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# origin-form (RFC 9112 3.2.1): an absolute path, then an optional query; never a fragment.
_ORIGIN_FORM = re.compile(r"/[^?#]*(?:\?[^#]*)?")
# What h11 says of a malformed head, and what the sender should do instead.
_HINTS = {
    "illegal request line": "a request line is METHOD /path HTTP/1.1, its target printable ASCII: percent-encode "
    "any other character (%C3%A9 for é)",
    "illegal header line": "a field line is name: value, with no whitespace before the colon and no control "
    "character in the value",
}
_SHOWN_CHARS = 160  # of a client's bytes quoted back in a message


@dataclass(frozen=True, slots=True)
class Request:
    """An HTTP request as the server read it (the path still percent-encoded, as API Gateway matches it)."""

    method: str
    raw_path: str
    query: str
    headers: Sequence[tuple[str, str]]
    body: bytes
    client_ip: str = LOOPBACK


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""


class Answers(Protocol):
    """What the server hands each request to: the local API, or flagctl console's proxy."""

    def handle(self, request: Request) -> HttpResponse: ...


@dataclass(frozen=True, slots=True)
class Limits:
    """Every bound the server puts on a client (sizes in bytes, times in seconds)."""

    max_connections: int = 64
    backlog: int = 128
    max_head_bytes: int = 16 * 1024
    max_headers: int = 100
    max_body_bytes: int = 10 * 1024 * 1024  # API Gateway's payload limit
    idle_seconds: float = 5.0
    head_seconds: float = 10.0
    body_seconds: float = 30.0
    send_seconds: float = 30.0
    linger_seconds: float = 2.0

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            kind = int if field.type == "int" else int | float
            if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
                raise ValueError(f"Limits.{field.name} must be a positive {field.type}, got {value!r}")


def security_headers() -> list[tuple[str, str]]:
    return [("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", CONTENT_SECURITY_POLICY)]


def error(status: HTTPStatus, code: str, message: str) -> HttpResponse:
    """An answer in the API's error contract, with a request id as API Gateway's answers carry."""
    body = json.dumps({"error": {"code": code, "message": message}}, separators=(",", ":")).encode("utf-8")
    headers = [("Content-Type", "application/json"), ("x-amzn-RequestId", str(uuid.uuid4())), *security_headers()]
    return HttpResponse(int(status), headers, body)


def _values(headers: Sequence[tuple[str, str]], name: str) -> list[str]:
    return [value for key, value in headers if key.lower() == name]


def refuse_foreign(headers: Sequence[tuple[str, str]], port: int) -> HttpResponse | None:
    """The refusal of a request this server must not answer (another Host, another Origin), or None.

    ``Host`` must be exactly ``127.0.0.1:<port>`` or ``localhost:<port>`` (421 otherwise: a page on another name
    that resolves to 127.0.0.1, DNS rebinding, never reaches a route), and an ``Origin``, when sent,
    ``http://127.0.0.1:<port>`` or ``http://localhost:<port>`` (403 otherwise: another page in the browser, on
    another port or site, cannot drive the API)."""
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


class _Refused(Exception):
    """A request answered by the server itself; ``close``: the connection ends after the answer."""

    def __init__(self, status: HTTPStatus, code: str, message: str, *, close: bool) -> None:
        super().__init__(message)
        self.answer = error(status, code, message)
        self.close = close


class _Gone(Exception):
    """The client went away, or stopped reading: nothing more can be said on this connection."""


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


def _reason(response: HttpResponse) -> bytes:
    """The status line's reason phrase: the registered one, or none for a status without one."""
    try:
        return HTTPStatus(response.status).phrase.encode("ascii")
    except ValueError:
        return b""


def _bad_request(message: str, *, close: bool) -> _Refused:
    return _Refused(HTTPStatus.BAD_REQUEST, "BAD_REQUEST", message, close=close)


class _Connection:
    """One client connection: requests read with h11, one at a time, each answered before the next is read."""

    def __init__(self, server: LocalServer, sock: socket.socket, client_ip: str) -> None:
        self._server = server
        self._sock = sock
        self._client_ip = client_ip
        self._limits = server.limits
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self._limits.max_head_bytes)

    def serve(self) -> None:
        try:
            while self._exchange():
                self._h11.start_next_cycle()
        except _Gone:
            pass

    # -- one request, one answer ------------------------------------------------------------------------

    def _exchange(self) -> bool:
        """Read one request and answer it; whether the connection stays open for another."""
        method = target = "-"
        started = time.monotonic()
        try:
            head = self._read_head()
            if head is None:
                return False  # idle, or the client closed between requests: nothing to answer
            started = time.monotonic()
            method, target = head.method.decode("ascii"), head.target.decode("ascii")
            self._check_framing(head)
            request = self._request(head, self._read_body())
            response, close = self._answer(request), False
        except _Refused as refusal:
            response, close = refusal.answer, refusal.close
        close = close or self._server.is_full()
        self._send(response, method, close)
        elapsed_ms = (time.monotonic() - started) * 1000
        sys.stderr.write(f"{method} {target} -> {response.status} ({elapsed_ms:.1f} ms)\n")
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            return True
        self._linger()
        return False

    def _answer(self, request: Request) -> HttpResponse:
        foreign = refuse_foreign(request.headers, self._server.port)
        if foreign is not None:
            return foreign
        api = self._server.api
        if api is None:  # serve_forever refuses to start without one
            raise RuntimeError("LocalServer.api is not set")
        try:
            return api.handle(request)
        except Exception:  # noqa: BLE001 - a handler's defect is the handler's 500, never a dropped connection
            traceback.print_exc(file=sys.stderr)
            return error(HTTPStatus.INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", "the server failed to answer")

    # -- reading ---------------------------------------------------------------------------------------

    def _read_head(self) -> h11.Request | None:
        """The next request's head, or None when the connection ends without one (closed, or idle too long)."""
        buffered = self._h11.trailing_data[0]  # pipelined bytes, read with the previous request
        fed, newline = len(buffered), b"\n" in buffered
        now = time.monotonic()
        idle_deadline = now + self._limits.idle_seconds
        head_deadline = now + self._limits.head_seconds if buffered else None
        while True:
            event = self._next_event(newline=newline)
            if isinstance(event, h11.Request):
                self._check_head_size(event, fed - len(self._h11.trailing_data[0]))
                return event
            if event is not h11.NEED_DATA:
                return None  # ConnectionClosed
            if head_deadline is None:
                data = self._receive(idle_deadline)
                if data is None:
                    return None
                head_deadline = time.monotonic() + self._limits.head_seconds
            else:
                data = self._receive(head_deadline)
                if data is None:
                    raise _Refused(
                        HTTPStatus.REQUEST_TIMEOUT,
                        "REQUEST_TIMEOUT",
                        f"the request head did not arrive within {self._limits.head_seconds:g} s of its first byte",
                        close=True,
                    )
            fed += len(data)
            newline = newline or b"\n" in data
            self._h11.receive_data(data)

    def _check_head_size(self, head: h11.Request, size: int) -> None:
        limit = self._limits.max_head_bytes
        if len(head.method) + len(head.target) + len(b"  HTTP/1.1") > limit:
            raise _Refused(
                HTTPStatus.REQUEST_URI_TOO_LONG, "URI_TOO_LONG", f"the request line is over {limit} bytes", close=True
            )
        if size > limit:
            raise _Refused(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                "REQUEST_HEADER_FIELDS_TOO_LARGE",
                f"the request head is over {limit} bytes",
                close=True,
            )

    def _check_framing(self, head: h11.Request) -> None:
        """What makes the request's framing untrustworthy or its body unwanted: answered before the body."""
        if not head.http_version.startswith(b"1."):
            raise _bad_request(
                f"HTTP/{head.http_version.decode('ascii')} is not served here: send HTTP/1.1", close=True
            )
        if len(head.headers) > self._limits.max_headers:
            raise _Refused(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                "REQUEST_HEADER_FIELDS_TOO_LARGE",
                f"more than {self._limits.max_headers} header fields",
                close=True,
            )
        names = {name for name, _ in head.headers}
        if b"transfer-encoding" in names and b"content-length" in names:
            raise _bad_request(
                "Content-Length and Transfer-Encoding together: the body's length is ambiguous (RFC 9112 6.1)",
                close=True,
            )
        if b"transfer-encoding" in names and head.http_version == b"1.0":
            raise _bad_request("Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1)", close=True)
        lengths = [value for name, value in head.headers if name == b"content-length"]
        if lengths and int(lengths[0]) > self._limits.max_body_bytes:
            raise self._too_large()

    def _read_body(self) -> bytes:
        if self._h11.they_are_waiting_for_100_continue:
            self._send_bytes(self._h11.send(h11.InformationalResponse(status_code=100, headers=[])))
        deadline = time.monotonic() + self._limits.body_seconds
        parts: list[bytes] = []
        total = 0
        while True:
            event = self._next_event(newline=True)
            if isinstance(event, h11.Data):
                total += len(event.data)
                if total > self._limits.max_body_bytes:
                    raise self._too_large()
                parts.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(parts)
            else:
                data = self._receive(deadline)
                if data is None:
                    raise _Refused(
                        HTTPStatus.REQUEST_TIMEOUT,
                        "REQUEST_TIMEOUT",
                        f"the request body did not arrive within {self._limits.body_seconds:g} s of its head",
                        close=True,
                    )
                self._h11.receive_data(data)

    def _too_large(self) -> _Refused:
        limit = self._limits.max_body_bytes
        shown = f"{limit // (1024 * 1024)} MB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"
        return _Refused(
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "REQUEST_TOO_LARGE", f"request body over {shown}", close=True
        )

    def _next_event(self, *, newline: bool) -> object:
        """h11's next event; its refusals as answers. ``newline``: a line end has arrived (a head that never
        ends its request line is 414, a longer one 431)."""
        in_body = self._h11.their_state is h11.SEND_BODY
        try:
            return self._h11.next_event()
        except h11.RemoteProtocolError as exc:
            text = str(exc)
            limit = self._limits.max_head_bytes
            if exc.error_status_hint == HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
                if in_body:
                    raise _bad_request(f"a chunk-size or trailer line is over {limit} bytes", close=True) from exc
                if not newline:
                    raise _Refused(
                        HTTPStatus.REQUEST_URI_TOO_LONG,
                        "URI_TOO_LONG",
                        f"the request line is over {limit} bytes",
                        close=True,
                    ) from exc
                raise _Refused(
                    HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                    "REQUEST_HEADER_FIELDS_TOO_LARGE",
                    f"the request head is over {limit} bytes",
                    close=True,
                ) from exc
            if exc.error_status_hint == HTTPStatus.NOT_IMPLEMENTED:  # a transfer coding h11 does not decode
                raise _bad_request(
                    f"Transfer-Encoding must be chunked, alone, in one field (RFC 9112 6.3): {text}", close=True
                ) from exc
            hint = next((hint for prefix, hint in _HINTS.items() if text.startswith(prefix)), None)
            message = f"malformed request: {_shown(text)}" + (f" ({hint})" if hint else "")
            raise _bad_request(message, close=True) from exc

    def _receive(self, deadline: float) -> bytes | None:
        """What the client sent next (b"" once it closed), or None when ``deadline`` passed first."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        try:
            self._sock.settimeout(remaining)
            return self._sock.recv(RECV_BYTES)
        except TimeoutError:
            return None
        except OSError as exc:
            raise _Gone from exc

    def _request(self, head: h11.Request, body: bytes) -> Request:
        target = head.target.decode("ascii")  # h11 admits printable ASCII only
        if not _ORIGIN_FORM.fullmatch(target):
            raise _bad_request(
                f"the request target must be a path starting with / (origin-form, RFC 9112 3.2.1), got "
                f"{_shown(target)!r}",
                close=False,
            )
        path, _, query = target.partition("?")
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in head.headers.raw_items()]
        return Request(head.method.decode("ascii"), path, query, headers, body, self._client_ip)

    # -- writing ---------------------------------------------------------------------------------------

    def _send(self, response: HttpResponse, method: str, close: bool) -> None:
        """The answer in one write: status line, fields and body together."""
        bodyless = method == "HEAD" or response.status in (HTTPStatus.NO_CONTENT, HTTPStatus.NOT_MODIFIED)
        try:
            head = h11.Response(
                status_code=response.status, headers=self._fields(response, method, close), reason=_reason(response)
            )
        except h11.LocalProtocolError:  # a handler's status or field h11 cannot send: its defect, answered 500
            traceback.print_exc(file=sys.stderr)
            response = error(HTTPStatus.INTERNAL_SERVER_ERROR, "INTERNAL_ERROR", "the server failed to answer")
            head = h11.Response(
                status_code=response.status, headers=self._fields(response, method, True), reason=_reason(response)
            )
            bodyless = method == "HEAD"
        parts = [self._h11.send(head)]
        if not bodyless and response.body:
            parts.append(self._h11.send(h11.Data(data=response.body)))
        parts.append(self._h11.send(h11.EndOfMessage()))
        self._send_bytes(b"".join(parts))

    def _fields(self, response: HttpResponse, method: str, close: bool) -> list[tuple[str, str]]:
        headers = [
            (name, value)
            for name, value in response.headers
            if name.lower() not in ("content-length", "connection", "transfer-encoding")
        ]
        if not any(name.lower() == "date" for name, _ in headers):
            headers.insert(0, ("Date", email.utils.formatdate(usegmt=True)))
        if response.status not in (HTTPStatus.NO_CONTENT, HTTPStatus.NOT_MODIFIED):
            headers.append(("Content-Length", str(len(response.body))))  # a HEAD answer says the GET's length
        if close:
            headers.append(("Connection", "close"))
        return headers

    def _send_bytes(self, data: bytes) -> None:
        try:
            self._sock.settimeout(self._limits.send_seconds)
            self._sock.sendall(data)
        except OSError as exc:  # reset, broken pipe, or not read within send_seconds
            raise _Gone from exc

    def _linger(self) -> None:
        """The answer is out: send nothing more, and drop what the client still sends until it closes (at most
        ``linger_seconds``), so that closing with unread bytes does not reset the answer away."""
        deadline = time.monotonic() + self._limits.linger_seconds
        try:
            self._sock.shutdown(socket.SHUT_WR)
            while self._receive(deadline):
                pass
        except (OSError, _Gone):
            pass


class LocalServer:
    """An HTTP/1.1 server on 127.0.0.1:``port`` (0: a free port) answering with ``api``, set before serving.

    ``serve_forever``, ``shutdown`` (from another thread) and ``server_close`` as ``socketserver``'s; every
    bound in ``limits``."""

    def __init__(self, port: int, api: Answers | None = None, *, limits: Limits | None = None) -> None:
        self.api = api
        self.limits = limits or Limits()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((LOOPBACK, port))
            listener.listen(self.limits.backlog)
            listener.setblocking(False)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self.server_address: tuple[str, int] = listener.getsockname()[:2]
        self._slots = threading.BoundedSemaphore(self.limits.max_connections)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._serial = itertools.count(1)
        self._stop_requested = False
        self._stopped = threading.Event()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def connections(self) -> int:
        """How many connections are being served now."""
        with self._lock:
            return len(self._open)

    def is_full(self) -> bool:
        return self.connections >= self.limits.max_connections

    def connection_socket(self, sock: socket.socket) -> socket.socket:
        """The socket a connection is served on: the accepted one (a subclass may wrap it)."""
        return sock

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept connections until ``shutdown``: each served on its own thread while a slot is free."""
        if self.api is None:
            raise RuntimeError("LocalServer.api must be set before serving")
        self._stopped.clear()
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self._listener, selectors.EVENT_READ)
                while not self._stop_requested:
                    if not self._slots.acquire(timeout=poll_interval):
                        continue  # every slot taken: new connections wait in the backlog
                    self._accept(selector, poll_interval)
        finally:
            self._stop_requested = False
            self._stopped.set()

    def _accept(self, selector: selectors.BaseSelector, poll_interval: float) -> None:
        """One connection, if one comes within ``poll_interval``, served on a thread given the slot just taken;
        the slot is freed here unless that thread started (an interruption may leak it, never free it twice)."""
        handed = False
        try:
            if not selector.select(poll_interval):
                return
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return  # the client gave up before it was accepted
            except OSError as exc:  # out of descriptors or memory: the connection waits, the loop does not spin
                sys.stderr.write(f"cannot accept a connection: {exc}\n")
                time.sleep(poll_interval)
                return
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with self._lock:
                    self._open.add(sock)
                thread = threading.Thread(
                    target=self._serve_connection,
                    args=(sock, address[0]),
                    name=f"http-{self.port}-connection-{next(self._serial)}",
                    daemon=True,  # stopping the process does not wait for a kept-alive connection
                )
                handed = True  # from here on the thread frees the slot
                try:
                    thread.start()
                except RuntimeError:
                    handed = False
                    raise
            except (OSError, RuntimeError) as exc:  # no thread to be had: this connection only is dropped
                sys.stderr.write(f"cannot serve a connection: {exc}\n")
                self._forget(sock)
        finally:
            if not handed:
                self._slots.release()

    def _serve_connection(self, sock: socket.socket, client_ip: str) -> None:
        try:
            _Connection(self, self.connection_socket(sock), client_ip).serve()
        except Exception:  # noqa: BLE001 - a defect here must still free the connection's slot
            traceback.print_exc(file=sys.stderr)
        finally:
            self._forget(sock)
            self._slots.release()

    def _forget(self, sock: socket.socket) -> None:
        with self._lock:  # closed under the lock: server_close never shuts down a closed, reused descriptor
            self._open.discard(sock)
            sock.close()

    def shutdown(self) -> None:
        """Stop ``serve_forever`` (running on another thread) and wait until it has returned."""
        self._stop_requested = True
        self._stopped.wait()

    def server_close(self) -> None:
        """Stop listening, and end the connections still open."""
        self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
