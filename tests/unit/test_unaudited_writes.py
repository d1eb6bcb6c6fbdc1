"""Writes to the flags item that no audit record accounts for: each new image of the item, off the table's stream,
is checked against the audit record of its version (moto for the items the store really commits; direct
UpdateItem calls for what someone with table rights could do around the API).
"""

from __future__ import annotations

from typing import Any

import pytest

from local.functions import load_module
from singleton_flags.declarations import Declarations
from singleton_flags.keys import (
    SINGLETON_PK,
    SUPERSEDED_BY_ATTR,
    TTL_ATTR,
    UPDATED_AT_ATTR,
    VERSION_ATTR,
    singleton_key,
)
from singleton_flags.migration import parse_mapping
from singleton_flags_service.events import (
    DIFFERS,
    FLAGS_ITEM_STREAM_FILTER,
    NO_RECORD,
    STREAM_FILTERS,
    AuditCheck,
    ChangePublisher,
    is_flags_item_record,
)
from singleton_flags_service.vocabulary import UNAUDITED_WRITES
from singleton_flags_service.writes.store import FlagStore
from tests.support.events import invocation_context
from tests.support.migration import GOOD, new_declarations
from tests.support.unit import Output, emf_metrics
from tests.unit.test_change_events import BUS, Bus, stream_record


class Reads:
    """The table's GetItem, counted, and failing ``fail`` times first (throttled, unreachable)."""

    def __init__(self, ddb: Any, fail: int = 0) -> None:
        self._ddb = ddb
        self._fail = fail
        self.calls: list[dict[str, Any]] = []

    def get_item(self, **params: Any) -> dict[str, Any]:
        self.calls.append(params)
        if len(self.calls) <= self._fail:
            raise ConnectionError("endpoint unreachable")
        answer: dict[str, Any] = self._ddb.get_item(**params)
        return answer


@pytest.fixture
def store(ddb: Any, table_name: str, declarations: Declarations) -> FlagStore:
    """Version 1 committed through the API's store (the seed wrote version 0)."""
    flags = FlagStore(ddb, table_name, declarations)
    flags.seed(actor="cloudformation:test", reason="deploy")
    flags.change({"api_rate_limit_per_minute": 1200}, actor="alice", reason="launch")
    return flags


def flags_item(ddb: Any, table_name: str) -> dict[str, Any]:
    item: dict[str, Any] = ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True)["Item"]
    return item


def direct_update(ddb: Any, table_name: str, expression: str, values: dict[str, Any]) -> dict[str, Any]:
    """UpdateItem on the flags item, as a principal with table rights could call it: no transaction, no record."""
    ddb.update_item(
        TableName=table_name, Key=singleton_key(), UpdateExpression=expression, ExpressionAttributeValues=values
    )
    return flags_item(ddb, table_name)


def check(ddb: Any, table_name: str, *images: dict[str, Any]) -> Any:
    event = {"Records": [stream_record(image, sequence, "MODIFY") for sequence, image in enumerate(images, 1)]}
    return AuditCheck(ddb.get_item, table_name=table_name).check(event)


def test_an_audited_change_is_quiet(store: FlagStore, ddb: Any, table_name: str) -> None:
    # Given version 1 written with its audit record in one transaction
    # When its new image is checked
    result = check(ddb, table_name, flags_item(ddb, table_name))
    # Then it is no unaudited write
    assert (result.checked, result.unaudited, result.failed_sequence_number) == (1, [], None)


def test_a_direct_update_that_bumps_the_version_without_a_record_is_unaudited(
    store: FlagStore, ddb: Any, table_name: str
) -> None:
    # Given someone with table rights sets a flag and the next version with UpdateItem, around the API
    image = direct_update(
        ddb,
        table_name,
        f"SET {VERSION_ATTR} = :two, signup_enabled = :off",
        {":two": {"N": "2"}, ":off": {"BOOL": False}},
    )
    # Then version 2 has no audit record: an unaudited write, naming its version and the record's absence
    (found,) = check(ddb, table_name, image).unaudited
    assert (found.version, found.problem, found.changed) == (2, NO_RECORD, {})
    assert found.log_fields()["record_missing"] is True


def test_a_direct_update_that_changes_a_flag_without_bumping_the_version_is_unaudited(
    store: FlagStore, ddb: Any, table_name: str
) -> None:
    # Given a flag set directly, the version left at 1 (whose record holds 1200)
    image = direct_update(ddb, table_name, "SET api_rate_limit_per_minute = :one", {":one": {"N": "1"}})
    # Then the item differs from its version's record: an unaudited write, naming what changed
    (found,) = check(ddb, table_name, image).unaudited
    assert (found.version, found.problem) == (1, DIFFERS)
    assert found.changed == {"api_rate_limit_per_minute": {"recorded": 1200, "item": 1}}
    assert found.log_fields()["record_missing"] is False


def test_maintenance_bookkeeping_set_directly_is_unaudited(store: FlagStore, ddb: Any, table_name: str) -> None:
    # Given a window's owner written directly (the record keeps the maintenance bookkeeping in its state)
    image = direct_update(ddb, table_name, "SET maintenance_owner = :owner", {":owner": {"S": "nightly"}})
    (found,) = check(ddb, table_name, image).unaudited
    assert found.changed == {"maintenance_owner": {"recorded": None, "item": "nightly"}}


def test_the_seeds_version_0_is_not_an_unaudited_write(ddb: Any, table_name: str, declarations: Declarations) -> None:
    # Given a new table's seed: version 0, the declared initial values, and (by design) no record of its own
    FlagStore(ddb, table_name, declarations).seed(actor="cloudformation:test", reason="deploy")
    reads = Reads(ddb)
    event = {"Records": [stream_record(flags_item(ddb, table_name), 1, "INSERT")]}
    result = AuditCheck(reads.get_item, table_name=table_name).check(event)
    # Then it is checked and quiet, without reading the trail
    assert (result.checked, result.unaudited, reads.calls) == (1, [], [])


@pytest.mark.parametrize(
    ("expression", "values"),
    [
        (f"SET {UPDATED_AT_ATTR} = :at", {":at": {"S": "2026-12-02T05:00:00.000+00:00"}}),
        (f"SET {TTL_ATTR} = :ttl", {":ttl": {"N": "4102444800"}}),
        (
            f"SET {SUPERSEDED_BY_ATTR} = :by",
            {":by": {"S": "arn:aws:dynamodb:eu-west-1:111122223333:table/flags-v2"}},
        ),
    ],
    ids=["updated_at", "ttl", "superseded-marker"],
)
def test_bookkeeping_only_updates_are_not_unaudited_writes(
    store: FlagStore, ddb: Any, table_name: str, expression: str, values: dict[str, Any]
) -> None:
    # Given a write that changes neither the version nor a flag
    image = direct_update(ddb, table_name, expression, values)
    # Then it matches its version's record
    assert check(ddb, table_name, image).unaudited == []


def test_a_superseded_item_is_not_checked(store: FlagStore, ddb: Any, table_name: str) -> None:
    # Given the item retired by the superseded marker, then written at a version with no record
    direct_update(ddb, table_name, f"SET {SUPERSEDED_BY_ATTR} = :by", {":by": {"S": "FLAGS#V2"}})
    image = direct_update(ddb, table_name, f"SET {VERSION_ATTR} = :nine", {":nine": {"N": "9"}})
    # Then nothing of it is served (readers answer the fallbacks): it is not an unaudited write
    assert check(ddb, table_name, image).unaudited == []


def test_only_new_images_of_the_flags_item_are_checked(store: FlagStore, ddb: Any, table_name: str) -> None:
    item = flags_item(ddb, table_name)
    records = [
        stream_record(item, 1, "MODIFY"),
        stream_record(item, 2, "INSERT"),
        stream_record(item, 3, "REMOVE"),  # a deleted item: readers serve the fallbacks (DefaultReads alarms)
        stream_record({**item, "PK": {"S": "AUDIT#APP"}}, 4, "INSERT"),
    ]
    assert [is_flags_item_record(record) for record in records] == [True, True, False, False]
    # the mapping's filters let the item's partition in, beside the audit records and the change requests
    assert FLAGS_ITEM_STREAM_FILTER == {
        "dynamodb": {"Keys": {"PK": {"S": [SINGLETON_PK]}}, "NewImage": {"PK": {"S": [SINGLETON_PK]}}}
    }
    assert FLAGS_ITEM_STREAM_FILTER in STREAM_FILTERS


def test_a_record_that_cannot_be_read_is_reported_and_checked_again(
    store: FlagStore, ddb: Any, table_name: str
) -> None:
    item = flags_item(ddb, table_name)
    event = {"Records": [stream_record(item, 1, "MODIFY"), stream_record(item, 2, "MODIFY")]}
    reads = Reads(ddb, fail=1)
    result = AuditCheck(reads.get_item, table_name=table_name).check(event)
    # Then the first image not checked is the batch's failure: Lambda retries from it
    assert result.failed_sequence_number == event["Records"][0]["dynamodb"]["SequenceNumber"]
    assert result.checked == 0 and "unreachable" in result.errors[0]
    assert AuditCheck(reads.get_item, table_name=table_name).check(event).checked == 2


# ---------------------------------------------------------------------------------------------- the function


@pytest.fixture
def change_events_function(monkeypatch: pytest.MonkeyPatch, table_name: str) -> Any:
    monkeypatch.setenv("EVENT_BUS_NAME", BUS)
    monkeypatch.setenv("FLAGS_STAGE", "prod")
    monkeypatch.setenv("TABLE_NAME", table_name)
    return load_module("singleton_flags_service.handlers.change_events", fresh=True)


def test_the_function_logs_and_counts_an_unaudited_write(
    change_events_function: Any,
    store: FlagStore,
    ddb: Any,
    table_name: str,
    stdout: Output,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = change_events_function
    monkeypatch.setattr(module, "AUDIT_CHECK", AuditCheck(ddb.get_item, table_name=table_name))
    monkeypatch.setattr(
        module, "PUBLISHER", ChangePublisher(Bus().put_events, event_bus_name=BUS, stage="prod", sleep=lambda _: None)
    )
    audited = flags_item(ddb, table_name)
    unaudited = direct_update(ddb, table_name, f"SET {VERSION_ATTR} = :two", {":two": {"N": "2"}})
    event = {"Records": [stream_record(audited, 1, "MODIFY"), stream_record(unaudited, 2, "MODIFY")]}
    # When the function reads both images
    assert module.handler(event, invocation_context()) == {"batchItemFailures": []}
    # Then the unaudited one is counted (alarmed) and logged at ERROR with its version and the record's absence
    records = stdout.records()
    assert (UNAUDITED_WRITES, 1) in [(name, value) for name, value, _ in emf_metrics(records)]
    (logged,) = [record for record in records if record.get("message") == "unaudited write to the flags item"]
    assert (logged["level"], logged["version"], logged["record_missing"]) == ("ERROR", 2, True)


def test_the_function_reports_the_first_record_it_could_neither_publish_nor_check(
    change_events_function: Any, store: FlagStore, ddb: Any, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = change_events_function
    monkeypatch.setattr(module, "AUDIT_CHECK", AuditCheck(Reads(ddb, fail=99).get_item, table_name=table_name))
    monkeypatch.setattr(
        module, "PUBLISHER", ChangePublisher(Bus().put_events, event_bus_name=BUS, stage="prod", sleep=lambda _: None)
    )
    item = flags_item(ddb, table_name)
    event = {"Records": [stream_record(item, 1, "MODIFY"), stream_record(item, 2, "MODIFY")]}
    first = event["Records"][0]["dynamodb"]["SequenceNumber"]
    assert module.handler(event, invocation_context()) == {"batchItemFailures": [{"itemIdentifier": first}]}


def test_no_read_starts_that_the_invocations_time_left_would_not_cover(
    store: FlagStore, ddb: Any, table_name: str
) -> None:
    item = flags_item(ddb, table_name)
    event = {"Records": [stream_record(item, 1, "MODIFY"), stream_record(item, 2, "MODIFY")]}
    reads = Reads(ddb)
    ticks = iter([0.0, 1.0, 20.0])  # the start, before the first read, before the second read
    result = AuditCheck(reads.get_item, table_name=table_name).check(
        event, budget_seconds=10.0, monotonic=lambda: next(ticks)
    )
    # Then the second image is left for Lambda's retry instead of being cut off by the timeout
    assert (result.checked, len(reads.calls)) == (1, 1)
    assert result.failed_sequence_number == event["Records"][1]["dynamodb"]["SequenceNumber"]
    assert "no time left" in result.errors[0]


def test_while_a_migration_expands_the_mirror_is_checked_through_the_mapping(
    store: FlagStore, ddb: Any, table_name: str, declarations: Declarations
) -> None:
    # Given the flags migrated to V2 and one write after it (V2 written, V1 mirrored, one record in V2's shape)
    store.migrate(new_declarations(declarations), parse_mapping(GOOD), actor="alice", reason="to V2")
    store.change({"search_ranking": "hybrid"}, actor="bob", reason="after")
    v1 = flags_item(ddb, table_name)
    v2 = ddb.get_item(TableName=table_name, Key=singleton_key("FLAGS#V2"), ConsistentRead=True)["Item"]
    # When both new images are checked / Then both are accounted for by the record of their version
    assert check(ddb, table_name, v1, v2).unaudited == []
    # When V1 is changed directly, around the API (its version left as is)
    image = direct_update(ddb, table_name, "SET search_ranking = :other", {":other": {"S": "classic"}})
    # Then the mirror differs from the record seen through the mapping: an unaudited write
    (found,) = check(ddb, table_name, image).unaudited
    assert found.changed == {"search_ranking": {"recorded": "hybrid", "item": "classic"}}
    # And a flag the migration removed, set again on V1 directly, is one too
    image = direct_update(
        ddb,
        table_name,
        "SET search_ranking = :back, ai_search_enabled = :on",
        {":back": {"S": "hybrid"}, ":on": {"BOOL": True}},
    )
    (found,) = check(ddb, table_name, image).unaudited
    assert found.changed == {"ai_search_enabled": {"recorded": None, "item": True}}
