"""Nothing is lost under contention: 16 writers x 25 changes on DynamoDB Local, with and without If-Match.

moto's conditional writes are not atomic under concurrency (it loses updates), so this proof runs only on
AWS's own engine. The workload is ``bench.workload.run_writers`` (the write-path bench measures
the same run).

What "nothing lost" means here, checked after every run:
1. final version - initial version == acknowledged writes == audit records, and the audit versions are
   exactly initial+1 .. final, each acknowledged by exactly one writer with the changes it reported;
2. replaying the trail from the initial state, every record's old value of a flag is the previous
   record's new value of it (the current value when it was written), and its full ``state`` matches;
3. every acknowledged value is what the flags held right after its version, so each writer's last
   acknowledged value is what the item holds wherever no later write touched that flag;
4. the final item equals the state replayed from the trail.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from bench.workload import CHANGES_PER_WRITER, WRITERS, Ack, RunResult, run_writers
from local.functions import load_module
from singleton_flags.codec import decode_plain, encode
from singleton_flags.declarations import Declarations
from singleton_flags.keys import VERSION_ATTR, audit_key
from singleton_flags.snapshot import Snapshot
from singleton_flags_service.errors import WriteConflict
from singleton_flags_service.writes.audit import audit_record
from singleton_flags_service.writes.store import FlagStore
from tests.support.events import invocation_context, rest_event
from tests.support.tables import read_singleton, read_trail


def initial_state(client: Any, table: str, declarations: Declarations) -> tuple[int, dict[str, Any]]:
    snapshot = Snapshot.from_item(read_singleton(client, table), declarations, fetched_at=0)
    assert snapshot.found and not snapshot.fallen_back
    return snapshot.version or 0, dict(snapshot.values)


def assert_nothing_lost(
    result: RunResult,
    client: Any,
    table: str,
    declarations: Declarations,
    initial_version: int,
    initial_values: dict[str, Any],
    *,
    writers: int = WRITERS,
    changes: int = CHANGES_PER_WRITER,
) -> None:
    assert result.failures == []
    assert len(result.acks) == writers * changes
    final_item = read_singleton(client, table)
    final = Snapshot.from_item(final_item, declarations, fetched_at=0)
    raw_trail = read_trail(client, table)
    trail = sorted((audit_record(item) for item in raw_trail), key=lambda record: record["version"])

    # 1. counts and contiguity, and the acknowledgements are exactly the trail
    assert final.version - initial_version == len(result.acks) == len(trail)
    assert [record["version"] for record in trail] == list(range(initial_version + 1, final.version + 1))
    acks_by_version: dict[int, Ack] = {ack.version: ack for ack in result.acks}
    assert len(acks_by_version) == len(result.acks), "two writers were acknowledged the same version"
    for record in trail:
        ack = acks_by_version[record["version"]]
        assert record["actor"] == f"writer-{ack.writer}"
        assert record["changes"] == ack.changed

    # 2. the chain: old == the value before, from the initial state on; the stored full state agrees
    states_after: dict[int, dict[str, Any]] = {}
    state = dict(initial_values)
    raw_by_version = {int(item["version"]["N"]): item for item in raw_trail}
    for record in trail:
        for name, change in record["changes"].items():
            assert change["old"] == state[name], (
                f"v{record['version']} {name}: old {change['old']!r} != {state[name]!r}"
            )
            assert change["new"] != change["old"]
            state[name] = change["new"]
        stored_state = {
            name: decode_plain(value) for name, value in raw_by_version[record["version"]]["state"]["M"].items()
        }
        assert stored_state == state, f"v{record['version']}: audit state differs from the replay"
        states_after[record["version"]] = dict(state)

    # 3. every acknowledged value held right after its version; the last ones still hold where untouched
    last_touch = {
        name: max((r["version"] for r in trail if name in r["changes"]), default=initial_version) for name in state
    }
    checked_last_values = 0
    for ack in result.acks:
        for name, value in ack.values.items():
            assert states_after[ack.version][name] == value
    for writer in range(writers):
        mine = sorted((ack for ack in result.acks if ack.writer == writer), key=lambda ack: ack.version)
        for name in mine[-1].values:
            last_mine = max(ack.version for ack in mine if name in ack.values)
            if last_touch[name] <= last_mine:
                value = next(ack.values[name] for ack in mine if ack.version == last_mine)
                assert final.values[name] == value, f"writer-{writer}'s last {name} was lost"
                checked_last_values += 1
    assert checked_last_values >= 1  # at least the writer of the final version

    # 4. the item is the replayed trail
    assert final.fallen_back == ()
    assert dict(final.values) == state
    assert {name: final_item[name] for name in declarations} == {
        name: encode(declarations[name], value) for name, value in state.items()
    }


@pytest.mark.parametrize("if_match", [False, True], ids=["server-side-retries", "if-match"])
def test_concurrent_writers_lose_nothing(
    if_match: bool, client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given the seeded singleton
    initial_version, initial_values = initial_state(ddb_local, flags_table, declarations)

    # When 16 writers each make 25 changes at the same time
    result = run_writers(client_factory, flags_table, declarations=declarations, if_match=if_match)

    # Then every acknowledged write is in the item and the trail, once, in order
    assert_nothing_lost(result, ddb_local, flags_table, declarations, initial_version, initial_values)
    if if_match:
        assert result.conflicts == 0  # an If-Match write is never retried server-side: stale is 412
    else:
        assert result.stale == 0


def plant_audit_record(client: Any, table: str, version: int) -> dict[str, Any]:
    """An AUDIT# record already holding ``version``'s key: the transaction's Put must fail on it."""
    item = {
        **audit_key(version),
        "version": {"N": str(version)},
        "planted": {"BOOL": True},
    }
    client.put_item(TableName=table, Item=item)
    return item


def test_a_failed_transaction_leaves_neither_the_change_nor_its_audit_record(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given one committed change (version 1), and the audit key of version 2 already taken
    store = FlagStore(ddb_local, flags_table, declarations, max_attempts=3, sleep=lambda _: None)
    store.change({"api_rate_limit_per_minute": 700}, actor="tester", reason="first")
    planted = plant_audit_record(ddb_local, flags_table, 2)
    item_before, trail_before = read_singleton(ddb_local, flags_table), read_trail(ddb_local, flags_table)
    tries: list[int] = []

    # When a change is attempted (its Update alone would succeed: the version condition holds)
    with pytest.raises(WriteConflict) as refused:
        FlagStore(
            ddb_local, flags_table, declarations, max_attempts=3, sleep=lambda _: None, on_retry=tries.append
        ).change({"api_rate_limit_per_minute": 900, "signup_enabled": False}, actor="tester", reason="second")

    # Then the transaction was cancelled every time, and neither half of it was written
    assert refused.value.details["attempts"] == 3 and tries == [1, 2]
    assert read_singleton(ddb_local, flags_table) == item_before
    assert item_before[VERSION_ATTR] == {"N": "1"} and item_before["api_rate_limit_per_minute"] == {"N": "700"}
    assert read_trail(ddb_local, flags_table) == trail_before
    assert planted in trail_before


def test_a_failed_update_leaves_no_audit_record(
    client_factory: Callable[[], Any],
    ddb_local: Any,
    flags_table: str,
    declarations: Declarations,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a store that read version 0, and a change committed by another writer right after that read
    writer_client = client_factory()
    store = FlagStore(writer_client, flags_table, declarations, max_attempts=1, sleep=lambda _: None)
    other = FlagStore(client_factory(), flags_table, declarations)
    real_get_item = writer_client.get_item

    def get_item_then_lose_the_race(**params: Any) -> Any:
        response = real_get_item(**params)
        monkeypatch.setattr(writer_client, "get_item", real_get_item)  # once
        other.change({"ai_search_enabled": True}, actor="other", reason="got there first")
        return response

    monkeypatch.setattr(writer_client, "get_item", get_item_then_lose_the_race)

    # When its Update, conditioned on version 0, reaches a singleton at version 1
    with pytest.raises(WriteConflict):
        store.change({"api_rate_limit_per_minute": 901}, actor="tester", reason="lost the race")

    # Then only the other change is there: version 1 and its one audit record, and no 901 anywhere
    item = read_singleton(ddb_local, flags_table)
    trail = [audit_record(raw) for raw in read_trail(ddb_local, flags_table)]
    assert item[VERSION_ATTR] == {"N": "1"} and item["api_rate_limit_per_minute"] == {"N": "600"}
    assert [(record["version"], record["actor"]) for record in trail] == [(1, "other")]


def test_conflict_that_exhausts_retries_is_409_with_retry_after(
    ddb_local: Any, flags_table: str, declarations: Declarations, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the write function on DynamoDB Local, and the next version's audit key taken
    # its module scope needs the test's TABLE_NAME and region
    write_api = load_module("singleton_flags_service.handlers.write_api")

    monkeypatch.setattr(
        write_api, "STORE", FlagStore(ddb_local, flags_table, declarations, max_attempts=4, sleep=lambda _: None)
    )
    plant_audit_record(ddb_local, flags_table, 1)
    item_before, trail_before = read_singleton(ddb_local, flags_table), read_trail(ddb_local, flags_table)

    # When PATCH /flags is sent
    response = write_api.handler(
        rest_event("PATCH", "/flags", body={"flags": {"signup_enabled": False}, "reason": "conflict"}),
        invocation_context(),
    )

    # Then 409 WRITE_CONFLICT with Retry-After, and nothing written
    assert response["statusCode"] == 409
    assert json.loads(response["body"])["error"]["code"] == "WRITE_CONFLICT"
    headers = {
        **response.get("headers", {}),
        **{k: v[-1] for k, v in (response.get("multiValueHeaders") or {}).items()},
    }
    assert int(headers["Retry-After"]) >= 1
    assert read_singleton(ddb_local, flags_table) == item_before
    assert read_trail(ddb_local, flags_table) == trail_before


def test_the_proof_catches_a_lost_update(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given a small concurrent run that passes the proof
    initial_version, initial_values = initial_state(ddb_local, flags_table, declarations)
    result = run_writers(client_factory, flags_table, declarations=declarations, writers=4, changes=3)
    assert_nothing_lost(
        result, ddb_local, flags_table, declarations, initial_version, initial_values, writers=4, changes=3
    )

    # When the last write is overwritten the way a read-modify-PutItem race does (value regresses, version kept)
    item = read_singleton(ddb_local, flags_table)
    item["api_rate_limit_per_minute"] = {"N": "1"}
    ddb_local.put_item(TableName=flags_table, Item=item)

    # Then the proof fails
    with pytest.raises(AssertionError):
        assert_nothing_lost(
            result, ddb_local, flags_table, declarations, initial_version, initial_values, writers=4, changes=3
        )
