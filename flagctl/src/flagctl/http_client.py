"""One strict HTTP/1.1 exchange on h11: flagctl's requests to the API, and ``flagctl console``'s forwarded calls.

The server on the other end is not trusted:

- ``http`` or ``https`` only; TLS through ``ssl.create_default_context()`` (the system's trust store, the
  certificate and the host name verified, SNI sent);
- one request per connection, sent to the host of its own URL with that host as ``Host``; nothing is ever
  followed: a 3xx is an answer like any other, returned as is, so a request (and the signature made for its URL)
  reaches no other host;
- a deadline for the whole exchange: name resolution, connecting, the TLS handshake, sending, and the whole
  answer; the socket's timeout is set to what is left before every send and receive, so a server answering one
  byte at a time cannot stretch it;
- bounded answers (``Limits``): the head's size (h11's ``max_incomplete_event_size`` while it arrives, measured
  again once whole), the number of headers, the body's size (a larger Content-Length is refused before reading),
  and the number of interim (1xx) answers; HTTP/1.0 or HTTP/1.1 only, a final status 200-599;
- every failure is one ``FlagctlError`` with exit code 5 (``TIMEOUT``, ``NETWORK_ERROR``, ``TLS_ERROR``,
  ``BAD_RESPONSE``), or 2 (``BAD_INPUT``) for a request h11 refuses to send; messages are fit for a terminal.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import h11

from flagctl.errors import BAD_INPUT, SERVER, FlagctlError
from flagctl.text import excerpt, safe

# API Gateway's REST integrations answer within 29 s (then 504 themselves): room for that and the network.
DEADLINE_SECONDS = 35.0
DEFAULT_PORTS = {"http": 80, "https": 443}
# Headers this client sets itself: the URL's host, the body's length, one request per connection.
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class Limits:
    head_bytes: int = 32 * 1024
    headers: int = 100
    body_bytes: int = 10 * 1024 * 1024
    interim_answers: int = 8


LIMITS = Limits()


@dataclass(frozen=True)
class Response:
    """A final answer as it came: status, headers (names as sent, values decoded as Latin-1), body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    host_header: str  # as botocore's SigV4 signs it: lowercase, the port unless the scheme's default
    request_target: str
    shown: str  # scheme://host[:port], for messages


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left


class BadAnswer(Exception):
    """What makes an answer unusable, beyond h11's own protocol errors."""


def exchange(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    deadline: float = DEADLINE_SECONDS,
    limits: Limits = LIMITS,
    tls: ssl.SSLContext | None = None,
) -> Response:
    """Send one request to ``url`` and read its whole answer within ``deadline`` seconds."""
    target = _target(url)
    request = _request_events(method, target, headers, body)
    clock = _Deadline(deadline)
    try:
        connection = _connect(target, clock, tls)
        try:
            return _converse(connection, request, clock, limits)
        finally:
            connection.close()
    except TimeoutError as exc:
        raise FlagctlError(
            f"no complete answer from {target.shown} within {_seconds(clock.seconds)}" + _maybe_applied(method),
            SERVER,
            "TIMEOUT",
        ) from exc
    except ssl.SSLError as exc:
        raise FlagctlError(f"TLS with {target.shown} failed: {_reason(exc)}", SERVER, "TLS_ERROR") from exc
    except (h11.RemoteProtocolError, BadAnswer) as exc:
        raise FlagctlError(
            f"bad answer from {target.shown}: {safe(excerpt(str(exc)))}", SERVER, "BAD_RESPONSE"
        ) from exc
    except OSError as exc:
        raise FlagctlError(f"cannot reach {target.shown}: {_reason(exc)}", SERVER, "NETWORK_ERROR") from exc


def _target(url: str) -> _Target:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError as exc:
        raise FlagctlError(f"not a valid port in {safe(url)}", BAD_INPUT, "BAD_INPUT") from exc
    host = parts.hostname
    if parts.scheme not in DEFAULT_PORTS or not host:
        raise FlagctlError(f"not an http(s) URL: {safe(url)}", BAD_INPUT, "BAD_INPUT")
    port = port if port is not None else DEFAULT_PORTS[parts.scheme]
    bracketed = f"[{host}]" if ":" in host else host
    host_header = bracketed if port == DEFAULT_PORTS[parts.scheme] else f"{bracketed}:{port}"
    request_target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _Target(parts.scheme, host, port, host_header, request_target, f"{parts.scheme}://{host_header}")


def _request_events(method: str, target: _Target, headers: Mapping[str, str], body: bytes | None) -> list[Any]:
    """The request as h11 events, checked before anything is sent (h11 refuses control characters, a bad
    target, a header it cannot frame)."""
    sent = [("Host", target.host_header)]
    sent += [(name, value) for name, value in headers.items() if name.lower() not in _OWN_HEADERS]
    if body or method.upper() in _BODY_METHODS:
        sent.append(("Content-Length", str(len(body or b""))))
    sent.append(("Connection", "close"))
    try:
        encoded = [(name.encode("ascii"), value.encode("latin-1")) for name, value in sent]
        request = h11.Request(
            method=method.encode("ascii"), target=target.request_target.encode("ascii"), headers=encoded
        )
    except (h11.LocalProtocolError, UnicodeError) as exc:
        raise FlagctlError(
            f"cannot send this request to {target.shown}: {safe(excerpt(str(exc)))}", BAD_INPUT, "BAD_INPUT"
        ) from exc
    return [request, *([h11.Data(data=body)] if body else []), h11.EndOfMessage()]


def _connect(target: _Target, clock: _Deadline, tls: ssl.SSLContext | None) -> socket.socket:
    connection = _open(_resolve(target, clock), clock)
    if target.scheme == "http":
        return connection
    try:
        wrapped = (tls or ssl.create_default_context()).wrap_socket(
            connection, server_hostname=target.host, do_handshake_on_connect=False
        )
        wrapped.settimeout(clock.remaining())
        wrapped.do_handshake()  # the socket's timeout bounds the whole handshake (Python 3.5+)
    except BaseException:
        connection.close()
        raise
    return wrapped


def _resolve(target: _Target, clock: _Deadline) -> list[tuple[Any, ...]]:
    """getaddrinfo within the deadline: a literal address at once, a name on a thread of its own (the resolver
    has no timeout of ours; a late answer is dropped)."""
    try:
        ipaddress.ip_address(target.host)
    except ValueError:
        pass
    else:
        return socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    found: list[Any] = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM))
        except OSError as exc:
            found.append(exc)

    resolver = threading.Thread(target=lookup, name="flagctl-resolve", daemon=True)
    resolver.start()
    resolver.join(clock.remaining())
    if not found:
        raise TimeoutError
    if isinstance(found[0], OSError):
        raise found[0]
    return list(found[0])


def _open(addresses: Sequence[tuple[Any, ...]], clock: _Deadline) -> socket.socket:
    failure: OSError = OSError("no address")
    for family, kind, protocol, _, address in addresses:
        connection = socket.socket(family, kind, protocol)
        try:
            connection.settimeout(clock.remaining())
            connection.connect(address)
        except TimeoutError:
            connection.close()
            raise
        except OSError as exc:
            connection.close()
            failure = exc
            continue
        return connection
    raise failure


def _converse(connection: socket.socket, request: list[Any], clock: _Deadline, limits: Limits) -> Response:
    incoming = _Incoming(connection, clock, limits)
    _send(connection, b"".join(incoming.protocol.send(event) or b"" for event in request), clock)
    answer = _final_head(incoming, limits)
    headers = tuple((name.decode("latin-1"), value.decode("latin-1")) for name, value in answer.headers.raw_items())
    return Response(answer.status_code, headers, _body(incoming, limits))


class _Incoming:
    """The answer's h11 events, read as needed within the deadline, with the bytes read counted."""

    def __init__(self, connection: socket.socket, clock: _Deadline, limits: Limits) -> None:
        self.protocol = h11.Connection(h11.CLIENT, max_incomplete_event_size=limits.head_bytes)
        self._connection, self._clock, self._received = connection, clock, 0

    def next(self, part: str) -> Any:
        while True:
            try:
                event = self.protocol.next_event()
            except h11.RemoteProtocolError as exc:
                raise BadAnswer(f"{part} ({exc})") from exc
            if event is not h11.NEED_DATA:
                return event
            self._connection.settimeout(self._clock.remaining())
            data = self._connection.recv(_READ_SIZE)
            self._received += len(data)
            self.protocol.receive_data(data)

    def head_bytes(self) -> int:
        """What the heads read so far took: h11 bounds a head only while it is incomplete, so one that arrived
        whole is measured here (every byte read, but what h11 still holds beyond it)."""
        return self._received - len(self.protocol.trailing_data[0])


def _final_head(incoming: _Incoming, limits: Limits) -> h11.Response:
    for _ in range(limits.interim_answers + 1):
        event = incoming.next("no valid HTTP/1.x status line and headers")
        if not isinstance(event, h11.InformationalResponse | h11.Response):
            raise BadAnswer("the connection ended before a whole answer")
        if incoming.head_bytes() > limits.head_bytes:
            raise BadAnswer(f"a head over {limits.head_bytes} bytes")
        if isinstance(event, h11.Response):
            _check_head(event, limits)
            return event
    raise BadAnswer(f"more than {limits.interim_answers} interim (1xx) answers")


def _body(incoming: _Incoming, limits: Limits) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        event = incoming.next("its body is broken")
        if isinstance(event, h11.EndOfMessage):
            return b"".join(parts)
        if not isinstance(event, h11.Data):
            raise BadAnswer("the connection ended before a whole answer")
        size += len(event.data)
        if size > limits.body_bytes:
            raise BadAnswer(f"a body over {limits.body_bytes} bytes")
        parts.append(bytes(event.data))


def _send(connection: socket.socket, data: bytes, clock: _Deadline) -> None:
    view = memoryview(data)
    while view:
        connection.settimeout(clock.remaining())
        view = view[connection.send(view[:_READ_SIZE]) :]


def _check_head(answer: h11.Response, limits: Limits) -> None:
    if answer.http_version not in (b"1.0", b"1.1"):
        raise BadAnswer(f"HTTP/{answer.http_version.decode('latin-1')} is not HTTP/1.x")
    if not 200 <= answer.status_code <= 599:
        raise BadAnswer(f"status {answer.status_code} is not an HTTP status")
    if len(answer.headers) > limits.headers:
        raise BadAnswer(f"more than {limits.headers} headers")
    lengths = [value for name, value in answer.headers if name == b"content-length"]
    if lengths and int(lengths[0]) > limits.body_bytes:
        raise BadAnswer(f"a body over {limits.body_bytes} bytes (Content-Length: {lengths[0].decode('latin-1')})")


def _maybe_applied(method: str) -> str:
    if method.upper() in ("GET", "HEAD"):
        return ""
    return " (a write may have been applied all the same: read the flags or the history before trying again)"


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        text = f"certificate verify failed: {exc.verify_message}"
    return safe(excerpt(str(text)))
