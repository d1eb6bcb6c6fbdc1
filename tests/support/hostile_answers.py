"""What a hostile or broken API may answer: a seeded generator of HTTP answers as raw bytes, each with what a
client must make of it.

``hostile_answers(seed, count, redirect_to)`` draws ``count`` answers with ``random.Random(seed)`` from these
families: garbage or wrong status lines, HTTP/0.9 (a body without a status line), heads over the size or header
limits, bodies cut short, bad chunked framing, JSON nested too deep, bodies over the size limit, too many
interim (1xx) answers, statuses outside 200-599, redirects (to ``redirect_to``, Locations with control and
bidirectional characters, or none), and well-formed answers whose status line, headers and body carry control,
C1, bidirectional and other format characters. ``kind`` says what the answer is: ``broken`` (no usable answer),
``redirect``, or ``answer`` (well-formed; ``body`` is the JSON value it carries, if any).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

BROKEN, REDIRECT, ANSWER = "broken", "redirect", "answer"
HEAD_LIMIT_BYTES = 32 * 1024  # flagctl.http_client.LIMITS, as a server would have to exceed them
HEADER_LIMIT = 100
BODY_LIMIT_BYTES = 10 * 1024 * 1024
JSON_DEPTH_LIMIT = 64
INTERIM_LIMIT = 8

# Text a terminal would obey: C0 and C1 controls, DEL, bidirectional overrides and isolates, marks, zero-width and
# tag characters, line separators, a lone surrogate (JSON can carry one as an escape).
UNSAFE_TEXT = (
    "\x1b[2J\x1b[H",
    "\x1b]0;owned\x07",
    "\x9b31m",
    "\x85",
    "\x7f",
    "\r",
    "\x00",
    "\t",
    "\u202e",
    "\u202a",
    "\u2066",
    "\u2069",
    "\u200e",
    "\u200f",
    "\u061c",
    "\u200b",
    "\ufeff",
    "\u2028",
    "\U000e0001",
    "\ud800",
)
UNSAFE_BYTES = (b"\x1b[31m", b"\x1b]0;x\x07", b"\x9b", b"\x85", b"\xc2\x9b", b"\xe2\x80\xae", b"\x7f", b"\x07")


@dataclass(frozen=True)
class HostileAnswer:
    id: str
    chunks: tuple[bytes, ...]
    kind: str
    status: int | None = None  # a well-formed answer's status (a redirect's, one with JSON nested too deep)
    body: Any = None  # the JSON value of a well-formed answer's body (None: empty or not JSON)
    json_body: bool = False
    location: str | None = None


def hostile_answers(seed: int, count: int, redirect_to: str) -> list[HostileAnswer]:
    rng = random.Random(seed)  # noqa: S311 - reproducible test cases, not secrets
    families: list[Callable[[random.Random, int, str], HostileAnswer]] = [
        _garbage_status_line,
        _http_0_9,
        _oversized_head,
        _truncated_body,
        _bad_chunking,
        _deep_json,
        _huge_body,
        _interim_flood,
        _status_out_of_range,
        _redirect,
        _unsafe_answer,
        _unsafe_answer,
    ]
    return [rng.choice(families)(rng, index, redirect_to) for index in range(count)]


def unsafe_text(rng: random.Random, length: int = 3) -> str:
    words = ["flag", "ok", "x", "done", "déjà", "新"]
    return "".join(rng.choice(UNSAFE_TEXT) + rng.choice(words) for _ in range(length))


def _head(status_line: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    return status_line + b"\r\n" + b"".join(name + b": " + value + b"\r\n" for name, value in headers) + b"\r\n"


def _json_bytes(value: Any) -> bytes:
    # ensure_ascii: lone surrogates travel as \\uXXXX escapes; the rest of the text as JSON escapes too
    return json.dumps(value).encode("ascii")


def _sized(status: int, body: bytes, *extra: tuple[bytes, bytes], reason: bytes = b"X") -> bytes:
    headers = [(b"Content-Type", b"application/json"), (b"Content-Length", str(len(body)).encode()), *extra]
    return _head(b"HTTP/1.1 %d %s" % (status, reason), headers) + body


def _garbage_status_line(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    fixed = [
        b"",
        b"HTTP/2 200 OK",
        b"HTTP/2.0 200 OK",
        b"HTTP/0.9 200 OK",
        b"HTTP/1.1 20 OK",
        b"HTTP/1.1 2000 OK",
        b"HTTP/1.1 2x0 OK",
        b"HTTP/1.1  200 OK",
        b"http/1.1 200 OK",
        b"ICY 200 OK",
        b"HTTP/1.1\x00200 OK",
        b"HTTP/1.1 200\x00OK",
        b"\x1b[2JHTTP/1.1 200 OK",
        b"HTTP/1.1 -200 OK",
    ]
    line = (
        rng.choice(fixed)
        if rng.random() < 0.6
        else bytes([rng.choice(b"\x00\x01\x1b\x7f\x80\x9b\xff{<a ")]) + rng.randbytes(rng.randint(0, 60))
    ).replace(b"\r\n\r\n", b"")
    body = _json_bytes({"flags": {"signup_enabled": True}, "version": 1})
    ending = rng.choice([b"\r\n\r\n" + body, b"\r\nContent-Length: 2\r\n\r\n{}", b""])
    return HostileAnswer(f"{index}-status-line", (line + ending,), BROKEN)


def _http_0_9(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    body = rng.choice(
        [
            _json_bytes({"flags": {"signup_enabled": True}, "version": 1, "reason": "STATIC"}),
            b"<html><body>\x1b[2J" + rng.choice(UNSAFE_BYTES) + b"</body></html>",
            rng.randbytes(rng.randint(1, 200)),
        ]
    )
    return HostileAnswer(f"{index}-http-0.9", (body,), BROKEN)


def _oversized_head(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    if rng.random() < 0.5:
        headers = [(b"X-Many-%d" % number, b"v") for number in range(HEADER_LIMIT + rng.randint(1, 300))]
        kind = "many-headers"
    else:
        headers = [(b"X-Huge", b"h" * (HEAD_LIMIT_BYTES + rng.randint(1, 3 * HEAD_LIMIT_BYTES)))]
        kind = "huge-head"
    return HostileAnswer(
        f"{index}-{kind}", (_head(b"HTTP/1.1 200 OK", [*headers, (b"Content-Length", b"2")]) + b"{}",), BROKEN
    )


def _truncated_body(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    body = _json_bytes({"flags": {"signup_enabled": True}, "version": 1, "reason": unsafe_text(rng)})
    cut = rng.randint(0, len(body) - 1)
    head = _head(b"HTTP/1.1 200 OK", [(b"Content-Type", b"application/json"), (b"Content-Length", b"%d" % len(body))])
    return HostileAnswer(f"{index}-truncated", (head + body[:cut],), BROKEN)


def _bad_chunking(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    framing = rng.choice(
        [
            b"zz\r\n{}\r\n0\r\n\r\n",
            b"-2\r\n{}\r\n0\r\n\r\n",
            b"\r\n{}\r\n0\r\n\r\n",
            b"2\r\n{}XX0\r\n\r\n",
            b"2\r\n{}\r\n",  # no last chunk
            b"ffff\r\n{}",  # cut short
            b"fffffffffffffffffffff\r\n{}",
            b"2\r\n{}\r\n0\r\n",  # no end of trailers
            b"0x2\r\n{}\r\n0\r\n\r\n",
            b"2\x00\r\n{}\r\n0\r\n\r\n",
        ]
    )
    encoding = rng.choice([b"chunked", b"gzip, chunked", b"chunked, gzip", b"identity", b"chunked\x1b"])
    head = _head(b"HTTP/1.1 200 OK", [(b"Content-Type", b"application/json"), (b"Transfer-Encoding", encoding)])
    return HostileAnswer(f"{index}-chunking", (head + framing,), BROKEN)


def deep_json(depth: int, rng: random.Random | None = None) -> bytes:
    opening = [b'{"a":' if rng is not None and rng.random() < 0.5 else b"[" for _ in range(depth)]
    closing = [b"}" if part.startswith(b"{") else b"]" for part in reversed(opening)]
    return b"".join(opening) + b"1" + b"".join(closing)


def _deep_json(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    depth = rng.choice([JSON_DEPTH_LIMIT + 1, 100, 999, 1000, 1001, 5000, 100_000])
    status = rng.choice([200, 200, 400, 500])
    return HostileAnswer(f"{index}-deep-{depth}", (_sized(status, deep_json(depth, rng)),), BROKEN, status)


def _huge_body(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    length = BODY_LIMIT_BYTES + rng.choice([1, 1000, 10**9, 10**30])
    head = _head(b"HTTP/1.1 200 OK", [(b"Content-Type", b"application/json"), (b"Content-Length", b"%d" % length)])
    return HostileAnswer(f"{index}-huge-body", (head + b"[1,2,3",), BROKEN)


def _interim_flood(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    interim = _head(b"HTTP/1.1 %d Wait" % rng.choice([100, 102, 103]), [])
    final = _sized(200, _json_bytes({"flags": {}, "version": 1}))
    return HostileAnswer(f"{index}-interim-flood", (interim * (INTERIM_LIMIT + rng.randint(1, 50)) + final,), BROKEN)


def _status_out_of_range(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    status = rng.choice([0, 1, 99, 600, 700, 999])
    line = b"HTTP/1.1 %03d Odd" % status
    return HostileAnswer(f"{index}-status-{status}", (_head(line, [(b"Content-Length", b"2")]) + b"{}",), BROKEN)


def _redirect(rng: random.Random, index: int, to: str) -> HostileAnswer:
    status = rng.choice([300, 301, 302, 303, 305, 307, 308])
    target = (to + "/flags" + rng.choice(["", "?next=1", "#x"])).encode("ascii")
    decoration = rng.choice([b"", *UNSAFE_BYTES])
    location = rng.choice([target, target + decoration, decoration + target, None])
    headers = [(b"Content-Type", b"text/html"), (b"Content-Length", b"0")]
    if location is not None:
        headers.append((b"Location", location))
    return HostileAnswer(
        f"{index}-redirect-{status}",
        (_head(b"HTTP/1.1 %d Moved" % status, headers),),
        REDIRECT,
        status,
        location=None if location is None else location.decode("latin-1"),
    )


def _unsafe_answer(rng: random.Random, index: int, _to: str) -> HostileAnswer:
    status = rng.choice([200, 200, 200, 201, 400, 404, 409, 412, 429, 500, 503])
    reason = b"OK" + rng.choice([b"", *UNSAFE_BYTES])
    extra = (b"X-Note", rng.choice(UNSAFE_BYTES) + b"note")
    shape = rng.choice(["flags", "flag", "error", "string", "list", "text", "bad-utf8", "empty"])
    body: Any = None
    if shape == "flags":
        body = {
            "flags": {f"flag{rng.choice(UNSAFE_TEXT)}": unsafe_text(rng), "plain": rng.randint(0, 9)},
            "version": rng.choice([1, unsafe_text(rng, 1)]),
            "reason": unsafe_text(rng),
            "fetched_at": unsafe_text(rng, 1),
        }
    elif shape == "flag":
        body = {"name": unsafe_text(rng, 1), "value": unsafe_text(rng), "version": 2, "reason": unsafe_text(rng)}
    elif shape == "error":
        body = {"error": {"code": unsafe_text(rng, 1), "message": unsafe_text(rng), "detail": unsafe_text(rng, 1)}}
    elif shape == "string":
        body = unsafe_text(rng, 4)
    elif shape == "list":
        body = [unsafe_text(rng, 1), {"k": unsafe_text(rng, 2)}]
    if body is not None:
        raw = _json_bytes(body)
    elif shape == "text":
        raw = b"<h1>" + b"".join(rng.choice(UNSAFE_BYTES) for _ in range(4)) + b"</h1>"
    elif shape == "bad-utf8":
        raw = b'{"flags": "\xff\xfe' + rng.choice(UNSAFE_BYTES) + b'"}'
    else:
        raw = b""
    chunks = (_sized(status, raw, extra, reason=reason),)
    if rng.random() < 0.3:  # the same, chunked and in small pieces
        head = _head(b"HTTP/1.1 %d %s" % (status, reason), [(b"Transfer-Encoding", b"chunked"), extra])
        pieces = [raw[start : start + 7] for start in range(0, len(raw), 7)]
        chunks = (head, *(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces), b"0\r\n\r\n")
    return HostileAnswer(f"{index}-answer-{status}-{shape}", chunks, ANSWER, status, body, body is not None)
