"""One CloudWatch Logs Insights query over the readers' log groups, as ``flagctl report`` and the "readers seen"
check ask it: StartQuery, then GetQueryResults until the query completes, in the logs JSON protocol
(``Logs_20140328.<Action>``), each request signed for ``logs`` by the signer given.

A query that fails, ends other than ``Complete`` or is not complete within ``QUERY_TIMEOUT_SECONDS`` raises
``FlagctlError``: nothing is known from it, never an empty answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flagctl.client import (
    Answer,
    Outgoing,
    Transport,
    configured_region,
    default_signer,
    http_transport,
    region_for,
)
from flagctl.errors import BAD_INPUT, SERVER, FlagctlError

LOGS_TARGET_PREFIX = "Logs_20140328."
LOGS_CONTENT_TYPE = "application/x-amz-json-1.1"
POLL_SECONDS = 1.0
QUERY_TIMEOUT_SECONDS = 120.0
MAX_LOG_GROUPS = 50  # StartQuery's logGroupNames limit
RUNNING = ("Scheduled", "Running", "Unknown")

# (query string, window start, window end: epoch seconds) -> GetQueryResults' ``results`` of the completed query
Query = Callable[[str, float, float], Any]


def logs_insights(
    region: str,
    log_groups: list[str],
    signer: Callable[[Outgoing], Outgoing],
    transport: Transport = http_transport,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Query:
    """A runner of Logs Insights queries over ``log_groups`` in ``region``."""
    url = f"https://logs.{region}.amazonaws.com/"

    def call(action: str, body: dict[str, Any]) -> Mapping[str, Any]:
        headers = {"Content-Type": LOGS_CONTENT_TYPE, "X-Amz-Target": LOGS_TARGET_PREFIX + action}
        answer: Answer = transport(signer(Outgoing("POST", url, headers, json.dumps(body).encode("utf-8"))))
        if answer.status != 200 or not isinstance(answer.body, Mapping):
            raise FlagctlError(
                f"CloudWatch Logs {action} failed (HTTP {answer.status}): {answer.body!r:.200} (reading the readers' "
                "records needs logs:StartQuery and logs:GetQueryResults on their log groups)",
                SERVER,
                "LOGS_ERROR",
            )
        return answer.body

    def query(query_string: str, start: float, end: float) -> Any:
        started = call(
            "StartQuery",
            {"logGroupNames": log_groups, "startTime": int(start), "endTime": int(end), "queryString": query_string},
        )
        query_id = started.get("queryId")
        if not isinstance(query_id, str):
            raise FlagctlError("CloudWatch Logs StartQuery answered no queryId", SERVER, "BAD_ANSWER")
        deadline = clock() + QUERY_TIMEOUT_SECONDS
        while True:
            result = call("GetQueryResults", {"queryId": query_id})
            status = result.get("status")
            if status == "Complete":
                return result.get("results")
            if status not in RUNNING or clock() >= deadline:
                raise FlagctlError(
                    f"the Logs Insights query ended {status!r}: nothing is known of the readers' records",
                    SERVER,
                    "LOGS_ERROR",
                )
            sleep(POLL_SECONDS)

    return query


def first_row(results: Any) -> dict[str, str]:
    """The first row of GetQueryResults' ``results`` (a list of ``{"field", "value"}``) as field -> value; empty
    when there is none (a ``stats`` over no record answers no row)."""
    rows = results if isinstance(results, list) else []
    row = rows[0] if rows and isinstance(rows[0], list) else []
    return {
        cell["field"]: cell["value"]
        for cell in row
        if isinstance(cell, Mapping) and isinstance(cell.get("field"), str) and isinstance(cell.get("value"), str)
    }


def deployed_query(url: str, log_groups: Sequence[str], transport: Transport = http_transport) -> Query | None:
    """The Logs Insights queries of a deployed API at ``url`` over the readers' ``log_groups`` (at most
    ``MAX_LOG_GROUPS``), signed for ``logs`` with the default credentials, in the API's region (the configured one
    when the URL does not say); None without a log group."""
    if not log_groups:
        return None
    if len(log_groups) > MAX_LOG_GROUPS:
        raise FlagctlError(f"at most {MAX_LOG_GROUPS} --log-group", BAD_INPUT, "USAGE")
    import botocore.session  # only for a deployed query: the configured region

    region = region_for(url, configured_region(botocore.session.Session()))
    return logs_insights(region, list(log_groups), default_signer(url, service="logs"), transport)
