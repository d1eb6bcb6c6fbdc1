"""The maintenance function on moto: every rule of a window's start and end, through ``handler`` (its
payloads, failures, metrics and cold start: test_maintenance_handler.py).

Each delivery is the exact payload a schedule sends. The function module is imported fresh per test with
its windows in a deployment document (its module scope is what runs at cold start); its service is then rebuilt on the
moto client and the fake clock.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags.keys import MAINTENANCE_DEADLINE_ATTR, MAINTENANCE_FLAG, MAINTENANCE_OWNER_ATTR, VERSION_ATTR
from singleton_flags_service.errors import ItemTooLarge
from tests.support.maintenance import (
    ADMIN,
    DURATIONS,
    MIGRATION,
    PATCHING,
    QUICK,
    SERVICE_DIMENSION,
    MaintenanceFunction,
    ManualSwitchBeforeFirstTransaction,
    logged,
    scheduled_time,
    window_metrics,
)
from tests.support.unit import build_reader, emf_metrics

# ---------------------------------------------------------------------------------------------- start


def test_start_switches_maintenance_on_owned_by_the_window_until_its_deadline(maintenance: MaintenanceFunction) -> None:
    # Given maintenance off
    # When the window's start is delivered
    outcome = maintenance.start(PATCHING)
    # Then maintenance is on, owned by the window, with now + duration stored as its deadline, in one new version
    item = maintenance.item()
    assert item[MAINTENANCE_FLAG] == {"BOOL": True}
    assert item[MAINTENANCE_OWNER_ATTR] == {"S": PATCHING}
    assert item[MAINTENANCE_DEADLINE_ATTR] == {"N": str(int(maintenance.clock.now) + DURATIONS[PATCHING])}
    assert item[VERSION_ATTR] == {"N": "2"}
    assert outcome["status"] == "started"
    assert (outcome["maintenance_mode"], outcome["owner"], outcome["version"]) == (True, PATCHING, 2)
    json.dumps(outcome)  # Lambda must be able to serialise the answer


def test_start_is_one_audited_change_by_the_windows_scheduler(maintenance: MaintenanceFunction) -> None:
    # Given maintenance off / When the window starts
    maintenance.start(PATCHING)
    # Then one audit record says who (the window's scheduler), what (maintenance on) and which window
    [record] = maintenance.audit()
    assert record["version"] == 2
    assert record["actor"] == f"scheduler:{PATCHING}"
    assert record["kind"] == "window-start"
    assert record["window"] == PATCHING
    assert record["changes"] == {MAINTENANCE_FLAG: {"old": False, "new": True}}
    assert PATCHING in record["reason"]


def test_a_window_start_leaves_manual_maintenance_alone_and_takes_no_ownership(
    maintenance: MaintenanceFunction,
) -> None:
    # Given an admin switched maintenance on by hand
    manual = maintenance.switch_by_hand(True).snapshot.version
    # When the window starts, and later ends
    started = maintenance.start(PATCHING)
    ended = maintenance.end(PATCHING)
    # Then the window took no ownership, so its end did not undo the manual switch; nothing was written
    assert (started["status"], ended["status"]) == ("skipped", "skipped")
    item = maintenance.item()
    assert item[MAINTENANCE_FLAG] == {"BOOL": True}
    assert MAINTENANCE_OWNER_ATTR not in item and MAINTENANCE_DEADLINE_ATTR not in item
    assert maintenance.version() == manual
    assert [record["actor"] for record in maintenance.audit()] == [ADMIN]


def test_a_duplicate_start_is_a_no_op(maintenance: MaintenanceFunction) -> None:
    # Given the window started
    maintenance.start(PATCHING)
    first = maintenance.item()
    # When the same start is delivered again a little later (at-least-once delivery)
    maintenance.clock.advance(30)
    outcome = maintenance.start(PATCHING)
    # Then nothing changes: no version bump, the deadline is not pushed back, no second audit record
    assert outcome["status"] == "duplicate"
    assert maintenance.item() == first
    assert len(maintenance.audit()) == 1


def test_a_window_that_ends_later_takes_over_from_the_one_holding_maintenance(maintenance: MaintenanceFunction) -> None:
    # Given the one-hour window holds maintenance
    maintenance.start(PATCHING)
    # When a two-hour window starts ten minutes later
    maintenance.clock.advance(600)
    taken = maintenance.start(MIGRATION)
    # Then the later-ending window holds it; the first window's end leaves it on; the second's end switches it off
    assert taken["status"] == "started"
    assert maintenance.item()[MAINTENANCE_OWNER_ATTR] == {"S": MIGRATION}
    migration_deadline = int(maintenance.clock.now) + DURATIONS[MIGRATION]
    assert maintenance.item()[MAINTENANCE_DEADLINE_ATTR] == {"N": str(migration_deadline)}
    maintenance.clock.advance(DURATIONS[PATCHING] - 600)
    assert maintenance.end(PATCHING)["status"] == "skipped"
    assert maintenance.item()[MAINTENANCE_FLAG] == {"BOOL": True}
    maintenance.clock.advance(DURATIONS[MIGRATION] - DURATIONS[PATCHING] + 600)
    assert maintenance.end(MIGRATION)["status"] == "ended"
    assert maintenance.item()[MAINTENANCE_FLAG] == {"BOOL": False}
    assert [record["window"] for record in maintenance.audit()] == [PATCHING, MIGRATION, MIGRATION]


def test_a_window_that_ends_earlier_leaves_maintenance_to_the_one_holding_it(maintenance: MaintenanceFunction) -> None:
    # Given the two-hour window holds maintenance
    maintenance.start(MIGRATION)
    held = maintenance.item()
    # When the one-hour window starts and ends inside it
    maintenance.clock.advance(600)
    started = maintenance.start(PATCHING)
    maintenance.clock.advance(DURATIONS[PATCHING])
    ended = maintenance.end(PATCHING)
    # Then both deliveries are skipped: maintenance stays on, held by the two-hour window, unchanged
    assert (started["status"], ended["status"]) == ("skipped", "skipped")
    assert maintenance.item() == held
    assert maintenance.end(MIGRATION)["status"] == "ended"


def test_a_start_after_a_lost_end_holds_maintenance_again_with_a_new_deadline(maintenance: MaintenanceFunction) -> None:
    # Given the window started and its end never arrived (dead-lettered)
    maintenance.start(PATCHING)
    # When the next occurrence starts a week later
    maintenance.clock.advance(7 * 86400)
    outcome = maintenance.start(PATCHING)
    # Then it is a real start, not a duplicate: a new version with the new occurrence's deadline
    assert outcome["status"] == "started"
    assert maintenance.item()[MAINTENANCE_DEADLINE_ATTR] == {"N": str(int(maintenance.clock.now) + DURATIONS[PATCHING])}
    assert maintenance.version() == 3
    assert len(maintenance.audit()) == 2


# ---------------------------------------------------------------------------------------------- end


def test_end_switches_maintenance_off_and_releases_ownership(maintenance: MaintenanceFunction) -> None:
    # Given the window holds maintenance
    maintenance.start(PATCHING)
    # When its end is delivered
    maintenance.clock.advance(DURATIONS[PATCHING])
    outcome = maintenance.end(PATCHING)
    # Then maintenance is off, owner and deadline are gone, and the change is audited as the window's end
    item = maintenance.item()
    assert outcome["status"] == "ended"
    assert item[MAINTENANCE_FLAG] == {"BOOL": False}
    assert MAINTENANCE_OWNER_ATTR not in item and MAINTENANCE_DEADLINE_ATTR not in item
    last = maintenance.audit()[-1]
    assert (last["version"], last["actor"], last["kind"]) == (3, f"scheduler:{PATCHING}", "window-end")
    assert last["window"] == PATCHING
    assert last["changes"] == {MAINTENANCE_FLAG: {"old": True, "new": False}}


def test_a_duplicate_end_is_a_no_op(maintenance: MaintenanceFunction) -> None:
    # Given the window started and ended
    maintenance.start(PATCHING)
    maintenance.end(PATCHING)
    ended = maintenance.item()
    # When the end is delivered again
    outcome = maintenance.end(PATCHING)
    # Then nothing changes: no version bump, no audit record
    assert outcome["status"] == "duplicate"
    assert maintenance.item() == ended
    assert len(maintenance.audit()) == 2


@pytest.mark.parametrize("by_hand", [True, False], ids=["kept-on-by-hand", "switched-off-by-hand"])
def test_an_end_leaves_alone_maintenance_switched_by_hand_meanwhile(
    maintenance: MaintenanceFunction, by_hand: bool, stdout: Any
) -> None:
    # Given the window started, then an admin switched maintenance by hand
    maintenance.start(PATCHING)
    manual = maintenance.switch_by_hand(by_hand).snapshot.version
    stdout.text()  # forget what was printed so far
    # When the window's end arrives
    outcome = maintenance.end(PATCHING)
    # Then the manual switch stands, nothing is written, and a warning says why
    assert outcome["status"] == "skipped"
    assert maintenance.item()[MAINTENANCE_FLAG] == {"BOOL": by_hand}
    assert maintenance.version() == manual
    [warning] = logged(stdout.records(), "WARNING")
    assert warning["window"] == PATCHING
    assert warning["action"] == "end"
    assert warning["status"] == "skipped"
    assert warning["current_owner"] == ("manual" if by_hand else "nobody")
    assert warning["last_changed_by"] == ADMIN


def test_an_end_without_a_start_changes_nothing(maintenance: MaintenanceFunction) -> None:
    # Given maintenance off, never started by the window / When its end is delivered / Then it is skipped
    assert maintenance.end(PATCHING)["status"] == "skipped"
    assert maintenance.version() == 1
    assert maintenance.audit() == []


# ---------------------------------------------------------------------------------------------- races


@pytest.mark.parametrize("by_hand", [True, False], ids=["kept-on-by-hand", "switched-off-by-hand"])
def test_a_manual_switch_landing_between_the_ends_read_and_its_write_wins(
    maintenance: MaintenanceFunction, by_hand: bool
) -> None:
    # Given the window holds maintenance, and an admin's switch will land after the end read the state
    maintenance.start(PATCHING)
    racing = ManualSwitchBeforeFirstTransaction(maintenance.client, lambda: maintenance.switch_by_hand(by_hand))
    maintenance.use_client(racing)
    # When the window's end is delivered
    outcome = maintenance.end(PATCHING)
    # Then its transaction lost the version race, the retry re-read the state, saw the owner gone and skipped
    assert racing.transactions == 1
    assert outcome["status"] == "skipped"
    item = maintenance.item()
    assert item[MAINTENANCE_FLAG] == {"BOOL": by_hand}
    assert MAINTENANCE_OWNER_ATTR not in item
    assert [record["actor"] for record in maintenance.audit()] == [f"scheduler:{PATCHING}", ADMIN]
    assert maintenance.version() == 3


def test_a_manual_switch_on_landing_during_a_start_keeps_the_window_out(maintenance: MaintenanceFunction) -> None:
    # Given an admin switches maintenance on by hand after the start read the state (off)
    racing = ManualSwitchBeforeFirstTransaction(maintenance.client, lambda: maintenance.switch_by_hand(True))
    maintenance.use_client(racing)
    # When the window's start is delivered
    outcome = maintenance.start(PATCHING)
    # Then the retry sees the manual switch and leaves it alone: no owner, so the window's end cannot undo it
    assert outcome["status"] == "skipped"
    assert MAINTENANCE_OWNER_ATTR not in maintenance.item()
    assert [record["actor"] for record in maintenance.audit()] == [ADMIN]


# ---------------------------------------------------------------------------------------------- manual PATCH, deadline


def test_a_manual_patch_takes_ownership_away_from_the_window(maintenance: MaintenanceFunction, provider: Any) -> None:
    # Given the window holds maintenance
    maintenance.start(PATCHING)
    # When an admin PATCHes maintenance_mode on (the value it already has)
    result = maintenance.switch_by_hand(True)
    # Then the PATCH is a new version that removes the window's owner and deadline
    assert result.applied
    item = maintenance.item()
    assert MAINTENANCE_OWNER_ATTR not in item and MAINTENANCE_DEADLINE_ATTR not in item
    # and the window's end, and its deadline, no longer switch it off
    assert maintenance.end(PATCHING)["status"] == "skipped"
    maintenance.clock.advance(DURATIONS[PATCHING] + 1)
    state = build_reader(provider, maintenance.declarations, maintenance.clock).read()
    assert state.values[MAINTENANCE_FLAG] is True
    assert state.maintenance_deadline_passed is False


def test_readers_see_a_window_end_at_its_deadline_even_if_its_end_never_arrives(
    maintenance: MaintenanceFunction, provider: Any
) -> None:
    # Given a ten-minute window started, and a reader
    maintenance.start(QUICK)
    reader = build_reader(provider, maintenance.declarations, maintenance.clock)
    # When the reader reads just before the deadline, then at it (the end delivery never arrives)
    maintenance.clock.advance(DURATIONS[QUICK] - 1)
    before = reader.read()
    maintenance.clock.advance(1)
    after = reader.read()
    # Then maintenance is on until the deadline, then served off, saying the deadline ended it
    assert (before.values[MAINTENANCE_FLAG], before.maintenance_deadline_passed) == (True, False)
    assert (after.values[MAINTENANCE_FLAG], after.maintenance_deadline_passed) == (False, True)
    assert maintenance.item()[MAINTENANCE_FLAG] == {"BOOL": True}  # the stored value waits for the next write


# ---------------------------------------------------------------------------------------------- late deliveries


def failures(records: list[dict[str, Any]]) -> list[tuple[str, float, dict[str, str]]]:
    return [metric for metric in emf_metrics(records) if metric[0] == "WindowFailures"]


def test_a_start_within_half_its_window_holds_maintenance_until_its_scheduled_end(
    maintenance: MaintenanceFunction,
) -> None:
    # Given a start scheduled 29 min ago (retried, or delayed), inside the first half of its hour
    scheduled = maintenance.clock.now - 29 * 60
    # When it arrives / Then it opens the window, whose deadline is the occurrence's end, not now + an hour
    assert maintenance.start(PATCHING, scheduled=scheduled)["status"] == "started"
    assert maintenance.item()[MAINTENANCE_DEADLINE_ATTR] == {"N": str(int(scheduled) + DURATIONS[PATCHING])}


def test_a_start_later_than_half_its_window_is_refused_as_late(maintenance: MaintenanceFunction, stdout: Any) -> None:
    # Given a start scheduled 31 min ago for a one-hour window (Lambda's async retries, a throttled queue)
    scheduled = maintenance.clock.now - 31 * 60
    # When it arrives
    outcome = maintenance.start(PATCHING, scheduled=scheduled)
    # Then it returns (no retry can make it earlier), writes nothing, logs an ERROR and counts a failure
    assert outcome["status"] == "late"
    assert (outcome["action"], outcome["window"]) == ("start", PATCHING)
    assert maintenance.version() == 1
    records = stdout.records()
    [error] = logged(records, "ERROR")
    assert error["message"] == "maintenance window start: late"
    assert (error["window"], error["scheduled_time"]) == (PATCHING, scheduled_time(scheduled))
    assert failures(records) == [("WindowFailures", 1.0, SERVICE_DIMENSION)]
    assert window_metrics(records) == []


def test_an_end_delivered_hours_late_still_ends_its_own_occurrence(maintenance: MaintenanceFunction) -> None:
    # Given the window started on time, and its end (due an hour later) arrives three hours late
    maintenance.start(PATCHING)
    due = maintenance.clock.now + DURATIONS[PATCHING]
    maintenance.clock.advance(DURATIONS[PATCHING] + 3 * 3600)
    # When it arrives / Then ending is safe: the occurrence it ends is the one holding maintenance
    assert maintenance.end(PATCHING, scheduled=due)["status"] == "ended"
    assert maintenance.item()[MAINTENANCE_FLAG] == {"BOOL": False}


def test_an_end_of_a_past_occurrence_never_ends_the_next_one(maintenance: MaintenanceFunction, stdout: Any) -> None:
    # Given a daily window: yesterday's end got stuck; today's occurrence started and holds maintenance
    maintenance.start(MIGRATION)
    yesterdays_end = maintenance.clock.now - 86400 + DURATIONS[MIGRATION]
    stdout.text()
    # When yesterday's end finally arrives, during today's window
    maintenance.clock.advance(600)
    outcome = maintenance.end(MIGRATION, scheduled=yesterdays_end)
    # Then today's maintenance stays on, held by the window; the late end is logged and counted
    assert outcome["status"] == "late"
    assert maintenance.item()[MAINTENANCE_FLAG] == {"BOOL": True}
    assert maintenance.version() == 2
    records = stdout.records()
    assert [e["message"] for e in logged(records, "ERROR")] == ["maintenance window end: late"]
    assert failures(records) == [("WindowFailures", 1.0, SERVICE_DIMENSION)]


def test_an_item_too_large_is_a_failure_no_retry_can_fix(
    maintenance: MaintenanceFunction, stdout: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the store refuses the change: the item would exceed its size limit
    def too_large(*_: Any, **__: Any) -> Any:
        raise ItemTooLarge("the flags item would be 4200 bytes, over the 4096-byte limit")

    monkeypatch.setattr(maintenance.module.MAINTENANCE.store, "change", too_large)
    # When a start arrives / Then it returns failed (an async retry would fail the same way), logged and counted
    outcome = maintenance.start(PATCHING)
    assert outcome["status"] == "failed"
    assert "4096" in outcome["error"]
    records = stdout.records()
    [error] = logged(records, "ERROR")
    assert (error["window"], error["action"], error["code"]) == (PATCHING, "start", "ITEM_TOO_LARGE")
    assert failures(records) == [("WindowFailures", 1.0, SERVICE_DIMENSION)]


def test_a_rejected_payload_counts_a_failure(maintenance: MaintenanceFunction, stdout: Any) -> None:
    assert maintenance.deliver({"action": "start", "window": PATCHING})["status"] == "rejected"  # no scheduled time
    assert failures(stdout.records()) == [("WindowFailures", 1.0, SERVICE_DIMENSION)]
