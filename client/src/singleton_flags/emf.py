"""Read counts and the served version, printed rarely as CloudWatch embedded-metric-format (EMF) blobs. No
Powertools here.

``ReadCounter`` is the policy (a cached read only bumps a counter); what prints a blob is injected: the
functions pass Powertools' ``single_metric`` (``singleton_flags_service.observability``), the embedded client
(``singleton_flags.client``, ``metrics=True``) passes ``EmfPrinter``, which writes the same JSON with the
standard library. A reader built without a counter counts nothing (``NO_COUNT``).

Propagation: at most once per flush interval while it serves reads, a counter given a ``served`` printer prints
the version its reader serves now as ``ServedVersion`` (dimension ``reason``; ``NO_VERSION`` for the declared
fallbacks), with the reads counted per flag since the previous one as a property (``flag_reads``) and the item the
reader is configured for (``item``, its sort key: a property, fixed when the printer is built). It goes out with
the first read after the interval: an idle reader prints nothing, and counts are lower bounds (an environment can
be reclaimed before its next read).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter as Tally
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TextIO

from singleton_flags.keys import SINGLETON_SK
from singleton_flags.vocabulary import (
    CACHE_REFRESH_FAILURES,
    CACHE_REFRESHES,
    DEFAULT,
    DIMENSION_CAUSE,
    DIMENSION_REASON,
    DIMENSION_SERVICE,
    FLAG_READS,
    NEVER_READ_FAILURES,
    NO_VERSION,
    READS,
    SERVED_ITEM,
    SERVED_VERSION,
    STALE,
)

__all__ = [
    "NO_COUNT",
    "Counter",
    "EmfPrinter",
    "Emit",
    "ReadCounter",
    "ServedEmit",
    "emf_blob",
]

Emit = Callable[[str, int, dict[str, str] | None], None]
# (reason, version served, reads per flag since the previous one) -> one ServedVersion record printed
ServedEmit = Callable[[str, int, Mapping[str, int]], None]


class Counter(Protocol):
    def record(
        self,
        reason: str,
        *,
        version: int | None = None,
        refreshed: bool = False,
        refresh_failed: bool = False,
        never_read: str | None = None,
    ) -> None:
        """One read, serving ``version`` with ``reason``; ``never_read``: the cause of a failed fetch made before
        any successful one."""

    def restart(self) -> None:
        """The environment was restored from a snapshot: what it served and when it last said so belong to the
        snapshot, not to this environment."""


class _NoCount:
    def record(
        self,
        reason: str,
        *,
        version: int | None = None,
        refreshed: bool = False,
        refresh_failed: bool = False,
        never_read: str | None = None,
    ) -> None:
        return None

    def restart(self) -> None:
        return None


NO_COUNT: Counter = _NoCount()


def emf_blob(
    namespace: str,
    name: str,
    value: int,
    *,
    unit: str = "Count",
    dimensions: Mapping[str, str],
    properties: Mapping[str, Any] | None = None,
) -> str:
    """One EMF record (a JSON line): one metric, one dimension set; ``properties`` are logged beside it, searchable
    in CloudWatch Logs, and are not dimensions."""
    blob = {
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [
                {"Namespace": namespace, "Dimensions": [list(dimensions)], "Metrics": [{"Name": name, "Unit": unit}]}
            ],
        },
        **(properties or {}),
        **dimensions,
        name: value,
    }
    return json.dumps(blob, separators=(",", ":"))


class EmfPrinter:
    """Prints one EMF blob per count (namespace, ``service`` dimension plus the one named) to ``stream``, and the
    served version (``served``: dimension ``reason``; the service, the reads per flag and ``item`` properties).

    ``item``: the sort key the reader printing through it is configured for (``FLAGS#V1`` unless configured),
    named in every served record, also while the reader follows a migration pointer to a later item.
    """

    def __init__(self, namespace: str, service: str, stream: TextIO | None = None, *, item: str = SINGLETON_SK) -> None:
        self._namespace = namespace
        self._service = service
        self._stream = stream
        self.item = item

    def __call__(self, name: str, value: int, dimensions: dict[str, str] | None = None) -> None:
        labels = {DIMENSION_SERVICE: self._service, **(dimensions or {})}
        self._write(emf_blob(self._namespace, name, value, dimensions=labels))

    def served(self, reason: str, version: int, flag_reads: Mapping[str, int]) -> None:
        self._write(
            emf_blob(
                self._namespace,
                SERVED_VERSION,
                version,
                unit="None",
                dimensions={DIMENSION_REASON: reason},
                properties={DIMENSION_SERVICE: self._service, SERVED_ITEM: self.item, FLAG_READS: dict(flag_reads)},
            )
        )

    def _write(self, line: str) -> None:
        stream = self._stream or sys.stdout
        stream.write(line + "\n")


class ReadCounter:
    """Counts reads in the execution environment and prints them rarely.

    A cached read only bumps a counter. The counts go out as EMF with the next cache refresh, when
    ``flush_interval`` seconds have passed since the last flush, or at once for a STALE or DEFAULT read
    (an operator must see those without delay). At most one blob per reason per flush.

    With a ``served`` printer, a flush also prints what the reader serves now (``ServedVersion``) when none was
    printed in the last ``flush_interval`` seconds, with ``flag_reads``: the reads per flag, which whoever knows
    the flag's name counts (``flag_reads[name] += 1``; ``ALL_FLAGS`` for a read of them all).
    """

    URGENT = frozenset({STALE, DEFAULT})

    def __init__(
        self,
        emit: Emit,
        clock: Callable[[], float] = time.monotonic,
        flush_interval: float = 60.0,
        served: ServedEmit | None = None,
    ) -> None:
        self._emit = emit
        self._clock = clock
        self._flush_interval = flush_interval
        self._reads: Tally[str] = Tally()
        self._refreshes = 0
        self._refresh_failures = 0
        self._never_read: Tally[str] = Tally()  # failed fetches before any successful one, by cause
        self._served_emit = served
        self.flag_reads: Tally[str] = Tally()
        self._reason: str | None = None  # the last read's reason and version: what the reader serves now
        self._version: int | None = None
        self._served_at: float | None = None  # when ServedVersion was last printed
        self._flush_at = clock() + flush_interval

    def record(
        self,
        reason: str,
        *,
        version: int | None = None,
        refreshed: bool = False,
        refresh_failed: bool = False,
        never_read: str | None = None,
    ) -> None:
        self._reads[reason] += 1
        self._reason = reason
        self._version = version
        if never_read is not None:
            self._never_read[never_read] += 1
        self._refreshes += refreshed
        self._refresh_failures += refresh_failed
        if refreshed or refresh_failed or reason in self.URGENT or self._clock() >= self._flush_at:
            self.flush()

    def restart(self) -> None:
        """Forget what the reader served and when ``ServedVersion`` was last printed (a restored environment says
        what it serves with its first flush), and the reads counted before the snapshot (counted by the
        environment that took it, never by each environment restored from it)."""
        self._reads.clear()
        self._never_read.clear()
        self.flag_reads.clear()
        self._refreshes = self._refresh_failures = 0
        self._reason = self._version = self._served_at = None
        self._flush_at = self._clock()

    @property
    def serving(self) -> tuple[str, int] | None:
        """(reason, version) the reader served at its last read (``NO_VERSION`` for the declared fallbacks), None
        before its first read."""
        if self._reason is None:
            return None
        version = self._version
        return self._reason, NO_VERSION if version is None or self._reason == DEFAULT else version

    def flush(self) -> None:
        for reason, count in sorted(self._reads.items()):
            self._emit(READS, count, {DIMENSION_REASON: reason})
        if self._refreshes:
            self._emit(CACHE_REFRESHES, self._refreshes, None)
        if self._refresh_failures:
            self._emit(CACHE_REFRESH_FAILURES, self._refresh_failures, None)
        for cause, count in sorted(self._never_read.items()):
            self._emit(NEVER_READ_FAILURES, count, {DIMENSION_CAUSE: cause})
        self._reads.clear()
        self._never_read.clear()
        self._refreshes = self._refresh_failures = 0
        now = self._clock()
        serving = self.serving
        due = self._served_at is None or now - self._served_at >= self._flush_interval
        if self._served_emit is not None and serving is not None and due:
            flag_reads = dict(self.flag_reads)
            self.flag_reads.clear()
            self._served_emit(*serving, flag_reads)
            self._served_at = now
        # the next flush is due an interval after the last one, or after the last served version if earlier
        self._flush_at = (now if self._served_at is None else self._served_at) + self._flush_interval
