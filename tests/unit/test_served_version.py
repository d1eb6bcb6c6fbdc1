"""Every reader tells which version it serves: ``ServedVersion`` {reason}, at most once per flush interval while it
serves reads, with the reads it counted per flag since the previous one (``flag_reads``, a property: flag names are
never dimensions) and the item it is configured for (``item``, a property). The declared fallbacks (DEFAULT) serve
no stored version: ``NO_VERSION``. An idle reader prints nothing. No read does I/O for it: the record goes out with
the first read after the interval.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest
from botocore.stub import Stubber

from local.functions import load_module
from singleton_flags import Flags
from singleton_flags.emf import EmfPrinter, ReadCounter
from singleton_flags.provider import SingletonProvider
from singleton_flags.vocabulary import ALL_FLAGS, FLAG_READS, NO_VERSION, SERVED_ITEM, SERVED_VERSION
from singleton_flags_service.observability import NAMESPACE, SERVICE, ReadCounter as FunctionCounter
from singleton_flags_service.reader_contract import ITEM_SORT_KEY
from tests.support.unit import Clock, Output, ReadApi, build_reader, expire
from tests.unit.test_migration_reader import pointing_v1, v2_item


def served(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ServedVersion records among what was printed."""
    return [
        record
        for record in records
        if any(
            metric["Name"] == SERVED_VERSION
            for directive in record.get("_aws", {}).get("CloudWatchMetrics", [])
            for metric in directive["Metrics"]
        )
    ]


def summary(record: dict[str, Any]) -> tuple[str, int, dict[str, int]]:
    return record["reason"], record[SERVED_VERSION], record[FLAG_READS]


class TestTheReadFunction:
    def test_its_first_read_tells_the_version_it_serves_in_the_stages_namespace(
        self, read_api: ReadApi, put_flags: Any, stdout: Output
    ) -> None:
        # Given the item at version 7 and a cold read function
        put_flags(version=7)
        # When the first GET /flags/{name} fetches it
        read_api.get("/flags/signup_enabled")
        (record,) = served(stdout.records())
        # Then one ServedVersion record: dimension reason only, unit None, the service and the reads per flag as
        # properties
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE
        assert directive["Dimensions"] == [["reason"]]
        assert directive["Metrics"] == [{"Name": SERVED_VERSION, "Unit": "None"}]
        assert summary(record) == ("STATIC", 7, {"signup_enabled": 1})
        assert record["service"] == SERVICE

    def test_at_most_once_per_interval_with_the_reads_per_flag_counted_meanwhile(
        self, read_api: ReadApi, put_flags: Any, stdout: Output
    ) -> None:
        # Given a warm read function that told its version at its first read
        put_flags(version=3)
        read_api.get("/flags")
        stdout.text()
        # When reads arrive over 59 s, the cache refreshed on the way (max_age elapsed)
        for second in range(59):
            read_api.clock.advance(1)
            read_api.get("/flags/signup_enabled" if second % 2 else "/flags")
            if second == 30:
                expire(read_api.provider)
        # Then nothing more was told: once per interval, refreshes included
        assert served(stdout.records()) == []
        # And the first read after the interval tells it, with every read counted since the previous record
        read_api.clock.advance(1.5)
        read_api.get("/flags/maintenance_mode")
        (record,) = served(stdout.records())
        assert summary(record) == ("CACHED", 3, {ALL_FLAGS: 30, "signup_enabled": 29, "maintenance_mode": 1})

    def test_an_idle_reader_prints_nothing(self, read_api: ReadApi, put_flags: Any, stdout: Output) -> None:
        # Given a read function that served once
        put_flags(version=3)
        read_api.get()
        stdout.text()
        # When an hour passes without a read
        read_api.clock.advance(3600)
        # Then nothing is printed (no timer, no I/O of its own): an idle reader is no datapoint
        assert stdout.text() == ""

    def test_a_reader_whose_refreshes_fail_tells_stale_then_default(
        self, read_api: ReadApi, put_flags: Any, ddb: Any, stdout: Output
    ) -> None:
        # Given a read function serving version 4, then DynamoDB throttling every read
        put_flags(version=4)
        read_api.get()
        stdout.text()
        expire(read_api.provider)
        with Stubber(ddb) as stubber:
            for _ in range(40):
                stubber.add_client_error("get_item", service_error_code="ProvisionedThroughputExceededException")
            # When it serves STALE (every STALE read flushes the read counts at once) for a minute
            for _ in range(6):
                read_api.clock.advance(10.5)
                read_api.get()
            stale = [summary(record) for record in served(stdout.records())]
            # And then past max_stale, the declared fallbacks
            read_api.clock.advance(read_api.module.SETTINGS.max_stale_seconds)
            read_api.get()
            expire(read_api.provider)
            fallback = [summary(record) for record in served(stdout.records())]
        # Then STALE was told once in that minute, with the version it serves
        assert stale == [("STALE", 4, {ALL_FLAGS: 6})]
        # And DEFAULT tells NO_VERSION: no stored version is served, so it reads as behind every version
        assert fallback == [("DEFAULT", NO_VERSION, {ALL_FLAGS: 1})]


class TestTheCounter:
    def test_the_next_flush_is_due_an_interval_after_the_served_record_not_after_a_later_refresh(
        self, provider: SingletonProvider, declarations: Any, put_flags: Any, clock: Clock
    ) -> None:
        # Given a reader (cache age an hour) whose counter told its version at t=0
        told: list[tuple[str, int, dict[str, int]]] = []
        counter = ReadCounter(lambda *count: None, clock=clock, served=lambda *record: told.append(record))
        put_flags(version=2)
        reader = build_reader(provider, declarations, clock, max_age=3600, counter=counter)
        reader.read()
        # When a refresh flushes the counts at t=50 (a refresh is not a served record)
        clock.advance(50)
        counter.record("STATIC", version=2, refreshed=True)
        # Then a cached read at t=61 tells the version: due 60 s after the last record, not 60 s after t=50
        clock.advance(11)
        reader.read()
        assert told == [("STATIC", 2, {}), ("CACHED", 2, {})]


class TestTheEmbeddedClient:
    def test_a_client_with_metrics_tells_its_version_with_its_reads_per_flag(
        self, ddb: Any, table_name: str, declarations: Any, put_flags: Any, clock: Clock
    ) -> None:
        # Given a client asked for metrics, printing to a stream, on the fake clock
        put_flags(version=9)
        stream = io.StringIO()
        flags = Flags(table_name=table_name, declarations=declarations, client=ddb, metrics=True, clock=clock)
        printer = EmfPrinter("SingletonFlags/prod", "checkout", stream)
        counter = ReadCounter(printer, clock=clock, served=printer.served)
        flags._reader._counter = counter  # the same counter as metrics=True builds, on the fake clock
        flags._reader._counting = True
        flags._flag_reads = counter.flag_reads
        # When it reads flags one by one and all at once, within a minute, then once after it
        flags.get("signup_enabled")
        flags.get_bool("signup_enabled")
        flags.details("maintenance_mode")
        flags.all()
        clock.advance(61)
        flags.get("signup_enabled")
        records = served([json.loads(line) for line in stream.getvalue().splitlines()])
        # Then its first read told the version, and the read after the interval every read counted since
        assert [summary(record) for record in records] == [
            ("STATIC", 9, {"signup_enabled": 1}),
            ("CACHED", 9, {"signup_enabled": 2, "maintenance_mode": 1, ALL_FLAGS: 1}),
        ]
        # And its service is a property of the record, never a dimension (one metric whoever reads)
        assert all(record["service"] == "checkout" for record in records)
        assert all(record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["reason"]] for record in records)

    def test_a_client_without_metrics_counts_nothing(self, ddb: Any, table_name: str, declarations: Any) -> None:
        flags = Flags(table_name=table_name, declarations=declarations, client=ddb)
        assert flags._flag_reads is None


def test_the_functions_counter_prints_its_served_record_as_the_clients_printer_does(clock: Clock, capsys: Any) -> None:
    # Given the functions' counter (Powertools for the counts) and the client's printer, each serving version 5
    stream = io.StringIO()
    printer = EmfPrinter(NAMESPACE, SERVICE, stream)
    FunctionCounter(emit=lambda *count: None, clock=clock).record("STATIC", version=5, refreshed=True)
    ReadCounter(lambda *count: None, clock=clock, served=printer.served).record("STATIC", version=5, refreshed=True)
    # Then both print the same record (the timestamp aside): one design for every reader
    ours, theirs = json.loads(capsys.readouterr().out), json.loads(stream.getvalue())
    for record in (ours, theirs):
        record["_aws"].pop("Timestamp")
    assert ours == theirs


V2 = "FLAGS#V2"


@contextmanager
def cold_start(name: str) -> Iterator[ModuleType]:
    """The handler module imported anew (its module scope runs, as at a cold start); what was there is put back."""
    previous = sys.modules.pop(name, None)
    try:
        yield load_module(name, fresh=True)
    finally:
        sys.modules.pop(name, None)
        if previous is not None:
            sys.modules[name] = previous


class TestTheItemEachReaderIsConfiguredFor:
    """Every ServedVersion record names the item its reader is configured for (``item``, a property: the metric's
    dimensions stay ``reason`` alone), fixed when the reader is built."""

    def test_a_v1_client_following_the_migration_pointer_names_flags_v1_not_the_item_it_reads(
        self, ddb: Any, table_name: str, declarations: Any, capsys: Any
    ) -> None:
        # Given FLAGS#V1 pointing to FLAGS#V2 (version 8), and a client with metrics configured for V1
        ddb.put_item(TableName=table_name, Item=pointing_v1(declarations))
        ddb.put_item(TableName=table_name, Item=v2_item(version=8))
        flags = Flags(table_name=table_name, declarations=declarations, client=ddb, metrics=True, service="checkout")
        capsys.readouterr()
        # When it reads (through the pointer: V2's values)
        assert flags.state().version == 8
        (record,) = served([json.loads(line) for line in capsys.readouterr().out.splitlines()])
        # Then its record serves V2's version and names the item it is configured for: what an operator switches
        assert (record[SERVED_VERSION], record[SERVED_ITEM]) == (8, "FLAGS#V1")
        # And the item is a property, never a dimension: the alarms' metric identity is unchanged
        assert record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["reason"]]

    def test_a_client_configured_for_v2_names_v2(
        self, ddb: Any, table_name: str, declarations: Any, capsys: Any
    ) -> None:
        ddb.put_item(TableName=table_name, Item=v2_item(version=8))
        flags = Flags(
            table_name=table_name, declarations=declarations, client=ddb, sort_key=V2, metrics=True, service="checkout"
        )
        capsys.readouterr()
        flags.state()
        (record,) = served([json.loads(line) for line in capsys.readouterr().out.splitlines()])
        assert record[SERVED_ITEM] == V2

    @pytest.mark.parametrize("handler", ["read_api", "write_api"])
    def test_each_functions_reader_names_the_item_of_its_settings(
        self, handler: str, ddb: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
    ) -> None:
        # Given a function deployed with its item configured as FLAGS#V2
        monkeypatch.setenv(ITEM_SORT_KEY, V2)
        with cold_start(f"singleton_flags_service.handlers.{handler}") as module:
            capsys.readouterr()
            # When its reader's counter tells what it serves
            module.READER._counter.record("STATIC", version=3, refreshed=True)
        (record,) = served([json.loads(line) for line in capsys.readouterr().out.splitlines()])
        # Then the record names the item of the function's settings, the one its reader reads
        assert (record[SERVED_ITEM], module.SETTINGS.item_sort_key) == (V2, V2)
        assert record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["reason"]]
