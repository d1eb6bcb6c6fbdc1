"""Read counts, printed rarely as CloudWatch embedded-metric-format (EMF) blobs. No Powertools here.

``ReadCounter`` is the policy (a cached read only bumps a counter); what prints a blob is injected: the
functions pass Powertools' ``single_metric`` (``singleton_flags_service.observability``), the embedded client
(``singleton_flags.client``, ``metrics=True``) passes ``EmfPrinter``, which writes the same JSON with the
standard library. A reader built without a counter counts nothing (``NO_COUNT``).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter as Tally
from collections.abc import Callable
from typing import Protocol, TextIO

from singleton_flags.vocabulary import (
    CACHE_REFRESH_FAILURES,
    CACHE_REFRESHES,
    DEFAULT,
    DIMENSION_CAUSE,
    DIMENSION_REASON,
    DIMENSION_SERVICE,
    NEVER_READ_FAILURES,
    READS,
    STALE,
)

__all__ = [
    "NO_COUNT",
    "Counter",
    "EmfPrinter",
    "Emit",
    "ReadCounter",
]

Emit = Callable[[str, int, dict[str, str] | None], None]


class Counter(Protocol):
    def record(
        self, reason: str, *, refreshed: bool = False, refresh_failed: bool = False, never_read: str | None = None
    ) -> None:
        """One read; ``never_read``: the cause of a failed fetch made before any successful one."""


class _NoCount:
    def record(
        self, reason: str, *, refreshed: bool = False, refresh_failed: bool = False, never_read: str | None = None
    ) -> None:
        return None


NO_COUNT: Counter = _NoCount()


class EmfPrinter:
    """Prints one EMF blob per count (namespace, ``service`` dimension plus the one named) to ``stream``."""

    def __init__(self, namespace: str, service: str, stream: TextIO | None = None) -> None:
        self._namespace = namespace
        self._service = service
        self._stream = stream

    def __call__(self, name: str, value: int, dimensions: dict[str, str] | None = None) -> None:
        labels = {DIMENSION_SERVICE: self._service, **(dimensions or {})}
        blob = {
            "_aws": {
                "Timestamp": int(time.time() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": self._namespace,
                        "Dimensions": [list(labels)],
                        "Metrics": [{"Name": name, "Unit": "Count"}],
                    }
                ],
            },
            **labels,
            name: value,
        }
        stream = self._stream or sys.stdout
        stream.write(json.dumps(blob, separators=(",", ":")) + "\n")


class ReadCounter:
    """Counts reads in the execution environment and prints them rarely.

    A cached read only bumps a counter. The counts go out as EMF with the next cache refresh, when
    ``flush_interval`` seconds have passed since the last flush, or at once for a STALE or DEFAULT read
    (an operator must see those without delay). At most one blob per reason per flush.
    """

    URGENT = frozenset({STALE, DEFAULT})

    def __init__(
        self,
        emit: Emit,
        clock: Callable[[], float] = time.monotonic,
        flush_interval: float = 60.0,
    ) -> None:
        self._emit = emit
        self._clock = clock
        self._flush_interval = flush_interval
        self._reads: Tally[str] = Tally()
        self._refreshes = 0
        self._refresh_failures = 0
        self._never_read: Tally[str] = Tally()  # failed fetches before any successful one, by cause
        self._last_flush = clock()

    def record(
        self, reason: str, *, refreshed: bool = False, refresh_failed: bool = False, never_read: str | None = None
    ) -> None:
        self._reads[reason] += 1
        if never_read is not None:
            self._never_read[never_read] += 1
        self._refreshes += refreshed
        self._refresh_failures += refresh_failed
        if (
            refreshed
            or refresh_failed
            or reason in self.URGENT
            or self._clock() - self._last_flush >= self._flush_interval
        ):
            self.flush()

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
        self._last_flush = self._clock()
