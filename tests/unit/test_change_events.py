"""Change events: audit record images in, one ``Flags Changed`` entry per version out, PutEvents' per-entry
failures retried a bounded number of times and then reported as the batch's first failure (moto for the
records the store really commits; an in-memory PutEvents that answers as EventBridge does).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from local.functions import load_module
from singleton_flags.declarations import Declarations
from singleton_flags.keys import AUDIT_PK, PARTITION_KEY, SORT_KEY, singleton_key
from singleton_flags_service.events import (
    DETAIL_TYPE,
    SOURCE,
    STREAM_FILTER,
    ChangePublisher,
    change_event,
    is_change_record,
)
from singleton_flags_service.vocabulary import CHANGE_EVENTS_PUBLISHED, CHANGE_EVENTS_REFUSED
from singleton_flags_service.writes.store import FlagStore
from tests.support.events import invocation_context
from tests.support.tables import read_trail
from tests.support.unit import Output, emf_metrics

BUS = "singleton-flags-prod"


def stream_record(item: dict[str, Any], sequence: int, event_name: str = "INSERT") -> dict[str, Any]:
    """A DynamoDB stream record (NEW_IMAGE) as Lambda delivers it, for ``item``."""
    return {
        "eventID": f"event-{sequence}",
        "eventName": event_name,
        "eventSource": "aws:dynamodb",
        "dynamodb": {
            "Keys": {PARTITION_KEY: item[PARTITION_KEY], SORT_KEY: item[SORT_KEY]},
            **({} if event_name == "REMOVE" else {"NewImage": item}),  # a REMOVE carries no new image
            "SequenceNumber": f"{sequence:021d}",
            "StreamViewType": "NEW_IMAGE",
        },
    }


class Bus:
    """PutEvents as EventBridge answers it: one result per entry, in order; ``refuse`` decides per entry."""

    def __init__(self, refuse: Any = None, fail_calls: int = 0) -> None:
        self.calls: list[list[dict[str, Any]]] = []
        self.accepted: list[dict[str, Any]] = []
        self._refuse = refuse or (lambda entry, call: False)
        self._fail_calls = fail_calls

    def put_events(self, **params: Any) -> dict[str, Any]:
        entries = params["Entries"]
        assert 1 <= len(entries) <= 10, "PutEvents takes 1 to 10 entries"
        self.calls.append(entries)
        if len(self.calls) <= self._fail_calls:
            raise ConnectionError("endpoint unreachable")
        results = []
        for entry in entries:
            if self._refuse(entry, len(self.calls)):
                results.append({"ErrorCode": "ThrottlingException", "ErrorMessage": "Rate exceeded"})
            else:
                self.accepted.append(entry)
                results.append({"EventId": f"id-{len(self.accepted)}"})
        return {"FailedEntryCount": sum("ErrorCode" in r for r in results), "Entries": results}

    def versions(self) -> list[int]:
        return [json.loads(entry["Detail"])["version"] for entry in self.accepted]


def publisher(bus: Bus, attempts: int = 3) -> ChangePublisher:
    return ChangePublisher(bus.put_events, event_bus_name=BUS, stage="prod", attempts=attempts, sleep=lambda _: None)


@pytest.fixture
def trail(ddb: Any, table_name: str, declarations: Declarations) -> list[dict[str, Any]]:
    """The records of versions 1 (PATCH) and 2 (revert to 0), as the store commits them on moto (the seed of an
    empty table writes version 0 with no record)."""
    store = FlagStore(ddb, table_name, declarations)
    store.seed(actor="cloudformation:test", reason="deploy")
    store.change({"signup_enabled": False, "api_rate_limit_per_minute": 1200}, actor="alice", reason="launch")
    store.revert(0, actor="bob", reason="back to the seed")
    return read_trail(ddb, table_name)


def batch(trail: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Records": [stream_record(item, sequence) for sequence, item in enumerate(trail, start=1)]}


# ---------------------------------------------------------------------------------------------- record -> event


def test_a_patch_becomes_its_documented_event_with_plain_json_changes(trail: list[dict[str, Any]]) -> None:
    detail = change_event(trail[0], stage="prod")
    assert detail == {
        "stage": "prod",
        "version": 1,
        "previous_version": 0,
        "kind": "change",
        "actor": "alice",
        "reason": "launch",
        "time": detail["time"],
        "changes": {
            "signup_enabled": {"old": True, "new": False},
            "api_rate_limit_per_minute": {"old": 600, "new": 1200},
        },
    }
    assert datetime.fromisoformat(detail["time"]).utcoffset() is not None  # the record's own time, with its zone


def test_the_first_version_has_no_previous_version_and_every_kind_passes_through(trail: list[dict[str, Any]]) -> None:
    revert = change_event(trail[1], stage="prod")
    assert (revert["version"], revert["previous_version"]) == (2, 1)
    assert (revert["kind"], revert["changes"]["api_rate_limit_per_minute"]) == ("revert", {"old": 1200, "new": 600})
    first = change_event({**trail[0], "version": {"N": "0"}, "kind": {"S": "seed"}}, stage="staging")
    assert (first["version"], first["previous_version"], first["kind"], first["stage"]) == (0, None, "seed", "staging")
    unknown = {**trail[0], "kind": {"S": "guard-revert"}, "actor": {"S": "guard"}}
    assert (change_event(unknown, stage="prod")["kind"], change_event(unknown, stage="prod")["actor"]) == (
        "guard-revert",
        "guard",
    )


def test_each_version_is_one_entry_on_the_stages_bus(trail: list[dict[str, Any]]) -> None:
    bus = Bus()
    result = publisher(bus).publish(batch(trail))
    assert result.response() == {"batchItemFailures": []}
    assert bus.versions() == [1, 2]
    assert len(bus.calls) == 1  # one PutEvents for up to ten records
    entry = bus.accepted[0]
    assert (entry["Source"], entry["DetailType"], entry["EventBusName"]) == (SOURCE, DETAIL_TYPE, BUS)
    assert entry["Source"] == "singleton-flags" and entry["DetailType"] == "Flags Changed"
    assert entry["Time"] == datetime.fromisoformat(json.loads(entry["Detail"])["time"])
    assert result.published == 2


def test_only_inserts_of_audit_records_are_events(trail: list[dict[str, Any]], ddb: Any, table_name: str) -> None:
    singleton = ddb.get_item(TableName=table_name, Key={"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}})["Item"]
    records = [
        stream_record(singleton, 1, "MODIFY"),
        stream_record(singleton, 2, "INSERT"),  # another partition
        stream_record(trail[0], 3, "REMOVE"),  # TTL expiry of an audit record
        stream_record(trail[0], 4, "INSERT"),
    ]
    assert [is_change_record(record) for record in records] == [False, False, False, True]
    bus = Bus()
    publisher(bus).publish({"Records": records})
    assert bus.versions() == [1]
    # the mapping's filter says the same thing, as Lambda's FilterCriteria pattern
    assert STREAM_FILTER == {"dynamodb": {"Keys": {"PK": {"S": [AUDIT_PK]}}, "NewImage": {"PK": {"S": [AUDIT_PK]}}}}


def test_more_than_ten_records_go_in_stream_order_ten_at_a_time(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    store = FlagStore(ddb, table_name, declarations)
    store.seed(actor="cloudformation:test", reason="deploy")
    for rate in range(601, 626):  # versions 1..25
        store.change({"api_rate_limit_per_minute": rate}, actor="alice", reason="ramp")
    bus = Bus()
    publisher(bus).publish(batch(read_trail(ddb, table_name)))
    assert [len(call) for call in bus.calls] == [10, 10, 5]
    assert bus.versions() == list(range(1, 26))


def test_a_write_that_restores_a_missing_item_is_two_versions_and_two_events(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    # Given version 1 committed, then the flags item lost
    store = FlagStore(ddb, table_name, declarations)
    store.seed(actor="cloudformation:test", reason="deploy")
    store.change({"signup_enabled": False}, actor="alice", reason="launch")
    ddb.delete_item(TableName=table_name, Key=singleton_key())
    # When a PATCH restores it (version 2, kind restore) before its own change (version 3), in one transaction
    store.change({"trace_sample_rate": 0.5}, actor="bob", reason="more traces")
    bus = Bus()
    publisher(bus).publish(batch(read_trail(ddb, table_name)))
    # Then each version is one event, in order, the restore changing nothing
    details = [json.loads(entry["Detail"]) for entry in bus.accepted]
    assert [(d["version"], d["previous_version"], d["kind"]) for d in details] == [
        (1, 0, "change"),
        (2, 1, "restore"),
        (3, 2, "change"),
    ]
    assert details[1]["changes"] == {}
    assert details[2]["changes"] == {"trace_sample_rate": {"old": 0.05, "new": 0.5}}


# ---------------------------------------------------------------------------------------------- failures


def test_a_refused_entry_is_sent_again_and_only_it(trail: list[dict[str, Any]]) -> None:
    bus = Bus(refuse=lambda entry, call: call == 1 and json.loads(entry["Detail"])["version"] == 1)
    result = publisher(bus).publish(batch(trail))
    assert result.response() == {"batchItemFailures": []}
    assert [len(call) for call in bus.calls] == [2, 1]
    assert sorted(bus.versions()) == [1, 2]
    assert (result.published, result.refused_entries) == (2, 1)


def test_an_entry_refused_every_time_reports_its_record_and_nothing_after_it_is_sent(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    store = FlagStore(ddb, table_name, declarations)
    store.seed(actor="cloudformation:test", reason="deploy")
    for rate in range(601, 616):  # versions 1..15: two PutEvents calls' worth
        store.change({"api_rate_limit_per_minute": rate}, actor="alice", reason="ramp")
    event = batch(read_trail(ddb, table_name))
    bus = Bus(refuse=lambda entry, call: json.loads(entry["Detail"])["version"] == 4)
    result = publisher(bus, attempts=3).publish(event)
    # Then the record of version 4 is the batch's failure: Lambda retries from it (and everything after it)
    failed = event["Records"][3]["dynamodb"]["SequenceNumber"]
    assert result.response() == {"batchItemFailures": [{"itemIdentifier": failed}]}
    assert [len(call) for call in bus.calls] == [10, 1, 1]  # three attempts at version 4, no second chunk
    assert 4 not in bus.versions() and max(bus.versions()) == 10
    assert result.refused_entries == 3
    assert any("ThrottlingException" in error for error in result.errors)


def test_a_failing_call_is_retried_a_bounded_number_of_times(trail: list[dict[str, Any]]) -> None:
    bus = Bus(fail_calls=5)
    event = batch(trail)
    result = publisher(bus, attempts=3).publish(event)
    assert len(bus.calls) == 3
    first = event["Records"][0]["dynamodb"]["SequenceNumber"]
    assert result.response() == {"batchItemFailures": [{"itemIdentifier": first}]}
    assert (result.published, result.refused_entries) == (0, 6)
    recovering = Bus(fail_calls=1)
    assert publisher(recovering).publish(event).response() == {"batchItemFailures": []}
    assert recovering.versions() == [1, 2]


def test_a_record_that_is_no_audit_record_is_reported_not_skipped(trail: list[dict[str, Any]]) -> None:
    broken = {key: value for key, value in trail[1].items() if key != "actor"}
    event = batch([trail[0], broken, trail[0]])
    bus = Bus()
    result = publisher(bus).publish(event)
    reported = event["Records"][1]["dynamodb"]["SequenceNumber"]
    assert result.response() == {"batchItemFailures": [{"itemIdentifier": reported}]}
    assert bus.versions() == [1]


# ---------------------------------------------------------------------------------------------- the function


@pytest.fixture
def change_events_function(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("EVENT_BUS_NAME", BUS)
    monkeypatch.setenv("FLAGS_STAGE", "prod")
    monkeypatch.setenv("TABLE_NAME", "flags")
    return load_module("singleton_flags_service.handlers.change_events", fresh=True)


def test_the_function_answers_a_partial_batch_response_and_counts_refusals(
    change_events_function: Any, trail: list[dict[str, Any]], stdout: Output, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = change_events_function
    assert (module.SETTINGS.event_bus_name, module.SETTINGS.stage) == (BUS, "prod")
    bus = Bus(refuse=lambda entry, call: json.loads(entry["Detail"])["version"] == 2)
    monkeypatch.setattr(module, "PUBLISHER", publisher(bus))
    event = batch(trail)
    assert module.handler(event, invocation_context()) == {
        "batchItemFailures": [{"itemIdentifier": event["Records"][1]["dynamodb"]["SequenceNumber"]}]
    }
    records = stdout.records()
    counts = {name: value for name, value, _ in emf_metrics(records)}
    assert counts == {CHANGE_EVENTS_PUBLISHED: 1, CHANGE_EVENTS_REFUSED: 3}
    assert any(
        record.get("level") == "ERROR" and "ThrottlingException" in record.get("error", "") for record in records
    )


def test_the_function_refuses_to_start_without_its_bus(monkeypatch: pytest.MonkeyPatch) -> None:
    from singleton_flags_service.contract import SettingsError

    monkeypatch.delenv("EVENT_BUS_NAME", raising=False)
    monkeypatch.setenv("FLAGS_STAGE", "prod")
    with pytest.raises(SettingsError, match="EVENT_BUS_NAME"):
        load_module("singleton_flags_service.handlers.change_events", fresh=True)
