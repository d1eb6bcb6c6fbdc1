"""A migration FLAGS#V1 -> FLAGS#V2 on DynamoDB Local: expand, then contract, never a split.

The service is deployed for FLAGS#V1 (its declarations are the earlier shape) when the migration runs: the later
item is written at L+1 with one audit record, readers configured for V1 follow the pointer, and every writer of the
service (a window, a guard's revert, a scheduled delivery) writes V2 and mirrors into V1 in the same transaction.
A V1 write racing the migration lands before it (and is carried into V2) or after it (through the seam): never
lost. Finalising marks V1 superseded; its readers then serve their fallbacks and say why.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from flagctl.errors import FlagctlError
from flagctl.readers_seen import Heard, SeenSource, readers_seen, unless_seen
from singleton_flags import Flags
from singleton_flags.declarations import Declarations, parse_declarations
from singleton_flags.keys import MIGRATED_FROM_ATTR, MIGRATED_TO_ATTR, SUPERSEDED_BY_ATTR, singleton_key
from singleton_flags.migration import parse_mapping
from singleton_flags.vocabulary import DEFAULT
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.errors import FlagsMigrated, FlagsSuperseded, MigrationRefused, NotAnApprover
from singleton_flags_service.events import AuditCheck
from singleton_flags_service.guards.alarms import ALARM, OK
from singleton_flags_service.guards.guarding import AlarmEvent, GuardService
from singleton_flags_service.guards.items import GuardBook, GuardSpec
from singleton_flags_service.guards.writes import NewGuard, store_options
from singleton_flags_service.maintenance.windows import MaintenanceWindows, Window
from singleton_flags_service.schedules.apply import ScheduledChangeRunner
from singleton_flags_service.schedules.changes import ScheduleItems
from singleton_flags_service.schedules.timing import parse_schedule_time
from singleton_flags_service.writes.audit import audit_record
from singleton_flags_service.writes.idempotency import Idempotency
from singleton_flags_service.writes.store import FlagStore
from tests.support.migration import GOOD, new_declarations
from tests.support.tables import read_trail

V1, V2 = "FLAGS#V1", "FLAGS#V2"
WINDOW = "weekly-patching"
ALARM_NAME = "singleton-flags-test-migration-guard"


class Alarms:
    def __init__(self, state: str = OK) -> None:
        self.state = state

    def states(self, names: Any) -> dict[str, str]:
        return dict.fromkeys(names, self.state)


def item(client: Any, table: str, sort_key: str) -> dict[str, Any]:
    found: dict[str, Any] = client.get_item(TableName=table, Key=singleton_key(sort_key), ConsistentRead=True)["Item"]
    return found


def number(attribute: dict[str, str]) -> float:
    """A stored number (DynamoDB may keep 1200.0 as "1200": the declared type says float)."""
    return float(attribute["N"])


def v1_store(client: Any, table: str, declarations: Declarations, **options: Any) -> FlagStore:
    return FlagStore(client, table, declarations, sleep=lambda _: None, **options)


def live_values(client: Any, table: str, declarations: Declarations) -> int:
    """V1 with live values (not its initials): the version it is at."""
    result = v1_store(client, table, declarations).change(
        {"api_rate_limit_per_minute": 1200, "search_ranking": "semantic", "ai_search_enabled": True},
        actor="alice",
        reason="live values",
    )
    assert result.snapshot.version is not None
    return result.snapshot.version


def migrate(client: Any, table: str, declarations: Declarations) -> int:
    result = v1_store(client, table, declarations).migrate(
        new_declarations(declarations), parse_mapping(GOOD), actor="alice", reason="to V2"
    )
    return result.version


def test_a_migration_writes_v2_at_l_plus_1_and_v1_readers_serve_its_values(
    ddb_local: Any, flags_table: str, declarations: Declarations, caplog: pytest.LogCaptureFixture
) -> None:
    # Given V1 with live values, at version L
    last = live_values(ddb_local, flags_table, declarations)
    # When it is migrated (one rename, one int -> float, one removal, one new flag)
    version = migrate(ddb_local, flags_table, declarations)
    # Then V2 holds the values in its shape at L+1, pointing back to V1
    assert version == last + 1
    v2 = item(ddb_local, flags_table, V2)
    assert v2["schema_version"] == {"N": str(last + 1)}
    assert (v2["ranking_strategy"], number(v2["api_rate_limit_per_minute"]), v2["assistant_enabled"]) == (
        {"S": "semantic"},
        1200.0,
        {"BOOL": True},
    )
    assert "ai_search_enabled" not in v2 and v2[MIGRATED_FROM_ATTR] == {"S": V1}
    # And V1 points to it, at the same version, without the flag it can no longer hold
    v1 = item(ddb_local, flags_table, V1)
    assert (v1[MIGRATED_TO_ATTR], v1["schema_version"]) == ({"S": V2}, {"N": str(last + 1)})
    assert "ai_search_enabled" not in v1 and v1["api_rate_limit_per_minute"] == {"N": "1200"}
    # And one audit record, of kind migration, holds V2's state
    records = [audit_record(raw) for raw in read_trail(ddb_local, flags_table)]
    (migration,) = [record for record in records if record["version"] == last + 1]
    assert (migration["kind"], migration["item"], migration["state"]["api_rate_limit_per_minute"]) == (
        "migration",
        V2,
        1200.0,
    )
    assert max(record["version"] for record in records) == last + 1

    # When a reader configured for V1 reads
    caplog.set_level(logging.INFO, logger="singleton_flags")
    flags = Flags(table_name=flags_table, declarations=declarations, client=ddb_local, max_age=0)
    details = flags.all_details()
    # Then it serves V2's values in V1's shape, the removed flag as its fallback (DEFAULT), at V2's version
    assert (details["api_rate_limit_per_minute"].value, details["search_ranking"].value) == (1200, "semantic")
    assert details["api_rate_limit_per_minute"].version == last + 1
    removed = details["ai_search_enabled"]
    assert (removed.value, removed.reason) == (declarations["ai_search_enabled"].fallback, DEFAULT)
    assert any("removed by the migration" in message for message in caplog.messages)


def test_every_writer_after_the_migration_writes_v2_and_mirrors_into_v1(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given a migrated table, the service still deployed for V1
    live_values(ddb_local, flags_table, declarations)
    migrated_at = migrate(ddb_local, flags_table, declarations)
    store = v1_store(ddb_local, flags_table, declarations)

    # When a maintenance window starts
    windows = MaintenanceWindows(store, {WINDOW: Window(WINDOW, 3600)})
    outcome = windows.handle(
        {"action": "start", "window": WINDOW, "scheduled_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    )
    assert outcome.status == "started"
    # Then V2 holds maintenance with its owner, and V1 mirrors it at the same version
    v2, v1 = item(ddb_local, flags_table, V2), item(ddb_local, flags_table, V1)
    assert (v2["maintenance_mode"], v2["maintenance_owner"], v2["schema_version"]) == (
        {"BOOL": True},
        {"S": WINDOW},
        {"N": str(migrated_at + 1)},
    )
    assert (v1["maintenance_mode"], v1["maintenance_owner"], v1["schema_version"]) == (
        v2["maintenance_mode"],
        v2["maintenance_owner"],
        v2["schema_version"],
    )

    # When a guarded change (V1's names) is made, then its alarm fires: the guard reverts it
    guard = NewGuard(GuardSpec((ALARM_NAME,), 30), flags_table, "it", time.time(), 86400, Alarms())
    changed = store.change({"search_ranking": "hybrid"}, actor="bob", reason="guarded", **store_options(guard))
    assert changed.applied and item(ddb_local, flags_table, V2)["ranking_strategy"] == {"S": "hybrid"}
    guards = GuardService(store, GuardBook(ddb_local, flags_table), Alarms(ALARM))
    guarded = guards.book.get(changed.snapshot.version or 0)
    assert guarded is not None
    reverted = guards.on_alarm(guarded, AlarmEvent(ALARM_NAME, guarded.created_at + 1))
    assert reverted.status == "reverted", reverted
    # Then V2 holds the value again, under its new name, and V1 mirrors it
    v2, v1 = item(ddb_local, flags_table, V2), item(ddb_local, flags_table, V1)
    assert (v2["ranking_strategy"], v1["search_ranking"]) == ({"S": "semantic"}, {"S": "semantic"})
    assert v2["schema_version"] == v1["schema_version"]

    # When a scheduled change (V1's names) is delivered
    schedules = ScheduleItems(ddb_local, flags_table, retention_seconds=86400)
    when = parse_schedule_time("2027-03-01T09:00:00Z")
    now = datetime(2027, 3, 1, 8, 0, tzinfo=UTC).timestamp()
    schedules.put_pending(
        "20270301T080000Z-0badcafe", {"api_rate_limit_per_minute": 900}, "lower", when, None, "al", now
    )
    runner = ScheduledChangeRunner(store, schedules, declarations)
    assert runner.handle({"scheduled_change": "20270301T080000Z-0badcafe"}).status == "applied"
    # Then V2 holds it converted, V1 as it was given
    v2, v1 = item(ddb_local, flags_table, V2), item(ddb_local, flags_table, V1)
    assert (number(v2["api_rate_limit_per_minute"]), v1["api_rate_limit_per_minute"]) == (900.0, {"N": "900"})
    # And every version after the migration is recorded in V2's shape
    after = [
        audit_record(raw) for raw in read_trail(ddb_local, flags_table) if audit_record(raw)["version"] > migrated_at
    ]
    assert {record["item"] for record in after} == {V2}


def race(client_factory: Callable[[], Any], table: str, declarations: Declarations, value: int) -> Any:
    """A V1 write of ``value`` and the migration, released together; the write's result (or its exception)."""
    barrier = threading.Barrier(2)
    results: list[Any] = [None, None]

    def write() -> None:
        barrier.wait()
        try:
            results[0] = v1_store(client_factory(), table, declarations).change(
                {"api_rate_limit_per_minute": value}, actor="racer", reason="race"
            )
        except Exception as exc:  # noqa: BLE001 - inspected by the test
            results[0] = exc

    def run_migration() -> None:
        barrier.wait()
        results[1] = migrate(client_factory(), table, declarations)

    threads = [threading.Thread(target=write), threading.Thread(target=run_migration)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert isinstance(results[1], int)  # the migration applied
    return results[0]


def test_a_v1_write_racing_the_migration_is_never_lost(
    ddb_local: Any, client_factory: Callable[[], Any], flags_table: str, declarations: Declarations
) -> None:
    for round_ in range(6):
        # Given V1 with live values (a fresh start each round)
        _reset(ddb_local, flags_table)
        live_values(ddb_local, flags_table, declarations)
        value = 1000 + round_
        # When a V1 write and the migration race
        written = race(client_factory, flags_table, declarations, value)
        # Then the write was applied (before the migration, carried into V2; or after it, through the seam) or
        # refused with an error: when applied, V2 holds it, and V1 mirrors it
        if isinstance(written, Exception):
            assert isinstance(written, FlagsMigrated), written
            continue
        assert written.applied
        assert number(item(ddb_local, flags_table, V2)["api_rate_limit_per_minute"]) == value
        assert item(ddb_local, flags_table, V1)["api_rate_limit_per_minute"] == {"N": str(value)}


def test_a_v1_write_landing_between_the_migrations_read_and_commit_is_carried_into_v2(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given V1 with live values, and a V1 write that commits after the migration read V1 and before it commits
    live_values(ddb_local, flags_table, declarations)
    landed: list[int] = []

    def write_in_between() -> list[dict[str, Any]]:
        if not landed:
            result = v1_store(ddb_local, flags_table, declarations).change(
                {"api_rate_limit_per_minute": 777}, actor="racer", reason="in between"
            )
            landed.append(result.snapshot.version or 0)
        return []

    # When the migration commits
    version = (
        v1_store(ddb_local, flags_table, declarations)
        .migrate(
            new_declarations(declarations), parse_mapping(GOOD), actor="alice", reason="to V2", pending=write_in_between
        )
        .version
    )
    # Then its first attempt conflicted, and its second carried the write into V2, after it
    assert version == landed[0] + 1
    assert number(item(ddb_local, flags_table, V2)["api_rate_limit_per_minute"]) == 777


def test_a_v1_write_decided_before_the_migration_and_committed_after_goes_through_the_seam(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given V1 with live values, and a V1 write whose first attempt read V1 before the migration committed
    live_values(ddb_local, flags_table, declarations)
    migrated: list[int] = []

    def migrate_in_between(snapshot: Any, diff: Any) -> None:
        if not migrated:
            migrated.append(migrate(ddb_local, flags_table, declarations))

    # When that write commits
    result = v1_store(ddb_local, flags_table, declarations).change(
        {"api_rate_limit_per_minute": 555}, actor="racer", reason="across", attempt_checks=[migrate_in_between]
    )
    # Then its first attempt conflicted, and its second wrote V2 through the seam, mirrored into V1
    assert result.applied and result.attempts == 2
    assert result.snapshot.version == migrated[0] + 1
    assert number(item(ddb_local, flags_table, V2)["api_rate_limit_per_minute"]) == 555
    assert item(ddb_local, flags_table, V1)["api_rate_limit_per_minute"] == {"N": "555"}


def test_while_it_expands_if_match_and_removed_flags_are_refused_naming_v2_and_the_v1_seed_writes_nothing(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrated_at = migrate(ddb_local, flags_table, declarations)
    store = v1_store(ddb_local, flags_table, declarations)
    # When a caller's write through V1 names a version (If-Match) / Then refused, naming V2; nothing written
    with pytest.raises(FlagsMigrated, match="FLAGS#V2") as refused:
        store.change({"signup_enabled": False}, actor="a", reason="r", expected_version=migrated_at)
    assert refused.value.details == {"migrated_to": V2, "migrated_at": migrated_at}
    # When a write through V1 names a flag the migration removed / Then refused, naming it
    with pytest.raises(FlagsMigrated, match="'ai_search_enabled' was removed by the migration"):
        store.change({"ai_search_enabled": False}, actor="a", reason="r")
    # When V1's seed runs (a deploy of the V1 declarations) / Then it writes nothing
    assert not store.seed(actor="seed", reason="deploy").applied
    assert item(ddb_local, flags_table, V2)["schema_version"] == {"N": str(migrated_at)}


def test_an_idempotency_key_replayed_through_v1_answers_in_v1s_shape(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    store = v1_store(ddb_local, flags_table, declarations)
    key = Idempotency.of("bob", "k-1", {"flags": {"search_ranking": "hybrid"}})
    first = store.change({"search_ranking": "hybrid"}, actor="bob", reason="r", idempotency=key)
    # When the same keyed request is sent again / Then its answer is replayed, in the shape this writer serves
    again = store.change({"search_ranking": "hybrid"}, actor="bob", reason="r", idempotency=key)
    assert again.replayed and again.snapshot.version == first.snapshot.version
    assert (again.values["search_ranking"], again.values["api_rate_limit_per_minute"]) == ("hybrid", 1200)


def test_a_writer_configured_for_v2_writes_it_and_mirrors_into_v1_and_history_and_revert_span_the_seam(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    before = live_values(ddb_local, flags_table, declarations)
    migrated_at = migrate(ddb_local, flags_table, declarations)
    v2_store = FlagStore(ddb_local, flags_table, new_declarations(declarations), sort_key=V2, sleep=lambda _: None)
    # When the service is deployed for V2 and changes a renamed flag and a converted one (V2's names and types)
    result = v2_store.change({"ranking_strategy": "hybrid", "api_rate_limit_per_minute": 1500.0}, actor="b", reason="r")
    # Then V1 mirrors them in its names and types, at the same version
    v1 = item(ddb_local, flags_table, V1)
    assert (v1["search_ranking"], v1["api_rate_limit_per_minute"], v1["schema_version"]) == (
        {"S": "hybrid"},
        {"N": "1500"},
        {"N": str(result.snapshot.version)},
    )
    # When V2 holds a value V1 cannot express exactly (a fraction, V1's rounding 'exact')
    v2_store.change({"api_rate_limit_per_minute": 1500.5}, actor="b", reason="r")
    # Then V1 no longer holds that flag: a reader ignoring the pointer serves its fallback, never an old value
    assert "api_rate_limit_per_minute" not in item(ddb_local, flags_table, V1)
    # And the history spans the seam: one version line, V1's shape before the migration, V2's after
    history, _ = v2_store.history(limit=10)
    assert [record["version"] for record in history][:4] == [migrated_at + 2, migrated_at + 1, migrated_at, before]
    assert [record.get("item", V1) for record in history][:4] == [V2, V2, V2, V1]
    # And a revert to a version after the migration works, one before it is refused with the reason
    assert v2_store.revert(migrated_at, actor="b", reason="back").applied
    with pytest.raises(FlagsMigrated, match="a revert never crosses a migration"):
        v2_store.revert(before, actor="b", reason="too far")


def test_a_missing_v2_is_restored_into_its_seam(ddb_local: Any, flags_table: str, declarations: Declarations) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    v2_store = FlagStore(ddb_local, flags_table, new_declarations(declarations), sort_key=V2, sleep=lambda _: None)
    ddb_local.delete_item(TableName=flags_table, Key=singleton_key(V2))
    # When V2 is restored (from its newest record) / Then it still names V1: writes go on being mirrored
    assert v2_store.restore(actor="ops", reason="deleted by mistake").restored
    assert item(ddb_local, flags_table, V2)[MIGRATED_FROM_ATTR] == {"S": V1}
    v2_store.change({"ranking_strategy": "classic"}, actor="b", reason="r")
    assert item(ddb_local, flags_table, V1)["search_ranking"] == {"S": "classic"}


def emf_source(printed: str) -> SeenSource:
    """The readers' ServedVersion records as Logs Insights would count them for ``flagctl migrate --finalise``:
    those of the window naming the item (or no item), from what the readers printed."""

    def heard(wanted: str, since: float) -> Heard:
        records = [json.loads(line) for line in printed.splitlines() if '"ServedVersion"' in line]
        named = [r for r in records if r["_aws"]["Timestamp"] / 1000 >= since and r.get("item", wanted) == wanted]
        last = max((r["_aws"]["Timestamp"] / 1000 for r in named), default=None)
        return Heard(len(named), sum("item" not in r for r in named), last, "the readers' output")

    return heard


def test_finalising_is_refused_while_a_v1_reader_is_seen_then_supersedes_v1(
    ddb_local: Any,
    flags_table: str,
    declarations: Declarations,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    v2_store = FlagStore(ddb_local, flags_table, new_declarations(declarations), sort_key=V2, sleep=lambda _: None)

    def finalise() -> Any:
        return v2_store.finalise_migration(actor="alice", reason="no V1 reader left")

    # Given a reader still configured for V1 (it follows the pointer), printing its telemetry
    capsys.readouterr()
    Flags(table_name=flags_table, declarations=declarations, client=ddb_local, max_age=0, metrics=True).all_details()
    printed = capsys.readouterr().out
    # When finalising is asked / Then it is refused, naming the reader seen; V1 is not superseded
    with pytest.raises(FlagctlError) as refused:
        unless_seen(readers_seen(V1, 7, emf_source(printed)), finalise)
    assert (refused.value.code, refused.value.exit_code) == ("READERS_SEEN", 3)
    assert "readers configured for FLAGS#V1 were seen in the last 7 day(s): 1 record(s)" in str(refused.value)
    assert SUPERSEDED_BY_ATTR not in item(ddb_local, flags_table, V1)

    # Given the reader switched to V2 (its records name V2), and the V1 reader's last record older than the window
    Flags(
        table_name=flags_table,
        declarations=new_declarations(declarations),
        sort_key=V2,
        client=ddb_local,
        max_age=0,
        metrics=True,
    ).all_details()
    printed += capsys.readouterr().out
    eight_days_later = time.time() + 8 * 86400
    # When finalising is asked again / Then it applies: V1 superseded by V2, V2 no longer names V1
    unless_seen(readers_seen(V1, 7, emf_source(printed), clock=lambda: eight_days_later), finalise)
    assert item(ddb_local, flags_table, V1)[SUPERSEDED_BY_ATTR] == {"S": V2}
    assert MIGRATED_FROM_ATTR not in item(ddb_local, flags_table, V2)
    caplog.set_level(logging.INFO, logger="singleton_flags")
    flags = Flags(table_name=flags_table, declarations=declarations, client=ddb_local, max_age=0)
    details = flags.all_details()
    assert {detail.reason for detail in details.values()} == {DEFAULT}
    assert any("superseded" in message for message in caplog.messages)
    # And a write through V2 is no longer mirrored
    before = item(ddb_local, flags_table, V1)["schema_version"]
    v2_store.change({"ranking_strategy": "hybrid"}, actor="bob", reason="after")
    assert item(ddb_local, flags_table, V1)["schema_version"] == before


def _reset(client: Any, table: str) -> None:
    """Back to a seeded V1 alone: the later item, the migration's record, the trail and the guards removed."""
    for page in client.get_paginator("scan").paginate(TableName=table):
        for found in page["Items"]:
            key = {"PK": found["PK"], "SK": found["SK"]}
            if found["SK"]["S"] != V1:
                client.delete_item(TableName=table, Key=key)
    client.update_item(
        TableName=table,
        Key=singleton_key(V1),
        UpdateExpression="REMOVE migrated_to, migration_mapping, superseded_by, superseded_at, superseded_reason",
    )


def test_a_rollback_before_finalising_makes_v1_the_item_again_with_every_value_written_meanwhile(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    store = v1_store(ddb_local, flags_table, declarations)
    written = store.change({"search_ranking": "hybrid"}, actor="bob", reason="meanwhile").snapshot.version
    # When the migration is rolled back
    store.roll_back_migration(actor="alice", reason="not yet")
    # Then V1 points nowhere and holds what was written meanwhile, at its version; V2 is superseded by V1
    v1, v2 = item(ddb_local, flags_table, V1), item(ddb_local, flags_table, V2)
    assert MIGRATED_TO_ATTR not in v1 and (v1["search_ranking"], v1["schema_version"]) == (
        {"S": "hybrid"},
        {"N": str(written)},
    )
    assert v2[SUPERSEDED_BY_ATTR] == {"S": V1} and MIGRATED_FROM_ATTR not in v2
    # And a V1 reader reads V1 itself again; a flag V1 could not express meanwhile is its fallback until written
    details = Flags(table_name=flags_table, declarations=declarations, client=ddb_local, max_age=0).all_details()
    assert (details["search_ranking"].value, details["search_ranking"].version) == ("hybrid", written)
    assert details["ai_search_enabled"].reason == DEFAULT
    # And writes go to V1 alone; the seed gives the removed flag its initial value back
    store.seed(actor="seed", reason="deploy")
    assert item(ddb_local, flags_table, V1)["ai_search_enabled"] == {"BOOL": False}
    assert item(ddb_local, flags_table, V2)["schema_version"] == {"N": str(written)}
    # And migrating to V2 again is refused, naming why (its items remain)
    with pytest.raises(MigrationRefused, match="FLAGS#V2 already has its item"):
        migrate(ddb_local, flags_table, declarations)


def v2_store(client: Any, table: str, declarations: Declarations, **options: Any) -> FlagStore:
    return FlagStore(client, table, new_declarations(declarations), sort_key=V2, sleep=lambda _: None, **options)


def start_window(store: FlagStore) -> Any:
    windows = MaintenanceWindows(store, {WINDOW: Window(WINDOW, 3600)})
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return windows.handle({"action": "start", "window": WINDOW, "scheduled_time": now})


def audit(client: Any, table: str, image: dict[str, Any]) -> Any:
    return AuditCheck(client.get_item, table_name=table).unaudited(image, "1")


def test_a_deleted_item_is_never_restored_from_the_other_items_state(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    # Given V1 deleted while the migration expands / When the V1-deployed writer changes a flag
    ddb_local.delete_item(TableName=flags_table, Key=singleton_key(V1))
    written = v1_store(ddb_local, flags_table, declarations).change({"search_ranking": "hybrid"}, actor="b", reason="r")
    # Then the change is in V2, and V1 is put back as its mirror, with its pointer, at the same version
    v1, v2 = item(ddb_local, flags_table, V1), item(ddb_local, flags_table, V2)
    assert (v2["ranking_strategy"], v1["search_ranking"], v1[MIGRATED_TO_ATTR]) == (
        {"S": "hybrid"},
        {"S": "hybrid"},
        {"S": V2},
    )
    assert v1["schema_version"] == v2["schema_version"] == {"N": str(written.snapshot.version)}
    assert "ranking_strategy" not in v1 and audit(ddb_local, flags_table, v1) is None
    # Given V2 deleted / When the V2-deployed writer changes a flag: V2 is restored and the write mirrored
    ddb_local.delete_item(TableName=flags_table, Key=singleton_key(V2))
    v2_store(ddb_local, flags_table, declarations).change({"ranking_strategy": "classic"}, actor="b", reason="r")
    v1, v2 = item(ddb_local, flags_table, V1), item(ddb_local, flags_table, V2)
    assert (v1["search_ranking"], v1["schema_version"]) == ({"S": "classic"}, v2["schema_version"])
    assert v2[MIGRATED_FROM_ATTR] == {"S": V1} and audit(ddb_local, flags_table, v2) is None
    # And the restore's version is in V2's shape: a revert to it is a revert like any other
    restored = int(v2["schema_version"]["N"]) - 1
    assert v2_store(ddb_local, flags_table, declarations).revert(restored, actor="b", reason="back").applied


def test_after_finalising_a_safety_write_of_the_old_stack_lands_in_v2_and_nothing_forks(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    v2_store(ddb_local, flags_table, declarations).finalise_migration(actor="a", reason="done")
    superseded = item(ddb_local, flags_table, V1)
    # When the V1 stack's maintenance window starts (a safety write) / Then it switches maintenance on in V2
    assert start_window(v1_store(ddb_local, flags_table, declarations)).status == "started"
    v2 = item(ddb_local, flags_table, V2)
    assert (v2["maintenance_mode"], v2["maintenance_owner"]) == ({"BOOL": True}, {"S": WINDOW})
    assert item(ddb_local, flags_table, V1) == superseded  # untouched: no reader serves it
    # And V2's own writers are not blocked (one version line)
    assert (
        v2_store(ddb_local, flags_table, declarations, max_attempts=3)
        .change({"ranking_strategy": "hybrid"}, actor="b", reason="r")
        .applied
    )
    # And an operator's write through the V1 stack is refused, naming V2
    with pytest.raises(FlagsSuperseded, match="superseded by FLAGS#V2"):
        v1_store(ddb_local, flags_table, declarations).change({"signup_enabled": False}, actor="b", reason="r")
    # And with V1 deleted as a cleanup, the V1 stack's safety write still lands in V2 and V1 stays gone
    ddb_local.delete_item(TableName=flags_table, Key=singleton_key(V1))
    windows = MaintenanceWindows(v1_store(ddb_local, flags_table, declarations), {WINDOW: Window(WINDOW, 3600)})
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    assert windows.handle({"action": "end", "window": WINDOW, "scheduled_time": now}).status == "ended"
    assert item(ddb_local, flags_table, V2)["maintenance_mode"] == {"BOOL": False}
    assert "Item" not in ddb_local.get_item(TableName=flags_table, Key=singleton_key(V1))


def test_after_a_rollback_the_v2_stack_cannot_fork_the_version_line(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    v1 = v1_store(ddb_local, flags_table, declarations, max_attempts=3)
    v1.roll_back_migration(actor="a", reason="undo")
    # Then the rollback's own V1 image is accounted for by its version's record (seen through the mapping)
    assert audit(ddb_local, flags_table, item(ddb_local, flags_table, V1)) is None
    # When a stack still deployed for V2 starts its window / Then it is refused: V2 is superseded by V1
    with pytest.raises(FlagsSuperseded, match="FLAGS#V1"):
        start_window(v2_store(ddb_local, flags_table, declarations))
    # And V1's writers are not blocked
    assert v1.change({"search_ranking": "hybrid"}, actor="b", reason="r").applied


def test_mirror_images_stay_accounted_for_after_the_migration_ends_and_direct_pointer_edits_do_not(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    v1_store(ddb_local, flags_table, declarations).change({"search_ranking": "hybrid"}, actor="b", reason="r")
    mirror = item(ddb_local, flags_table, V1)
    # When the stream is read after the finalising / Then the mirror image is still accounted for
    v2_store(ddb_local, flags_table, declarations).finalise_migration(actor="a", reason="done")
    assert audit(ddb_local, flags_table, mirror) is None
    # When V1's mapping, or V2's migrated_from, is edited directly / Then each is an unaudited write
    assert audit(ddb_local, flags_table, {**mirror, "migration_mapping": {"S": "{}"}}) is not None
    _reset(ddb_local, flags_table)
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    v2 = item(ddb_local, flags_table, V2)
    found = audit(ddb_local, flags_table, {k: v for k, v in v2.items() if k != MIGRATED_FROM_ATTR})
    assert found is not None and MIGRATED_FROM_ATTR in found.changed


def test_the_v1_stack_refuses_what_v2_cannot_take_and_a_partial_revert(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    live_values(ddb_local, flags_table, declarations)
    migrated_at = migrate(ddb_local, flags_table, declarations)
    # Given a flag the V1 stack declares and V2 does not (declared after the migration)
    document = declarations.document()
    document["flags"].append({"name": "beta_banner", "type": "bool", "initial": False, "fallback": False})
    with pytest.raises(FlagsMigrated, match="'beta_banner' is not declared in the later item"):
        FlagStore(ddb_local, flags_table, parse_declarations(document), sleep=lambda _: None).change(
            {"beta_banner": True}, actor="b", reason="r"
        )
    # Given a V2-only flag changed since / When the V1 stack reverts to the migration's version / Then refused
    v2_store(ddb_local, flags_table, declarations).change({"assistant_enabled": False}, actor="b", reason="r")
    with pytest.raises(FlagsMigrated, match=r"would leave \['assistant_enabled'\] as they are"):
        v1_store(ddb_local, flags_table, declarations).revert(migrated_at, actor="b", reason="back")
    # And asking to migrate again is told which migration is under way, and since which version
    with pytest.raises(FlagsMigrated, match="finalise it or roll it back first") as again:
        migrate(ddb_local, flags_table, declarations)
    assert again.value.details == {"migrated_to": V2, "migrated_at": migrated_at}


@pytest.mark.parametrize("writer", ["v1", "v2"])
@pytest.mark.parametrize("keyed", [False, True], ids=["without-a-key", "with-a-key"])
def test_a_restore_while_it_expands_puts_the_missing_v1_back_as_the_mirror_at_the_same_version(
    ddb_local: Any, flags_table: str, declarations: Declarations, writer: str, keyed: bool
) -> None:
    # Given a migration that expands, and V1 deleted
    live_values(ddb_local, flags_table, declarations)
    version = migrate(ddb_local, flags_table, declarations)
    ddb_local.delete_item(TableName=flags_table, Key=singleton_key(V1))
    trail = len(read_trail(ddb_local, flags_table))
    store = (v1_store if writer == "v1" else v2_store)(ddb_local, flags_table, declarations, call_seconds=0.5)
    key = Idempotency.of("ops", "restore-v1", {"reason": "back"}) if keyed else None

    # When a writer of either stack restores (with an Idempotency-Key, as the console and flagctl send one)
    result = store.restore(actor="ops", reason="back", idempotency=key, time_budget=3.0)

    # Then V1 is back as V2's mirror, pointing to it, at V2's version: no new version, no audit record
    assert (result.restored, result.applied, result.snapshot.version) == (True, False, version)
    v1, v2 = item(ddb_local, flags_table, V1), item(ddb_local, flags_table, V2)
    assert (v1[MIGRATED_TO_ATTR], v1["schema_version"], v2["schema_version"]) == (
        {"S": V2},
        {"N": str(version)},
        {"N": str(version)},
    )
    assert v1["search_ranking"] == v2["ranking_strategy"] and "ranking_strategy" not in v1
    assert len(read_trail(ddb_local, flags_table)) == trail and audit(ddb_local, flags_table, v1) is None
    # And V1's readers serve V2's values again
    flags = Flags(table_name=flags_table, declarations=declarations, client=ddb_local, max_age=0)
    assert flags.all_details()["search_ranking"].version == version
    # And the same request again answers the same, and writes nothing more
    if keyed:
        again = store.restore(actor="ops", reason="back", idempotency=key, time_budget=3.0)
        assert (again.replayed, again.restored, again.applied, dict(again.changed)) == (True, True, False, {})
    again = store.restore(actor="ops", reason="back", time_budget=3.0)
    assert (again.restored, again.applied) == (False, False)


@pytest.mark.parametrize("step", ["finalise", "rollback"])
def test_with_v1_missing_the_migration_neither_finalises_nor_rolls_back_and_says_to_restore_it(
    ddb_local: Any, flags_table: str, declarations: Declarations, step: str
) -> None:
    # Given a migration that expands, and V1 deleted
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    ddb_local.delete_item(TableName=flags_table, Key=singleton_key(V1))
    store = v1_store(ddb_local, flags_table, declarations)
    end = store.finalise_migration if step == "finalise" else store.roll_back_migration

    # When the migration is finalised or rolled back / Then it is refused, naming the missing item and the restore
    with pytest.raises(MigrationRefused) as refused:
        end(actor="ops", reason="now")
    assert refused.value.details["refused"] == [{"cause": "missing", "item": V1}]
    assert "POST /flags/restore" in refused.value.message
    # And once V1 is restored, the step goes through
    store.restore(actor="ops", reason="back")
    assert end(actor="ops", reason="now").target == V2


ON_CALL = "arn:aws:iam::123456789012:user/on-call"
ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"


def maintenance_protected(declarations: Declarations) -> Declarations:
    """The service's declarations with maintenance_mode protected: one approval, by BOB; break-glass by ON_CALL."""
    document = declarations.document()
    for flag in document["flags"]:
        if flag["name"] == "maintenance_mode":
            flag["protection"] = {"approvals": 1, "approvers": [BOB], "break_glass": [ON_CALL]}
    return parse_declarations(document)


@pytest.mark.parametrize(("end", "stack"), [("finalise", V1), ("rollback", V2)])
@pytest.mark.parametrize("break_glass", [False, True], ids=["change-request", "break-glass"])
def test_after_the_migration_ends_requests_through_the_superseded_items_stack_are_refused_naming_the_live_one(
    ddb_local: Any, flags_table: str, declarations: Declarations, end: str, stack: str, break_glass: bool
) -> None:
    # Given maintenance_mode protected (break-glass by the on-call), migrated to V2, then finalised or rolled back
    protected = maintenance_protected(declarations)
    live_values(ddb_local, flags_table, protected)
    migrate(ddb_local, flags_table, protected)
    ended = v1_store(ddb_local, flags_table, protected)
    (ended.finalise_migration if end == "finalise" else ended.roll_back_migration)(actor="ops", reason=end)
    store = (v1_store if stack == V1 else v2_store)(ddb_local, flags_table, protected)
    live = V2 if stack == V1 else V1
    trail = len(read_trail(ddb_local, flags_table))

    # When a change request (or break-glass) for maintenance_mode comes through the stack of the superseded item
    requests = ChangeRequests(ddb_local, flags_table, store)
    with pytest.raises(FlagsSuperseded) as refused:
        requests.create(ON_CALL, reason="drill", flags={"maintenance_mode": True}, break_glass=break_glass)

    # Then it is refused as its write would be, naming the live item, and nothing is written
    assert refused.value.details["superseded_by"] == live
    assert len(read_trail(ddb_local, flags_table)) == trail
    assert requests.page(limit=10)[0] == []


@pytest.mark.parametrize(("end", "stack"), [("finalise", V1), ("rollback", V2)])
def test_the_seed_of_the_stack_of_the_superseded_item_writes_nothing_and_never_fails_the_deploy(
    ddb_local: Any, flags_table: str, declarations: Declarations, end: str, stack: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a migration finalised (V1 superseded) or rolled back (V2 superseded)
    live_values(ddb_local, flags_table, declarations)
    migrate(ddb_local, flags_table, declarations)
    ended = v1_store(ddb_local, flags_table, declarations)
    (ended.finalise_migration if end == "finalise" else ended.roll_back_migration)(actor="ops", reason=end)
    before = (
        item(ddb_local, flags_table, V1),
        item(ddb_local, flags_table, V2),
        len(read_trail(ddb_local, flags_table)),
    )
    # When the stack still deployed for the superseded item seeds (a deploy, or CloudFormation's rollback of one)
    store = (v1_store if stack == V1 else v2_store)(ddb_local, flags_table, declarations)
    result = store.seed(actor="cloudformation:s", reason="deploy")
    # Then it writes nothing, says where the flags live, and does not fail
    assert not result.applied
    after = (
        item(ddb_local, flags_table, V1),
        item(ddb_local, flags_table, V2),
        len(read_trail(ddb_local, flags_table)),
    )
    assert after == before
    live = V2 if stack == V1 else V1
    assert any(f"superseded by {live}: its seed writes nothing" in message for message in caplog.messages)


def test_a_request_left_pending_when_the_migration_is_finalised_is_closed_stale_by_its_next_approval(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given a request for maintenance_mode made through the V1 stack while the migration expands, then a finalise
    protected = maintenance_protected(declarations)
    live_values(ddb_local, flags_table, protected)
    migrate(ddb_local, flags_table, protected)
    requests = ChangeRequests(ddb_local, flags_table, v1_store(ddb_local, flags_table, protected))
    created = requests.create(ALICE, reason="drill", flags={"maintenance_mode": True}).request
    v1_store(ddb_local, flags_table, protected).finalise_migration(actor="ops", reason="every reader on V2")
    trail = len(read_trail(ddb_local, flags_table))
    # When a principal who may not approve it tries / Then that is all it is told, and the request stays pending
    with pytest.raises(NotAnApprover):
        requests.approve(created.id, ON_CALL)
    assert requests.get(created.id).state == "pending"
    # When an approver approves it through the V1 stack
    with pytest.raises(FlagsSuperseded) as refused:
        requests.approve(created.id, BOB)
    # Then the approval is refused naming V2, nothing is written, and the request moves no more: stale, saying why
    assert refused.value.details["superseded_by"] == V2
    assert len(read_trail(ddb_local, flags_table)) == trail
    closed = requests.get(created.id)
    assert closed.state == "stale" and closed.approvals == ()
    assert "superseded by FLAGS#V2" in str(closed.decided)
