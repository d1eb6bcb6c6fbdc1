"""A replaced schedule group on DynamoDB Local: after the reconciler re-created a scheduled change's (or a guard
close's) schedule in the new group, the old group's copy may still fire while that group is deleting. Both
deliveries arrive, at once or one after the other: the work is done once (one version), the other finds it done.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from singleton_flags.declarations import Declarations
from singleton_flags_service.guards.guarding import GuardService, Outcome as GuardOutcome
from singleton_flags_service.guards.items import GuardBook
from singleton_flags_service.schedules.apply import Outcome, ScheduledChangeRunner
from singleton_flags_service.schedules.changes import ScheduleItems
from singleton_flags_service.schedules.timing import ScheduleTime
from singleton_flags_service.writes.store import FlagStore
from tests.integration.test_guard_revert_local import Alarms, concurrently, guarded_change, records

ROUNDS = 6
RETENTION = 86400


def runner(client_factory: Callable[[], Any], table: str, declarations: Declarations) -> ScheduledChangeRunner:
    """One maintenance function's runner (its own client: two deliveries are two invocations)."""
    client = client_factory()
    items = ScheduleItems(client, table, retention_seconds=RETENTION)
    return ScheduledChangeRunner(FlagStore(client, table, declarations, sleep=lambda _: None), items, declarations)


def pending_change(client: Any, table: str, schedule_id: str, value: bool) -> None:
    """A pending scheduled change whose time has come, as POST /flags/schedules wrote it."""
    now = time.time()
    due = datetime.fromtimestamp(now - now % 60, UTC)
    when = ScheduleTime(utc=due, local=due.strftime("%Y-%m-%dT%H:%M:%S"), timezone="UTC")
    items = ScheduleItems(client, table, retention_seconds=RETENTION)
    items.put_pending(schedule_id, {"ai_search_enabled": value}, "launch", when, None, "it", now)


def test_a_late_fire_from_the_deleting_group_racing_the_recreated_schedule_applies_once(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    for round_ in range(ROUNDS):
        schedule_id = f"20270301T080000Z-{round_:08x}"
        before = max((r["version"] for r in records(ddb_local, flags_table)), default=-1)
        value = round_ % 2 == 0
        pending_change(ddb_local, flags_table, schedule_id, value)
        old_group, new_group = (runner(client_factory, flags_table, declarations) for _ in range(2))
        payload = {"scheduled_change": schedule_id}

        # When the re-created schedule and the old group's copy deliver at once
        outcomes = concurrently(partial(new_group.handle, payload), partial(old_group.handle, payload))
        # (a TransactionConflict raises for Lambda to retry: its retry is the sequential case below)
        retried = [old_group.handle(payload) if isinstance(o, Exception) else o for o in outcomes]

        # Then one applied it, the other found it done; one version, recorded on the item
        statuses = sorted(o.status for o in retried if isinstance(o, Outcome))
        assert statuses == ["applied", "not_pending"], statuses
        after = [r for r in records(ddb_local, flags_table) if r["version"] > before]
        assert [(r["kind"], r["actor"]) for r in after] == [("scheduled", f"schedule:{schedule_id}")]
        item = ScheduleItems(ddb_local, flags_table, retention_seconds=RETENTION).get(schedule_id)
        assert item is not None and (item.status, item.extra["version"]) == ("applied", after[0]["version"])


def test_a_late_fire_after_the_change_applied_writes_nothing(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    schedule_id = "20270301T080000Z-0000beef"
    pending_change(ddb_local, flags_table, schedule_id, True)
    first = runner(client_factory, flags_table, declarations).handle({"scheduled_change": schedule_id})
    assert first.status == "applied"
    trail = records(ddb_local, flags_table)
    # When the deleting group's copy fires minutes later
    late = runner(client_factory, flags_table, declarations).handle({"scheduled_change": schedule_id})
    # Then nothing is written
    assert late.status == "not_pending"
    assert records(ddb_local, flags_table) == trail


def test_two_closes_of_one_guard_close_it_once(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    for _ in range(ROUNDS):
        version = guarded_change(client_factory, flags_table, declarations)
        book = GuardBook(ddb_local, flags_table)
        guard = book.get(version)
        assert guard is not None
        at_end = guard.bake_ends_at + 1
        services = [
            GuardService(
                FlagStore(client, flags_table, declarations, sleep=lambda _: None),
                GuardBook(client, flags_table),
                Alarms(),
                clock=partial(float, at_end),
            )
            for client in (client_factory(), client_factory())
        ]
        trail = records(ddb_local, flags_table)

        outcomes = concurrently(*(partial(service.close, version) for service in services))

        statuses = sorted(o.status if isinstance(o, GuardOutcome) else type(o).__name__ for o in outcomes)
        assert statuses == ["closed", "duplicate"], statuses
        closed = book.get(version)
        assert closed is not None and closed.state == "closed"
        assert records(ddb_local, flags_table) == trail  # a close writes no version
