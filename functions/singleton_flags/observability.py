"""Logger, metrics and (lazily) tracer, shared by all three functions.

Service and namespace come from Powertools' own variables (POWERTOOLS_SERVICE_NAME,
POWERTOOLS_METRICS_NAMESPACE) with this project's defaults; the stack sets the namespace per stage
(``SingletonFlags/<stage>``), so stages sharing an account and region never mix their metrics. Nothing here
imports the X-Ray SDK: the read function relies on Lambda's active tracing (Tracer() costs ~280 ms of cold start);
the write and maintenance functions ask for ``tracer()``.

Metric vocabulary (EMF, namespace ``SingletonFlags/<stage>``, dimension ``service`` plus the one named):
``Reads`` {reason}, ``CacheRefreshes``, ``CacheRefreshFailures``, ``WriteConflicts``, ``WriteRetries``,
``ChangesApplied``, ``Refusals`` {code}, ``WindowStarts``, ``WindowEnds``, ``WindowSkips``, ``WindowFailures``.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit, single_metric

from singleton_flags.vocabulary import (  # noqa: F401 - the metric names, re-exported for the functions
    CACHE_REFRESH_FAILURES,
    CACHE_REFRESHES,
    CHANGES_APPLIED,
    DEFAULT,
    DEFAULT_NAMESPACE,
    DEFAULT_SERVICE,
    DIMENSION_CODE,
    DIMENSION_REASON,
    DIMENSION_SERVICE,
    READS,
    REFUSALS,
    STALE,
    WINDOW_ENDS,
    WINDOW_FAILURES,
    WINDOW_SKIPS,
    WINDOW_STARTS,
    WRITE_CONFLICTS,
    WRITE_RETRIES,
)

SERVICE = os.getenv("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE
NAMESPACE = os.getenv("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_NAMESPACE

# A write request that changed nothing has no metric to flush; that is normal, not worth a warning per call.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)  # per-invocation metrics of the write paths


if TYPE_CHECKING:  # the annotation only: importing Tracer loads the X-Ray SDK
    from aws_lambda_powertools import Tracer


@cache
def tracer() -> Tracer:
    """Powertools Tracer, created on first use so that the read function never pays for the X-Ray SDK."""
    from aws_lambda_powertools import Tracer

    return Tracer(service=SERVICE)


def emit_count(name: str, value: int, dimensions: dict[str, str] | None = None) -> None:
    """Print one EMF blob now, independent of the per-invocation ``metrics`` object."""
    with single_metric(name=name, unit=MetricUnit.Count, value=value, namespace=NAMESPACE) as metric:
        metric.add_dimension(name=DIMENSION_SERVICE, value=SERVICE)
        for key, dimension in (dimensions or {}).items():
            metric.add_dimension(name=key, value=dimension)


class ReadCounter:
    """Counts reads in the execution environment and prints them rarely.

    A cached read only bumps a counter. The counts go out as EMF with the next cache refresh, when
    ``flush_interval`` seconds have passed since the last flush, or at once for a STALE or DEFAULT read
    (an operator must see those without delay). At most one blob per reason per flush.
    """

    URGENT = frozenset({STALE, DEFAULT})

    def __init__(
        self,
        emit: Callable[[str, int, dict[str, str] | None], None] = emit_count,
        clock: Callable[[], float] = time.monotonic,
        flush_interval: float = 60.0,
    ) -> None:
        self._emit = emit
        self._clock = clock
        self._flush_interval = flush_interval
        self._reads: Counter[str] = Counter()
        self._refreshes = 0
        self._refresh_failures = 0
        self._last_flush = clock()

    def record(self, reason: str, *, refreshed: bool = False, refresh_failed: bool = False) -> None:
        self._reads[reason] += 1
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
        self._reads.clear()
        self._refreshes = self._refresh_failures = 0
        self._last_flush = self._clock()
