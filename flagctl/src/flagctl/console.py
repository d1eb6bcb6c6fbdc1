"""``flagctl console``: the console's pages on 127.0.0.1, and its API calls signed and sent to the deployed API.

The browser never holds an AWS credential: it talks to this process, which signs each call with SigV4 from the
operator's own credential chain (the signer flagctl's other commands use) and forwards it. So that it signs for
no one else:

- it listens on 127.0.0.1 only, and answers only ``Host: 127.0.0.1:<port>`` / ``localhost:<port>`` and, when
  sent, the same ``Origin`` (``flagctl.http_server.refuse_foreign``, the local runner's own check: DNS
  rebinding and other sites' pages are refused);
- every API call must carry ``X-Console-Token``, the random token of this start (``secrets.token_urlsafe``),
  compared in constant time; without it, 401 ``CONSOLE_TOKEN_REQUIRED``. The page learns it from the URL's
  fragment (``#token=...``), which browsers never send to a server or put in a Referer;
- only the API's own routes (``singleton_flags_service.api.routes.ROUTES``) are forwarded; the one path it
  answers itself is the Lifecycle view's report (``flagctl.console_report``: GET only, with the token, computed from
  the same signed API calls and, started with ``--log-group``, Logs Insights over those log groups); any other
  path is 404;
- a path or query with a byte outside printable ASCII (not percent-encoded, as a browser sends it) is 400
  ``BAD_REQUEST``, never forwarded;
- only the end-to-end headers the API reads are forwarded (Accept, Content-Type, If-Match, If-None-Match,
  Idempotency-Key): hop-by-hop headers, cookies, the token, the local runner's X-Local-Actor and any incoming
  Authorization or X-Amz-* header are dropped before the request is signed afresh (the caller is the operator's
  signature, never a header).

Nor does it trust the API's answers: the call goes through ``flagctl.http_client`` (flagctl's own strict
client: a deadline for the whole exchange, bounded answers), and

- a redirect (any 3xx but 304) is never followed nor passed on: the page gets 502 ``UPSTREAM_REDIRECT`` naming
  the Location as text, and no ``Location`` header it could follow;
- an answer that cannot be read (malformed, oversized, cut short, a header the page reads holding a control
  character) is 502 ``UPSTREAM_BAD_RESPONSE``; no whole
  answer within the deadline, 504 ``UPSTREAM_TIMEOUT``; an API that cannot be reached, 502
  ``UPSTREAM_UNREACHABLE``; a request the client cannot send as it came, 400 ``BAD_REQUEST``: always the error
  contract, never a traceback or a dropped connection.
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Callable, Sequence
from http import HTTPStatus
from urllib.parse import urlsplit

from flagctl.client import (
    Answer,
    FlagsClient,
    Outgoing,
    answer_body,
    default_signer,
    is_loopback,
)
from flagctl.console_report import REPORT_PATH, report_answer
from flagctl.errors import FlagctlError
from flagctl.http_client import DEADLINE_SECONDS, exchange
from flagctl.http_server import HttpResponse, Request, error, security_headers
from flagctl.report import ReadsSource, runner_reads
from flagctl.static import console_page
from flagctl.text import excerpt, safe
from singleton_flags_service.api.routes import ROUTES, RouteMatch, match_route

TOKEN_HEADER = "X-Console-Token"  # noqa: S105 - a header name, not a secret
TOKEN_BYTES = 32
UPSTREAM_TIMEOUT_SECONDS = DEADLINE_SECONDS  # a whole exchange; API Gateway's REST integrations stop at 29 s
# What a request of the API may carry end to end; everything else stays here.
FORWARDED_REQUEST_HEADERS = ("accept", "content-type", "if-match", "if-none-match", "idempotency-key")
# What the API's answers carry that the page reads (the error contract, ETag, the replay and retry hints).
FORWARDED_RESPONSE_HEADERS = (
    "content-type",
    "etag",
    "cache-control",
    "retry-after",
    "allow",
    "idempotent-replayed",
    "x-amzn-requestid",
)

# What a request target may hold as sent on (RFC 3986: printable ASCII; anything else percent-encoded, as
# browsers send it). The upstream client (h11) refuses the rest.
_URI_TEXT = re.compile(r"[\x21-\x7e]*")

# How a failed exchange with the API reaches the page: (status, code) by flagctl's error code.
UPSTREAM_FAILURES = {
    "TIMEOUT": (HTTPStatus.GATEWAY_TIMEOUT, "UPSTREAM_TIMEOUT"),
    "BAD_RESPONSE": (HTTPStatus.BAD_GATEWAY, "UPSTREAM_BAD_RESPONSE"),
    "BAD_INPUT": (HTTPStatus.BAD_REQUEST, "BAD_REQUEST"),
}
UNREACHABLE = (HTTPStatus.BAD_GATEWAY, "UPSTREAM_UNREACHABLE")  # NETWORK_ERROR, TLS_ERROR
# A header value as RFC 9110 has it (visible characters, obs-text, spaces and tabs): h11 lets other control
# characters through, and the page's browser would refuse the whole answer for one.
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")

Signer = Callable[[Outgoing], Outgoing]
Upstream = Callable[[Outgoing], HttpResponse]
# What the Lifecycle view says when the console was started with no log group to read the reads from.
READS_NEED_LOG_GROUPS = (
    "a deployed stage's reads are its readers' ServedVersion records in CloudWatch Logs: start flagctl console with "
    "--log-group NAME for each readers' log group (the read function's, your functions' with metrics=True); the "
    "caller needs logs:StartQuery and logs:GetQueryResults on them"
)


def _as_is(outgoing: Outgoing) -> Outgoing:
    return outgoing


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def send_upstream(outgoing: Outgoing, timeout: float = UPSTREAM_TIMEOUT_SECONDS) -> HttpResponse:
    """The request over ``flagctl.http_client``; the answer's status, end-to-end headers and body as they came,
    or the error contract for a redirect, an answer that cannot be read, or none within ``timeout`` seconds."""
    try:
        answer = exchange(outgoing.method, outgoing.url, outgoing.headers, outgoing.body, deadline=timeout)
    except FlagctlError as exc:
        status, code = UPSTREAM_FAILURES.get(exc.code, UNREACHABLE)
        return error(status, code, str(exc))
    if 300 <= answer.status < 400 and answer.status != HTTPStatus.NOT_MODIFIED:
        location = answer.header("Location")
        where = f"to {safe(excerpt(location))}" if location is not None else "without a Location"
        return error(
            HTTPStatus.BAD_GATEWAY,
            "UPSTREAM_REDIRECT",
            f"the API answered {answer.status} with a redirect {where}: the console never follows one "
            "(it would send the signed call elsewhere); check the URL flagctl console was started with",
        )
    headers = [(name, value) for name, value in answer.headers if name.lower() in FORWARDED_RESPONSE_HEADERS]
    unfit = next((name for name, value in headers if not _FIELD_VALUE.fullmatch(value)), None)
    if unfit is not None:
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(outgoing.url))
        return error(
            HTTPStatus.BAD_GATEWAY,
            "UPSTREAM_BAD_RESPONSE",
            f"bad answer from {safe(origin)}: its {safe(unfit)} header holds a control character",
        )
    return HttpResponse(answer.status, [*headers, *security_headers()], answer.body)


def _header_values(headers: Sequence[tuple[str, str]], name: str) -> list[str]:
    return [value for key, value in headers if key.lower() == name.lower()]


class ConsoleProxy:
    """``handle(request)``: a console page, a refusal, or the API's answer to the signed, forwarded call."""

    def __init__(
        self,
        upstream_url: str,
        token: str,
        *,
        signer: Signer | None,
        upstream: Upstream = send_upstream,
        reads: ReadsSource | None = None,
    ) -> None:
        """``reads``: where the Lifecycle view's reads come from (``log_group_reads``); None: the local runner's
        ``GET /_reads`` when ``upstream_url`` is one (loopback), else unknown."""
        self._base = upstream_url.rstrip("/")
        self._token = token.encode("utf-8")
        self._signer = signer
        self._upstream = upstream
        # the report's API calls: the same upstream, each signed as a forwarded call is (by ``_answer``)
        self._client = FlagsClient(self._base, transport=self._answer, signer=_as_is)
        self._reads = reads if reads is not None or not is_loopback(self._base) else runner_reads(self._client)

    def handle(self, request: Request) -> HttpResponse:
        page = console_page(request.method, request.raw_path)
        if page is not None:
            return page
        if request.raw_path == REPORT_PATH:
            return self._report(request)
        if not isinstance(match_route(ROUTES, request.method, request.raw_path), RouteMatch):
            return error(
                HTTPStatus.NOT_FOUND,
                "NOT_FOUND",
                f"{request.method} {request.raw_path} is not a route of the flags API: the console forwards those only",
            )
        refused = self._refused(request)
        return refused if refused is not None else self._upstream(self._outgoing(request))

    def _refused(self, request: Request) -> HttpResponse | None:
        """The rules every call the console answers for the API obeys: printable ASCII, then the token."""
        if not (_URI_TEXT.fullmatch(request.raw_path) and _URI_TEXT.fullmatch(request.query)):
            return error(
                HTTPStatus.BAD_REQUEST,
                "BAD_REQUEST",
                "the path and query must be printable ASCII: percent-encode any other character (%C3%A9 for é)",
            )
        if not self._token_matches(request.headers):
            return error(
                HTTPStatus.UNAUTHORIZED,
                "CONSOLE_TOKEN_REQUIRED",
                f"send {TOKEN_HEADER} with the token of the URL flagctl console printed (#token=...)",
            )
        return None

    def _report(self, request: Request) -> HttpResponse:
        """The Lifecycle view's report, under the rules of a forwarded call: printable ASCII, the token, GET."""
        refused = self._refused(request)
        if refused is not None:
            return refused
        if request.method != "GET":
            refused = error(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                f"{safe(excerpt(request.method, 20))} is not supported on {REPORT_PATH}; use GET",
            )
            return HttpResponse(refused.status, [*refused.headers, ("Allow", "GET")], refused.body)
        return report_answer(request.query, self._client, self._reads, READS_NEED_LOG_GROUPS)

    def _answer(self, outgoing: Outgoing) -> Answer:
        """The upstream's answer to one of the report's own calls (signed as a forwarded call is), read as flagctl
        reads the API's."""
        response = self._upstream(self._signer(outgoing) if self._signer is not None else outgoing)
        return Answer(
            response.status, dict(response.headers), answer_body(response.status, response.body, outgoing.url)
        )

    def _token_matches(self, headers: Sequence[tuple[str, str]]) -> bool:
        sent = _header_values(headers, TOKEN_HEADER)
        return len(sent) == 1 and hmac.compare_digest(sent[0].encode("utf-8"), self._token)

    def _outgoing(self, request: Request) -> Outgoing:
        headers = {name: value for name, value in request.headers if name.lower() in FORWARDED_REQUEST_HEADERS}
        url = self._base + request.raw_path + (f"?{request.query}" if request.query else "")
        outgoing = Outgoing(request.method, url, headers, request.body or None)
        return self._signer(outgoing) if self._signer is not None else outgoing


def signer_for(url: str) -> Signer | None:
    """botocore's default chain and region for ``url``; for a loopback URL (the local runner, which needs no
    signature) none when no credentials are found."""
    try:
        return default_signer(url)
    except FlagctlError:
        if is_loopback(url):
            return None
        raise


def console_url(port: int, token: str) -> str:
    return f"http://127.0.0.1:{port}/#token={token}"
