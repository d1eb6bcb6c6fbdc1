"""A guard's revert on DynamoDB Local: conditioned on the flags' version AND on the guard being baking, in one
transaction with the revert's record, whatever races it.

moto's conditional writes are not atomic under concurrency, so the races run on AWS's own engine: two deliveries
of one alarm at once, a delivery racing a newer change, a delivery racing the bake's close.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from singleton_flags.declarations import Declarations
from singleton_flags_service.guards.alarms import ALARM, OK
from singleton_flags_service.guards.guarding import AlarmEvent, GuardService, Outcome
from singleton_flags_service.guards.items import CLOSED, GuardBook, GuardSpec, guard_transition
from singleton_flags_service.guards.writes import NewGuard, store_options
from singleton_flags_service.writes.audit import audit_record
from singleton_flags_service.writes.store import FlagStore
from tests.support.tables import read_trail

ALARM_NAME = "singleton-flags-test-guard-errors"
ROUNDS = 8


class Alarms:
    """Alarm states as the test sets them (the guard function's CloudWatch, here)."""

    def __init__(self, state: str = OK) -> None:
        self.state = state

    def states(self, names: Any) -> dict[str, str]:
        return dict.fromkeys(names, self.state)


def store(client_factory: Callable[[], Any], table: str, declarations: Declarations) -> FlagStore:
    return FlagStore(client_factory(), table, declarations, sleep=lambda _: None)


def guarded_change(client_factory: Callable[[], Any], table: str, declarations: Declarations) -> int:
    """A guarded switch of ai_search_enabled through the store, as the write function makes it; its version."""
    guard = NewGuard(GuardSpec((ALARM_NAME,), 30), table, "it", time.time(), 86400, Alarms())
    writer = store(client_factory, table, declarations)
    value = not writer.current().values["ai_search_enabled"]
    result = writer.change({"ai_search_enabled": value}, actor="it", reason="guarded", **store_options(guard))
    assert result.applied
    version = result.snapshot.version
    assert version is not None
    return version


def service(client_factory: Callable[[], Any], table: str, declarations: Declarations) -> GuardService:
    client = client_factory()
    writer = FlagStore(client, table, declarations, sleep=lambda _: None)
    return GuardService(writer, GuardBook(client, table), Alarms())


def concurrently(*calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` at once (released together by a barrier); their results, or the exceptions they raised."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def records(client: Any, table: str) -> list[dict[str, Any]]:
    return sorted((audit_record(item) for item in read_trail(client, table)), key=lambda record: record["version"])


def deliver(guards: GuardService, version: int) -> Outcome:
    guard = guards.book.get(version)
    assert guard is not None
    return guards.on_alarm(guard, AlarmEvent(ALARM_NAME, guard.created_at + 1))


def test_two_deliveries_of_one_alarm_at_once_revert_once(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    for _ in range(ROUNDS):
        version = guarded_change(client_factory, flags_table, declarations)
        first, second = (service(client_factory, flags_table, declarations) for _ in range(2))

        outcomes = concurrently(partial(deliver, first, version), partial(deliver, second, version))

        statuses = sorted(o.status if isinstance(o, Outcome) else type(o).__name__ for o in outcomes)
        # one reverts; the other finds the guard ended, or (a TransactionConflict) raises for Lambda to retry
        assert statuses.count("reverted") == 1, statuses
        assert set(statuses) <= {"reverted", "duplicate", "StoreUnavailable"}, statuses
        reverts = [r for r in records(ddb_local, flags_table) if r.get("guard", {}).get("version") == version]
        assert [(r["kind"], r["version"]) for r in reverts] == [("guard-revert", version + 1)]
        guard = first.book.get(version)
        assert guard is not None and (guard.state, guard.reverted_by) == ("reverted", version + 1)


def test_a_delivery_racing_a_newer_change_either_reverts_before_it_or_skips(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    for round_ in range(ROUNDS):
        version = guarded_change(client_factory, flags_table, declarations)
        guards = service(client_factory, flags_table, declarations)
        writer = store(client_factory, flags_table, declarations)
        ranking = "hybrid" if round_ % 2 == 0 else "classic"

        outcome, change = concurrently(
            partial(deliver, guards, version),
            partial(writer.change, {"search_ranking": ranking}, actor="it", reason="newer"),
        )

        assert not isinstance(change, Exception), change
        trail = records(ddb_local, flags_table)
        after = [r for r in trail if r["version"] > version]
        guard = guards.book.get(version)
        assert guard is not None
        if isinstance(outcome, Outcome) and outcome.status == "reverted":
            # the revert committed first, at version+1, conditioned on version: the newer change came after it
            assert [r["kind"] for r in after] == ["guard-revert", "change"]
            assert (guard.state, guard.reverted_by) == ("reverted", version + 1)
        else:
            assert isinstance(outcome, Outcome) and outcome.status == "skipped", outcome
            assert [r["kind"] for r in after] == ["change"]  # nothing undone
            assert guard.state == "skipped"


def test_a_revert_after_the_bake_closed_writes_nothing(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    version = guarded_change(client_factory, flags_table, declarations)
    guards = service(client_factory, flags_table, declarations)
    seen = guards.book.get(version)  # read while baking ...
    assert seen is not None
    assert guards.book.end(guard_transition(flags_table, version, CLOSED, "bake ended", 0))  # ... then closed
    before = records(ddb_local, flags_table)

    outcome = guards.on_alarm(seen, AlarmEvent(ALARM_NAME, seen.created_at + 1))

    # the flags are still at the guarded version: only the guard's condition in the transaction stops the revert
    assert outcome.status == "duplicate"
    assert records(ddb_local, flags_table) == before


def test_the_close_reverts_an_alarm_in_alarm_at_the_bakes_end(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    version = guarded_change(client_factory, flags_table, declarations)
    client = client_factory()
    guard = GuardBook(client, flags_table).get(version)
    assert guard is not None
    guards = GuardService(
        FlagStore(client, flags_table, declarations),
        GuardBook(client, flags_table),
        Alarms(ALARM),
        clock=lambda: guard.bake_ends_at,
    )

    outcome = guards.close(version)

    assert (outcome.status, outcome.alarm) == ("reverted", ALARM_NAME)
    assert records(ddb_local, flags_table)[-1]["kind"] == "guard-revert"
