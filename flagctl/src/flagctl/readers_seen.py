"""Whether readers configured for an item (its sort key, e.g. ``FLAGS#V1``) were seen in the readers' telemetry
within the last N days: what finalising a migration asks before it marks that item superseded.

Every reader's ``ServedVersion`` record names the item it is configured for (property ``item``), also while it
follows a migration pointer to a later item: that configuration is what an operator switches. Two sources, as for
``flagctl report`` and ``set --wait``:
- the local runner (a loopback URL): its runner-only ``GET /_served``, each of its readers with its ``item`` and
  ``last_read_at``; a reader configured for the item counts when it read within the window;
- a deployed stage: CloudWatch Logs Insights (``flagctl.insights``) over the readers' log groups given, the
  ``ServedVersion`` records of the window that name the item, counted with the latest one's time.
A record or reader that names no item (a reader older than the ``item`` property) may read any item: it counts as
seen. Without a source (a deployed stage without log groups) nothing can be told: the answer is ``unknown``, and a
caller refuses on it as when readers are seen (``ReadersSeen.blocks``).

What is seen is a lower bound: a reader without metrics (the embedded client without ``metrics=True``) prints
nothing, and an idle reader prints nothing while idle.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from flagctl.client import FlagsClient, Transport, http_transport, is_loopback
from flagctl.errors import BAD_INPUT, CONFLICT, FlagctlError
from flagctl.insights import Query, deployed_query, first_row
from flagctl.wait import SERVED_PATH, runner_readers

__all__ = [
    "DAY_SECONDS",
    "MAX_DAYS",
    "Heard",
    "ReadersSeen",
    "SeenSource",
    "insights_query",
    "logs_insights_source",
    "readers_seen",
    "runner_source",
    "source_for",
    "unless_seen",
]

DAY_SECONDS = 86400
MAX_DAYS = 365
ITEM = re.compile(r"^FLAGS#V[1-9][0-9]{0,8}$")
NO_SOURCE = (
    "a deployed stage's readers are seen in their ServedVersion records in CloudWatch Logs: give --log-group NAME for "
    "each readers' log group (the read and write functions', your functions' with metrics=True); the caller needs "
    "logs:StartQuery and logs:GetQueryResults on them"
)


@dataclass(frozen=True)
class Heard:
    """What one source holds of the readers of an item within the window: ``records`` (ServedVersion records
    deployed, readers locally) that name it or name no item, ``unnamed`` of them naming no item, the latest one's
    time (epoch seconds, None when not told), and the source's description."""

    records: int
    unnamed: int
    last_seen: float | None
    source: str


T = TypeVar("T")
SeenSource = Callable[[str, float], Heard]  # (item, window start: epoch seconds) -> Heard


@dataclass(frozen=True)
class ReadersSeen:
    """Whether readers configured for ``item`` were seen within the last ``days`` days.

    ``seen``: at least one record (or runner reader) of the window names the item, or names none. ``unknown``: no
    source could tell (``why`` says what is missing). A caller refuses while ``blocks``: seen, or unknown.
    """

    item: str
    days: int
    seen: bool
    unknown: bool
    records: int
    unnamed: int
    last_seen: float | None
    source: str
    why: str | None = None

    @property
    def blocks(self) -> bool:
        return self.seen or self.unknown

    def words(self) -> str:
        window = f"in the last {self.days} day(s)"
        if self.unknown:
            return f"cannot tell whether readers configured for {self.item} read {window}: {self.why}"
        if not self.seen:
            return (
                f"no reader configured for {self.item} was seen {window} ({self.source}; a reader without metrics "
                "prints nothing)"
            )
        when = "" if self.last_seen is None else f", the last at {iso(self.last_seen)}"
        older = (
            f"; {self.unnamed} of them name no item (readers older than the item property, counted as readers of it)"
            if self.unnamed
            else ""
        )
        return (
            f"readers configured for {self.item} were seen {window}: {self.records} record(s){when} "
            f"({self.source}){older}; switch them to the new item first"
        )


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def check_item(item: str) -> str:
    if not ITEM.match(item):
        raise FlagctlError(f"the item must look like FLAGS#V<n> (n from 1), got {item!r}", BAD_INPUT, "BAD_INPUT")
    return item


def readers_seen(
    item: str,
    days: int,
    source: SeenSource | None,
    *,
    why_unknown: str = NO_SOURCE,
    clock: Callable[[], float] = time.time,
) -> ReadersSeen:
    """Whether readers configured for ``item`` were seen in the last ``days`` days (1 to ``MAX_DAYS``), asked of
    ``source`` (``source_for``); ``source`` None: unknown, for ``why_unknown``. A source that fails raises
    ``FlagctlError``: nothing is known then either."""
    check_item(item)
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise FlagctlError(f"days must be a whole number from 1 to {MAX_DAYS}, got {days!r}", BAD_INPUT, "BAD_INPUT")
    if source is None:
        return ReadersSeen(item, days, False, True, 0, 0, None, "no source", why_unknown)
    heard = source(item, clock() - days * DAY_SECONDS)
    return ReadersSeen(
        item, days, heard.records > 0, False, heard.records, heard.unnamed, heard.last_seen, heard.source
    )


def unless_seen(seen: ReadersSeen, step: Callable[[], T]) -> T:
    """Run ``step`` (finalising a migration: the earlier item marked superseded) only when no reader configured for
    ``seen.item`` was seen in the window, and it is known; else refuse (exit 3, ``READERS_SEEN``), nothing done."""
    if seen.blocks:
        code = "READERS_UNKNOWN" if seen.unknown else "READERS_SEEN"
        raise FlagctlError(f"finalising is refused: {seen.words()}", CONFLICT, code, {"item": seen.item})
    return step()


def runner_source(client: FlagsClient) -> SeenSource:
    """The local runner's readers (``GET /_served``): each configured for the item (or naming none) that read since
    the window's start."""

    def heard(item: str, since: float) -> Heard:
        matching = [
            reader
            for reader in runner_readers(client)
            if reader.get("item") in (item, None)
            and isinstance(reader.get("last_read_at"), (int, float))
            and reader["last_read_at"] >= since
        ]
        last = max((float(reader["last_read_at"]) for reader in matching), default=None)
        unnamed = sum(1 for reader in matching if reader.get("item") is None)
        return Heard(len(matching), unnamed, last, f"the local runner's readers ({SERVED_PATH})")

    return heard


def insights_query(item: str) -> str:
    """The Logs Insights query: the ServedVersion records naming ``item`` or no item, counted, with the latest
    one's time. ``item`` is checked (``FLAGS#V<n>``) before it is quoted into the query."""
    check_item(item)
    return (
        f'filter ispresent(ServedVersion) and (item = "{item}" or not ispresent(item)) '
        "| stats count(*) as records, count(item) as named, max(@timestamp) as last_seen"
    )


def logs_insights_source(query: Query, groups: int, clock: Callable[[], float] = time.time) -> SeenSource:
    """The readers' ServedVersion records in CloudWatch Logs Insights (``query``: over ``groups`` log groups)."""

    def heard(item: str, since: float) -> Heard:
        row = first_row(query(insights_query(item), since, clock()))
        records, named = _count(row.get("records")), _count(row.get("named"))
        source = f"CloudWatch Logs Insights ({groups} log group(s))"
        return Heard(records, max(records - named, 0), _timestamp(row.get("last_seen")), source)

    return heard


def source_for(
    client: FlagsClient, log_groups: Sequence[str], transport: Transport = http_transport
) -> SeenSource | None:
    """The source for ``client``'s target: the runner's readers for a loopback URL; else Logs Insights over
    ``log_groups`` (``insights.deployed_query``), or None without any."""
    if is_loopback(client.base_url):
        return runner_source(client)
    query = deployed_query(client.base_url, log_groups, transport)
    return None if query is None else logs_insights_source(query, len(log_groups))


def _count(value: Any) -> int:
    try:
        return max(int(float(value)), 0) if isinstance(value, str) else 0
    except ValueError:
        return 0


_QUERY_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z?$")


def _timestamp(value: Any) -> float | None:
    """A Logs Insights time (``2026-12-02 07:30:22.123``, UTC) or epoch milliseconds, as epoch seconds; None when
    it is neither (what was counted still counts)."""
    if not isinstance(value, str):
        return None
    if value.isdigit():
        return int(value) / 1000
    found = _QUERY_TIME.match(value)
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction = found.groups()
    whole = calendar.timegm((int(year), int(month), int(day), int(hour), int(minute), int(second), 0, 0, 0))
    return whole + (float(f"0.{fraction}") if fraction else 0.0)
