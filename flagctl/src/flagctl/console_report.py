"""The console's Lifecycle view: ``GET /_console/report?days=N`` answers what ``flagctl report --json`` prints,
computed by ``flagctl.report`` on the server the page came from. The page renders the stale candidates; it never
decides them.

It is no route of the flags API. ``flagctl console`` answers it itself, under its own rules (its token, its Host and
Origin checks: ``flagctl.console``), with the reads of the log groups it was started with (``--log-group``), or of
the local runner's ``GET /_reads`` when it forwards to one; the local runner answers it in process, with its own
``GET /_reads``. Without a source of reads the report says what the reads need and marks no candidate.

- ``days``: ASCII digits, 1 to ``flagctl.report.MAX_DAYS`` (default ``flagctl.report.DEFAULT_DAYS``); another
  value, the parameter repeated, or any other parameter is 400 ``INVALID_REQUEST`` naming it;
- an API or a log query that fails (or answers what the report cannot read) is 502 ``REPORT_UNAVAILABLE`` with its
  cause: never a traceback, never a report built from half the facts.
"""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from flagctl.client import FlagsClient
from flagctl.errors import FlagctlError
from flagctl.http_server import HttpResponse, error, security_headers
from flagctl.refs import declared_flags
from flagctl.report import DEFAULT_DAYS, MAX_DAYS, ReadsSource, collect
from flagctl.text import excerpt, safe

__all__ = ["DAYS", "REPORT_PATH", "days_of", "report_answer"]

REPORT_PATH = "/_console/report"
DAYS = "days"
_DAYS_TEXT = re.compile(r"[0-9]{1,3}")
INVALID = "INVALID_REQUEST"


def days_of(query: str) -> int | HttpResponse:
    """The window asked by ``query`` (``days=N``; none: the default), or the 400 refusing it."""
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query), max_num_fields=8)
    except ValueError:
        return error(HTTPStatus.BAD_REQUEST, INVALID, f"the query must be {DAYS}=N, got {safe(excerpt(query, 80))!r}")
    others = sorted({name for name, _ in pairs if name != DAYS})
    if others:
        shown = ", ".join(repr(safe(excerpt(name, 40))) for name in others)
        return error(HTTPStatus.BAD_REQUEST, INVALID, f"unknown query parameter {shown}: the report takes {DAYS} only")
    values = [value for _, value in pairs]
    if len(values) > 1:
        return error(HTTPStatus.BAD_REQUEST, INVALID, f"{DAYS} is given {len(values)} times: give it once")
    if not values:
        return DEFAULT_DAYS
    if not _DAYS_TEXT.fullmatch(values[0]) or not 1 <= int(values[0]) <= MAX_DAYS:
        return error(
            HTTPStatus.BAD_REQUEST,
            INVALID,
            f"{DAYS} must be an integer from 1 to {MAX_DAYS}, got {safe(excerpt(values[0], 40))!r}",
        )
    return int(values[0])


def report_answer(query: str, client: FlagsClient, reads: ReadsSource | None, unknown_reads: str) -> HttpResponse:
    """The report for ``query``'s window as JSON, from the declarations and history ``client`` reads and the reads
    ``reads`` gives (None: unknown, for the reason ``unknown_reads`` says)."""
    days = days_of(query)
    if isinstance(days, HttpResponse):
        return days
    try:
        report: dict[str, Any] = collect(client, declared_flags(None, client), days, reads, unknown_reads)
    except FlagctlError as exc:
        return error(HTTPStatus.BAD_GATEWAY, "REPORT_UNAVAILABLE", f"the report could not be made: {exc}")
    body = json.dumps(report, separators=(",", ":"), default=str).encode("utf-8")
    headers = [("Content-Type", "application/json"), ("Cache-Control", "no-store"), *security_headers()]
    return HttpResponse(int(HTTPStatus.OK), headers, body)
