"""The HTTP side of the local runner: stdlib ThreadingHTTPServer on loopback, moving bytes to ``LocalApi``."""

from __future__ import annotations

import re
import sys
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol
from urllib.parse import urlsplit

from local.gateway import HttpResponse, Request
from local.web import error, refuse_foreign

LOOPBACK = "127.0.0.1"
MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit


_DIGITS = re.compile(rb"[0-9]{1,19}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
# What the standard library's own refusals (bad request line, too many or too long headers) are called here.
_STDLIB_ERRORS = {
    400: "BAD_REQUEST",
    408: "REQUEST_TIMEOUT",
    413: "REQUEST_TOO_LARGE",
    414: "URI_TOO_LONG",
    431: "REQUEST_HEADER_FIELDS_TOO_LARGE",
    501: "NOT_IMPLEMENTED",
    505: "HTTP_VERSION_NOT_SUPPORTED",
}


class Answers(Protocol):
    """What the server hands each request to: the local API, or flagctl console's proxy."""

    def handle(self, request: Request) -> HttpResponse: ...


class BodyTooLarge(ValueError):
    pass


class MalformedRequest(ValueError):
    """A framing error (Content-Length, chunk size) that makes the body unreadable: 400, never 413."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every answer carries Content-Length
    server_version = "singleton-flags-local"

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            total = 0
            while True:
                size_text = self.rfile.readline().split(b";")[0].strip() or b"0"
                if not _HEX.fullmatch(size_text):
                    raise MalformedRequest(f"malformed chunk size {size_text[:20]!r}")
                size = int(size_text, 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY_BYTES:
                    raise BodyTooLarge(total)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        lengths = self.headers.get_all("Content-Length") or []
        if len({value.strip() for value in lengths}) > 1:
            raise MalformedRequest("Content-Length is given more than once, with different values")
        text = (lengths[0].strip() if lengths else "0").encode("latin-1", errors="replace")
        if not _DIGITS.fullmatch(text):
            raise MalformedRequest(f"malformed Content-Length {text[:20]!r}: it must be ASCII digits")
        length = int(text)
        if length > MAX_BODY_BYTES:
            raise BodyTooLarge(length)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        started = time.monotonic()
        try:
            body = self._read_body()
        except BodyTooLarge:
            self.close_connection = True
            self._send(error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "REQUEST_TOO_LARGE", "request body over 10 MB"))
            return
        except MalformedRequest as exc:
            self.close_connection = True
            self._send(error(HTTPStatus.BAD_REQUEST, "BAD_REQUEST", str(exc)))
            return
        foreign = refuse_foreign(list(self.headers.items()), self.server.port)  # type: ignore[attr-defined]
        if foreign is not None:
            self._send(foreign)
            return
        target = urlsplit(self.path)
        request = Request(
            method=self.command,
            raw_path=target.path or "/",
            query=target.query,
            headers=list(self.headers.items()),
            body=body,
            client_ip=self.client_address[0],
        )
        response = self.server.api.handle(request)  # type: ignore[attr-defined]
        self._send(response)
        elapsed_ms = (time.monotonic() - started) * 1000
        sys.stderr.write(f"{self.command} {self.path} -> {response.status} ({elapsed_ms:.1f} ms)\n")

    def _send(self, response: HttpResponse) -> None:
        self.send_response(response.status)
        no_body = self.command == "HEAD" or response.status in (204, 304) or response.status < 200
        for name, value in response.headers:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        if not no_body or self.command == "HEAD":
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if not no_body:
            self.wfile.write(response.body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (a malformed request line, more than 100 headers, a header line
        over 64 KiB) in the API's JSON error contract instead of its HTML page."""
        self.close_connection = True
        status = HTTPStatus(code)
        text = message or status.phrase
        if not self.command:  # the request line itself was unreadable: answer as HTTP/1.1 anyway
            self.request_version = "HTTP/1.1"
        self._send(error(status, _STDLIB_ERRORS.get(code, status.name), text))

    def __getattr__(self, name: str) -> object:
        # BaseHTTPRequestHandler looks up do_<METHOD>: every method goes to the route table (404/405 there)
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # _dispatch writes one line per request, with its duration

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True  # Ctrl-C does not wait for keep-alive connections

    def __init__(self, port: int, api: Answers | None = None) -> None:
        self.api = api  # set once the functions are loaded, before serving
        super().__init__((LOOPBACK, port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"
