"""A scheduled change delivered more than once, even at the same moment, is applied exactly once, on AWS's own
engine (moto's conditional writes are not atomic under concurrency): the change and the item's status commit
in one transaction conditioned on the item still being pending."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from singleton_flags.declarations import Declarations
from singleton_flags_service.schedules.apply import ScheduledChangeRunner
from singleton_flags_service.schedules.changes import ScheduleItems
from singleton_flags_service.schedules.timing import parse_schedule_time
from singleton_flags_service.writes.audit import audit_record
from singleton_flags_service.writes.store import FlagStore
from tests.support.tables import read_singleton, read_trail

DELIVERIES = 8
SCHEDULE_ID = "20270301T080000Z-0badcafe"


def pending_change(client: Any, table: str, if_version: int | None = None) -> ScheduleItems:
    items = ScheduleItems(client, table, retention_seconds=86400)
    when = parse_schedule_time("2027-03-01T09:00:00Z")
    now = datetime(2027, 3, 1, 8, 0, tzinfo=UTC).timestamp()
    items.put_pending(SCHEDULE_ID, {"signup_enabled": False}, "close signups", when, if_version, "alice", now)
    return items


def runner(client: Any, table: str, declarations: Declarations) -> ScheduledChangeRunner:
    store = FlagStore(client, table, declarations, sleep=lambda _: None)
    return ScheduledChangeRunner(store, ScheduleItems(client, table, retention_seconds=86400), declarations)


def test_a_change_delivered_concurrently_many_times_is_one_version(
    ddb_local: Any, client_factory: Callable[[], Any], flags_table: str, declarations: Declarations
) -> None:
    # Given a pending scheduled change on the seeded table (version 0)
    pending_change(ddb_local, flags_table)
    outcomes: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(DELIVERIES)

    def deliver() -> None:
        function = runner(client_factory(), flags_table, declarations)  # one execution environment each
        start.wait()
        try:
            outcomes.append(function.handle({"scheduled_change": SCHEDULE_ID}).status)
        except BaseException as exc:  # noqa: BLE001 - collected, the test fails on it below
            errors.append(exc)

    # When it is delivered 8 times at once (Scheduler's and Lambda's retries, at their worst)
    threads = [threading.Thread(target=deliver) for _ in range(DELIVERIES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then exactly one delivery applied it, every other found it no longer pending
    assert errors == []
    assert sorted(outcomes) == ["applied"] + ["not_pending"] * (DELIVERIES - 1)
    # And the trail holds one version, by the schedule, and the item says which
    (record,) = [audit_record(item) for item in read_trail(ddb_local, flags_table)]
    assert (record["version"], record["kind"], record["actor"]) == (1, "scheduled", f"schedule:{SCHEDULE_ID}")
    assert read_singleton(ddb_local, flags_table)["schema_version"] == {"N": "1"}
    applied = ScheduleItems(ddb_local, flags_table, retention_seconds=86400).get(SCHEDULE_ID)
    assert applied is not None and (applied.status, applied.extra["version"]) == ("applied", 1)

    # When it is delivered once more, later / Then nothing is written
    assert runner(ddb_local, flags_table, declarations).handle({"scheduled_change": SCHEDULE_ID}).status == (
        "not_pending"
    )
    assert len(read_trail(ddb_local, flags_table)) == 1


def test_a_change_and_its_status_commit_together_or_not_at_all(
    ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given a pending change whose item is cancelled between the apply's read and its transaction
    items = pending_change(ddb_local, flags_table)
    function = runner(ddb_local, flags_table, declarations)
    original_get = items.get
    cancelled = []

    class CancelOnFirstRead(ScheduleItems):
        def get(self, schedule_id: str) -> Any:
            found = original_get(schedule_id)
            if not cancelled:
                cancelled.append(items.finish(schedule_id, "cancelled", 0.0, cancelled_by="bob", cancelled_at="t"))
            return found

    function._items = CancelOnFirstRead(ddb_local, flags_table, retention_seconds=86400)
    # When it is delivered / Then the transaction's status condition fails: no version, the item stays cancelled
    assert function.handle({"scheduled_change": SCHEDULE_ID}).status == "not_pending"
    assert cancelled == [True]
    assert read_trail(ddb_local, flags_table) == []
    assert read_singleton(ddb_local, flags_table)["schema_version"] == {"N": "0"}
    after = original_get(SCHEDULE_ID)
    assert after is not None and after.status == "cancelled"
