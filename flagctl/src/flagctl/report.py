"""``flagctl report [--days N]``: per flag its declared lifecycle, its last change and its reads, and the stale
candidates.

- the lifecycle: from ``--declarations FILE`` or the API's GET /flags/declarations (``flagctl.refs``);
- the last change: the newest audit record (GET /flags/history, followed page by page) that changed the flag;
- the reads in the last N days: the readers' telemetry. Locally, the runner's runner-only ``GET /_reads`` (what
  it counted since it started, the window shown; a flag last read more than N days ago counts none). Deployed,
  CloudWatch Logs Insights over the readers' ``ServedVersion`` records (their ``flag_reads`` property), in the
  log groups given with ``--log-group`` (``flagctl.insights``: StartQuery, then GetQueryResults until complete).
  Counts are lower bounds: an environment reclaimed before its next flush never printed its last reads, a read
  of every flag at once (``GET /flags``, the bulk OFREP evaluation) names no flag and is counted apart (``*``),
  and a reader without metrics prints nothing.

A stale candidate was never read in the window, by name, while its reads were known. A flag unchanged for long
is not one for that alone, and a permanent flag (``flagctl.refs.DeclaredFlag.permanent``) never is one. A
candidate is a question to its owner, never a removal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flagctl.client import (
    FlagsClient,
    Transport,
    http_transport,
    is_loopback,
)
from flagctl.errors import SERVER, FlagctlError
from flagctl.insights import MAX_LOG_GROUPS, Query, deployed_query, first_row
from flagctl.refs import DeclaredFlag
from flagctl.text import safe, table

__all__ = [
    "ALL_FLAGS",
    "DAY_SECONDS",
    "DEFAULT_DAYS",
    "MAX_DAYS",
    "MAX_LOG_GROUPS",
    "READS_NEED_LOG_GROUPS",
    "Reads",
    "ReadsSource",
    "build",
    "collect",
    "insights_query",
    "last_changes",
    "log_group_reads",
    "logs_insights_reads",
    "query_counts",
    "render",
    "runner_reads",
]

READS_PATH = "/_reads"
ALL_FLAGS = "*"
DAY_SECONDS = 86400
DEFAULT_DAYS = 30
MAX_DAYS = 365
HISTORY_PAGE = 100
MAX_HISTORY_PAGES = 100


@dataclass(frozen=True)
class Reads:
    """Reads per flag name (``*``: reads of every flag at once) since ``since`` (epoch seconds), and where from."""

    by_flag: Mapping[str, int]
    since: float
    source: str


ReadsSource = Callable[[list[DeclaredFlag], float], Reads]  # (declared flags, window start) -> Reads


def runner_reads(client: FlagsClient) -> ReadsSource:
    """What the local runner counted (``GET /_reads``); its window starts when it started, if after ``since``."""

    def reads(declared: list[DeclaredFlag], since: float) -> Reads:
        answer = client.request("GET", READS_PATH)
        flags = answer.body.get("flags") if isinstance(answer.body, Mapping) else None
        started = answer.body.get("since") if isinstance(answer.body, Mapping) else None
        if answer.status != 200 or not isinstance(flags, Mapping) or not isinstance(started, (int, float)):
            raise FlagctlError(
                f"the runner's {READS_PATH} did not answer its reads (HTTP {answer.status}): is this the local runner?",
                SERVER,
                "BAD_ANSWER",
            )
        counted = {
            name: int(tally["reads"])
            for name, tally in flags.items()
            if isinstance(tally, Mapping)
            and isinstance(tally.get("reads"), int)
            and (not isinstance(tally.get("last_read_at"), (int, float)) or tally["last_read_at"] >= since)
        }
        # the runner's counts are totals since it started: a flag last read before the window counts none, and the
        # window shown is the runner's (longer than asked when it has run for longer)
        return Reads(counted, float(started), "the local runner's read function (GET /_reads)")

    return reads


def insights_query(declared: list[DeclaredFlag]) -> str:
    """The Logs Insights query: the readers' ServedVersion records, their ``flag_reads`` summed per flag."""
    sums = ", ".join(f"sum(`flag_reads.{flag.name}`) as `{flag.name}`" for flag in declared)
    return f"filter ispresent(ServedVersion) | stats {sums}"


def logs_insights_reads(query: Query, groups: int, clock: Callable[[], float] = time.time) -> ReadsSource:
    """The readers' reads from CloudWatch Logs Insights (``query``: over ``groups`` log groups)."""

    def reads(declared: list[DeclaredFlag], since: float) -> Reads:
        results = query(insights_query(declared), since, clock())
        return Reads(query_counts(results), since, f"CloudWatch Logs Insights ({groups} log group(s))")

    return reads


def query_counts(results: Any) -> dict[str, int]:
    """GetQueryResults' one ``stats`` row as reads per flag."""
    counts: dict[str, int] = {}
    for name, value in first_row(results).items():
        try:
            counts[name] = int(float(value))
        except ValueError:
            continue
    return counts


def last_changes(client: FlagsClient, names: set[str]) -> tuple[dict[str, dict[str, Any]], bool]:
    """Per flag, the newest audit record that changed it (``version``, ``at``, ``actor``, ``kind``), following the
    history's pages until every name is found or none is left; and whether the whole trail was read."""
    found: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    for _ in range(MAX_HISTORY_PAGES):
        answer = client.history(HISTORY_PAGE, cursor)
        if answer.status != 200 or not isinstance(answer.body, Mapping):
            raise FlagctlError(f"GET /flags/history answered HTTP {answer.status}", SERVER, "BAD_ANSWER")
        for record in answer.body.get("records") or []:
            changes = record.get("changes") if isinstance(record, Mapping) else None
            for name in changes if isinstance(changes, Mapping) else ():
                if name in names and name not in found:
                    found[name] = {key: record.get(key) for key in ("version", "at", "actor", "kind")}
        cursor = answer.body.get("next_cursor")
        if not cursor or found.keys() >= names:
            return found, not cursor
    return found, False


def build(
    declared: list[DeclaredFlag],
    changes: Mapping[str, Mapping[str, Any]],
    reads: Reads | None,
    days: int,
    unknown_reads: str | None = None,
) -> dict[str, Any]:
    """The report, as ``--json`` prints it."""
    flags = []
    for flag in declared:
        count = None if reads is None else reads.by_flag.get(flag.name, 0)
        candidate = count == 0 and not flag.permanent
        why = None
        if candidate:
            why = f"never read by name in the window; ask {flag.owner or 'its owner'} whether code still needs it"
        flags.append(
            {
                "name": flag.name,
                **flag.as_doc(),
                "last_change": changes.get(flag.name),
                "reads": count,
                "stale_candidate": candidate,
                "why": why,
            }
        )
    return {
        "days": days,
        "window_start": None if reads is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(reads.since)),
        "reads_source": None if reads is None else reads.source,
        "reads_unknown": unknown_reads,
        "reads_of_every_flag": None if reads is None else reads.by_flag.get(ALL_FLAGS, 0),
        "counts_are_lower_bounds": True,
        "flags": flags,
    }


def collect(
    client: FlagsClient,
    declared: list[DeclaredFlag],
    days: int,
    reads: ReadsSource | None,
    unknown_reads: str | None,
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """The report of the last ``days`` days: the last changes from ``client``'s history, the reads from ``reads``
    (None: unknown, for the reason ``unknown_reads`` gives, and no candidate marked)."""
    changes, _ = last_changes(client, {flag.name for flag in declared})
    known = None if reads is None else reads(declared, clock() - days * DAY_SECONDS)
    return build(declared, changes, known, days, None if known is not None else unknown_reads)


def render(report: Mapping[str, Any]) -> str:
    rows = []
    for flag in report["flags"]:
        change = flag["last_change"]
        last = f"v{change['version']} {change['at']}" if isinstance(change, Mapping) else "-"
        state = flag["state"] + (f" {flag['deprecated_on']}" if flag.get("deprecated_on") else "")
        reads = "?" if flag["reads"] is None else str(flag["reads"])
        mark = "STALE CANDIDATE" if flag["stale_candidate"] else ("permanent" if flag["permanent"] else "")
        rows.append((flag["name"], state, flag["owner"] or "-", last, reads, mark))
    text = table(("FLAG", "STATE", "OWNER", "LAST CHANGE", "READS", ""), rows)
    if report["reads_unknown"]:
        text += "\n" + safe(f"reads unknown: {report['reads_unknown']}")
    else:
        text += "\n" + safe(
            f"reads since {report['window_start']} (last {report['days']} day(s) asked) from {report['reads_source']}; "
            f"counts are lower bounds; reads of every flag at once, which name none: {report['reads_of_every_flag']}"
        )
    return text


READS_NEED_LOG_GROUPS = (
    "a deployed stage's reads are its readers' ServedVersion records in CloudWatch Logs: give --log-group NAME for "
    "each readers' log group (the read function's, your functions' with metrics=True); the caller needs "
    "logs:StartQuery and logs:GetQueryResults on them"
)


def log_group_reads(url: str, log_groups: Sequence[str], transport: Transport = http_transport) -> ReadsSource | None:
    """Where a report of the deployed API at ``url`` (``flagctl report``, the console's Lifecycle view) reads the
    reads from: Logs Insights over ``log_groups`` (``insights.deployed_query``); None without a log group, or for the
    local runner (its own ``GET /_reads``)."""
    query = None if is_loopback(url) else deployed_query(url, log_groups, transport)
    return None if query is None else logs_insights_reads(query, len(log_groups))
