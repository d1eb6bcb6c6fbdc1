"""Read-path metrics: Reads{reason}, CacheRefreshes, CacheRefreshFailures as EMF on stdout.

A cached read prints nothing; counts accumulate in the environment and go out with the next refresh, after
the flush interval, or at once for a STALE or DEFAULT read. (The served version, printed at most once per flush
interval, has its own tests: tests/unit/test_served_version.py.)
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from singleton_flags.provider import SingletonProvider
from singleton_flags_service.observability import NAMESPACE, SERVICE, ReadCounter
from singleton_flags_service.vocabulary import CACHE_REFRESH_FAILURES, CACHE_REFRESHES, READS, SERVED_VERSION
from tests.support.unit import Clock, Output, ReadApi, build_reader, emf_metrics as all_metrics, expire

SERVICE_ONLY = {"service": SERVICE}


def emf_metrics(records: list[dict[str, Any]]) -> list[tuple[str, float, dict[str, str]]]:
    """The counts among the EMF blobs (the served version left out)."""
    return [metric for metric in all_metrics(records) if metric[0] != SERVED_VERSION]


def reads(reason: str, count: int) -> tuple[str, float, dict[str, str]]:
    return (READS, float(count), {"service": SERVICE, "reason": reason})


class TestThroughTheHandler:
    def test_a_cached_read_prints_nothing(self, read_api: ReadApi, put_flags: Any, stdout: Output) -> None:
        # Given a warm environment that has fetched the item
        put_flags()
        read_api.get()
        stdout.text()  # what the refresh printed is not under test here
        # When 100 cached GET /flags arrive (and a 304)
        for _ in range(100):
            assert read_api.get()["statusCode"] == 200
        read_api.get(headers={"If-None-Match": '"1"'})
        # Then not one byte was printed: no log line, no EMF blob
        assert stdout.text() == ""

    def test_a_static_refresh_flushes_reads_and_cache_refreshes(
        self, read_api: ReadApi, put_flags: Any, stdout: Output
    ) -> None:
        # Given a seeded item and a cold environment
        put_flags()
        # When the first GET /flags fetches it
        read_api.get()
        records = stdout.records()
        # Then one EMF blob per metric, in the project's namespace, with the documented dimensions
        assert all_metrics(records) == [
            reads("STATIC", 1),
            (CACHE_REFRESHES, 1.0, SERVICE_ONLY),
            (SERVED_VERSION, 1, {"reason": "STATIC"}),
        ]
        for record in records:
            (directive,) = record["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == NAMESPACE
            unit = "None" if directive["Metrics"][0]["Name"] == SERVED_VERSION else "Count"
            assert all(metric["Unit"] == unit for metric in directive["Metrics"])

    def test_cached_counts_go_out_with_the_next_refresh(
        self, read_api: ReadApi, put_flags: Any, stdout: Output
    ) -> None:
        # Given a refresh, then 5 cached reads
        put_flags()
        read_api.get()
        stdout.text()
        for _ in range(5):
            read_api.get()
        assert stdout.text() == ""
        # When the cache expires and the next read refreshes
        expire(read_api.provider)
        read_api.get()
        # Then the accumulated counts go out with it
        assert sorted(emf_metrics(stdout.records())) == sorted(
            [reads("CACHED", 5), reads("STATIC", 1), (CACHE_REFRESHES, 1.0, SERVICE_ONLY)]
        )

    def test_a_default_read_flushes_at_once_even_from_cache(self, read_api: ReadApi, ddb: Any, stdout: Output) -> None:
        # Given an empty table: the first read refreshes and serves fallbacks
        read_api.get()
        assert sorted(emf_metrics(stdout.records())) == sorted(
            [reads("DEFAULT", 1), (CACHE_REFRESHES, 1.0, SERVICE_ONLY)]
        )
        # When a cached read serves the fallbacks again
        read_api.get()
        # Then it is flushed at once: an operator must see fallbacks without delay
        assert emf_metrics(stdout.records()) == [reads("DEFAULT", 1)]

    def test_a_stale_read_flushes_at_once_with_the_refresh_failure(
        self, read_api: ReadApi, put_flags: Any, ddb: Any, stdout: Output
    ) -> None:
        # Given a good read, then 3 cached reads, an expired cache and DynamoDB throttling
        put_flags()
        read_api.get()
        for _ in range(3):
            read_api.get()
        stdout.text()
        expire(read_api.provider)
        with Stubber(ddb) as stubber:
            stubber.add_client_error("get_item", service_error_code="ProvisionedThroughputExceededException")
            read_api.clock.advance(10)
            # When a read fails to refresh and serves STALE
            read_api.get()
            metrics = emf_metrics(stdout.records())
            # And a read within the back-off serves STALE without calling DynamoDB
            read_api.get()
        # Then the failed refresh flushed everything pending, and the next STALE read flushed at once too
        assert sorted(metrics) == sorted(
            [reads("CACHED", 3), reads("STALE", 1), (CACHE_REFRESH_FAILURES, 1.0, SERVICE_ONLY)]
        )
        assert emf_metrics(stdout.records()) == [reads("STALE", 1)]


class TestFlushInterval:
    def test_cached_counts_go_out_after_sixty_seconds_without_a_refresh(
        self, provider: SingletonProvider, declarations: Any, put_flags: Any, stdout: Output, clock: Clock
    ) -> None:
        # Given a reader whose counter runs on the fake clock, and a long max_age (no refresh for an hour)
        put_flags()
        reader = build_reader(provider, declarations, clock, max_age=3600)
        reader.read()
        stdout.text()
        # When cached reads arrive over 59 s
        for _ in range(3):
            clock.advance(19.5)
            reader.read()
        assert stdout.text() == ""
        # Then the read at 60 s flushes the count of all cached reads
        clock.advance(1.5)
        reader.read()
        assert emf_metrics(stdout.records()) == [reads("CACHED", 4)]


class TestReadCounter:
    """The counter alone, with an in-memory emitter."""

    @pytest.fixture
    def emitted(self) -> list[tuple[str, int, dict[str, str] | None]]:
        return []

    @pytest.fixture
    def counter(self, emitted: list[Any], clock: Clock) -> ReadCounter:
        return ReadCounter(emit=lambda *blob: emitted.append(blob), clock=clock, flush_interval=60.0)

    def test_cached_reads_only_count(self, counter: ReadCounter, emitted: list[Any]) -> None:
        for _ in range(1000):
            counter.record("CACHED")
        assert emitted == []

    def test_a_refresh_flushes_one_blob_per_reason_then_starts_over(
        self, counter: ReadCounter, emitted: list[Any]
    ) -> None:
        for _ in range(7):
            counter.record("CACHED")
        counter.record("STATIC", refreshed=True)
        assert emitted == [
            (READS, 7, {"reason": "CACHED"}),
            (READS, 1, {"reason": "STATIC"}),
            (CACHE_REFRESHES, 1, None),
        ]
        emitted.clear()
        counter.record("CACHED")
        assert emitted == []

    @pytest.mark.parametrize("reason", ["STALE", "DEFAULT"])
    def test_urgent_reasons_flush_at_once(self, counter: ReadCounter, emitted: list[Any], reason: str) -> None:
        counter.record(reason)
        assert emitted == [(READS, 1, {"reason": reason})]

    def test_a_failed_refresh_is_counted_and_flushed(self, counter: ReadCounter, emitted: list[Any]) -> None:
        counter.record("STALE", refresh_failed=True)
        assert emitted == [(READS, 1, {"reason": "STALE"}), (CACHE_REFRESH_FAILURES, 1, None)]

    def test_the_interval_flushes_without_a_refresh(
        self, counter: ReadCounter, emitted: list[Any], clock: Clock
    ) -> None:
        counter.record("CACHED")
        clock.advance(59.9)
        counter.record("CACHED")
        assert emitted == []
        clock.advance(0.1)
        counter.record("CACHED")
        assert emitted == [(READS, 3, {"reason": "CACHED"})]

    def test_an_empty_flush_prints_nothing(self, counter: ReadCounter, emitted: list[Any]) -> None:
        counter.flush()
        assert emitted == []
