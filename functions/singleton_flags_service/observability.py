"""Logger, metrics and (lazily) tracer, shared by the functions (never imported by the embedded client).

Service and namespace come from Powertools' own variables (POWERTOOLS_SERVICE_NAME,
POWERTOOLS_METRICS_NAMESPACE) with this project's defaults; the stack sets the namespace per stage
(``SingletonFlags/<stage>``), so stages sharing an account and region never mix their metrics. Nothing here
imports the X-Ray SDK: the read function relies on Lambda's active tracing (Tracer() costs ~280 ms of cold
start); the write and maintenance functions ask for ``tracer()``.

Metric vocabulary (EMF, namespace ``SingletonFlags/<stage>``, dimension ``service`` plus the one named):
``Reads`` {reason}, ``CacheRefreshes``, ``CacheRefreshFailures``, ``WriteConflicts``, ``WriteRetries``,
``ChangesApplied``, ``Refusals`` {code}, ``WindowStarts``, ``WindowEnds``, ``WindowSkips``, ``WindowFailures``,
``ChangeEventsPublished``, ``ChangeEventsRefused``, ``ScheduledChangesApplied``, ``ScheduledChangeSkips``,
``ScheduledChangeFailures``, ``GuardReverts``, ``GuardSkips``, ``GuardCloses``, ``GuardFailures``.

Propagation: ``ServedVersion`` {reason} (each function's reader, at most once per flush interval while it serves
reads, with its reads per flag and the item it is configured for as properties) and ``CommittedVersion`` (every
version a function commits, printed when its transaction commits: ``publish_committed``, the store's
``on_commit``).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import Metrics, MetricUnit, single_metric

from singleton_flags import emf
from singleton_flags.keys import SINGLETON_SK
from singleton_flags_service.vocabulary import (
    COMMITTED_VERSION,
    DEFAULT_NAMESPACE,
    DEFAULT_SERVICE,
    DIMENSION_SERVICE,
    WRITE_RETRIES,
)

SERVICE = os.getenv("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE
NAMESPACE = os.getenv("POWERTOOLS_METRICS_NAMESPACE") or DEFAULT_NAMESPACE

# A write request that changed nothing has no metric to flush; that is normal, not worth a warning per call.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger(service=SERVICE)
# The library (reader, snapshot, client) logs through the standard library's ``singleton_flags`` logger, so that an
# application embedding it gets no Powertools Logger. A function formats those records as its own: the same
# handler, hence the same JSON, keys and correlation id, and no second copy through the root logger.
LIBRARY_LOGGER = logging.getLogger("singleton_flags")
LIBRARY_LOGGER.addHandler(logger.registered_handler)
LIBRARY_LOGGER.setLevel(logger.log_level)
LIBRARY_LOGGER.propagate = False
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)  # per-invocation metrics of the write paths


if TYPE_CHECKING:  # the annotation only: importing Tracer loads the X-Ray SDK
    from aws_lambda_powertools import Tracer


@cache
def tracer() -> Tracer:
    """Powertools Tracer, created on first use so that the read function never pays for the X-Ray SDK."""
    from aws_lambda_powertools import Tracer

    return Tracer(service=SERVICE)


def count_write_retry(attempt: int) -> None:
    """``FlagStore``'s ``on_retry`` in the writing functions: one ``WriteRetries`` per retried attempt."""
    metrics.add_metric(name=WRITE_RETRIES, unit=MetricUnit.Count, value=1)


def emit_count(name: str, value: int, dimensions: dict[str, str] | None = None) -> None:
    """Print one EMF blob now, independent of the per-invocation ``metrics`` object."""
    with single_metric(name=name, unit=MetricUnit.Count, value=value, namespace=NAMESPACE) as metric:
        metric.add_dimension(name=DIMENSION_SERVICE, value=SERVICE)
        for key, dimension in (dimensions or {}).items():
            metric.add_dimension(name=key, value=dimension)


def emit_served(reason: str, version: int, flag_reads: Mapping[str, int], *, item: str = SINGLETON_SK) -> None:
    """Print one ``ServedVersion`` record now, as every reader prints it (``singleton_flags.emf.EmfPrinter``), naming
    ``item``: the sort key the reader is configured for."""
    emf.EmfPrinter(NAMESPACE, SERVICE, item=item).served(reason, version, flag_reads)


def publish_committed(version: int) -> None:
    """``FlagStore``'s ``on_commit`` in the writing functions: one ``CommittedVersion`` per committed version,
    printed when its transaction committed (whatever committed it: a change, a revert, a window, a guard's
    revert, a scheduled change, a restore, the seed)."""
    line = emf.emf_blob(NAMESPACE, COMMITTED_VERSION, version, unit="None", dimensions={DIMENSION_SERVICE: SERVICE})
    sys.stdout.write(line + "\n")


class ReadCounter(emf.ReadCounter):
    """``singleton_flags.emf.ReadCounter`` printing through Powertools' ``single_metric`` (the functions'), and
    the served version as every reader prints it (``served``, unless given: ``emit_served`` naming ``item``).

    ``item``: the sort key of the reader this counter counts for (a function passes its settings'
    ``item_sort_key``, as to its reader), known at construction: nothing is looked up per read.
    """

    def __init__(
        self,
        emit: emf.Emit = emit_count,
        clock: Callable[[], float] = time.monotonic,
        flush_interval: float = 60.0,
        served: emf.ServedEmit | None = None,
        *,
        item: str = SINGLETON_SK,
    ) -> None:
        super().__init__(emit, clock, flush_interval, served or functools.partial(emit_served, item=item))
        self.item = item
