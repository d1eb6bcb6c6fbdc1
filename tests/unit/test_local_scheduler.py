"""The local runner's Scheduler: the write function's calls held in memory, due schedules delivered once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from local.scheduler import Deliveries, LocalScheduler, due_at, local_one_time_environment, target_function
from singleton_flags_service.contract import (
    GUARD_CLOSE_TARGET,
    GUARD_FUNCTION,
    MAINTENANCE_FUNCTION,
    SCHEDULED_CHANGE_TARGET,
    OneTimeTarget,
)
from singleton_flags_service.errors import SchedulerFault
from singleton_flags_service.guards.writes import close_payload
from singleton_flags_service.schedules.one_time import OneTimeSchedules
from tests.conftest import ONE_TIME_ENV
from tests.support.unit import Clock

NINE_UTC = datetime(2027, 3, 1, 9, 0, tzinfo=UTC)


def target() -> OneTimeTarget:
    configured = SCHEDULED_CHANGE_TARGET.read(ONE_TIME_ENV)
    assert configured is not None
    return configured


def schedules(scheduler: LocalScheduler) -> OneTimeSchedules:
    return OneTimeSchedules(scheduler, target())


def test_a_schedule_is_delivered_once_when_due_and_then_gone() -> None:
    scheduler = LocalScheduler()
    schedules(scheduler).create("change-a", NINE_UTC, "UTC", {"scheduled_change": "a"})
    delivered: list[dict[str, Any]] = []
    clock = Clock(NINE_UTC.timestamp() - 1)
    deliveries = Deliveries(scheduler, delivered.append, clock=clock)
    deliveries.tick()
    assert delivered == []  # not yet due
    clock.advance(1)
    deliveries.tick()
    deliveries.tick()
    assert delivered == [{"scheduled_change": "a"}]  # once, and deleted after completion
    assert scheduler.names() == []


def test_a_local_time_is_due_in_its_zone() -> None:
    assert due_at("at(2027-03-01T10:00:00)", "Europe/Paris") == NINE_UTC.timestamp()


def test_it_refuses_what_scheduler_refuses() -> None:
    scheduler = LocalScheduler()
    one_time = schedules(scheduler)
    one_time.create("change-a", NINE_UTC, "UTC", {})
    assert one_time.create("change-a", NINE_UTC, "UTC", {}).endswith("/change-a")  # an existing name: that schedule
    assert one_time.delete("change-a") is True
    assert one_time.delete("change-a") is False
    broken = OneTimeSchedules(_Broken(), target())
    with pytest.raises(SchedulerFault):
        broken.create("change-b", NINE_UTC, "UTC", {})


class _Broken(LocalScheduler):
    def create_schedule(self, **params: Any) -> dict[str, Any]:
        from local.scheduler import _error

        raise _error("ValidationException", "CreateSchedule", "bad")


def test_a_failed_delivery_does_not_stop_the_others(capsys: pytest.CaptureFixture[str]) -> None:
    scheduler = LocalScheduler()
    one_time = schedules(scheduler)
    one_time.create("change-a", NINE_UTC, "UTC", {"n": 1})
    one_time.create("change-b", NINE_UTC, "UTC", {"n": 2})
    seen: list[int] = []

    def deliver(payload: dict[str, Any]) -> None:
        if payload["n"] == 1:
            raise RuntimeError("boom")
        seen.append(payload["n"])

    Deliveries(scheduler, deliver, clock=Clock(NINE_UTC.timestamp())).tick()
    assert seen == [2]
    assert "delivery of {'n': 1} failed" in capsys.readouterr().err


def test_a_guards_close_and_a_scheduled_change_each_reach_their_function_from_their_own_group() -> None:
    # Given the runner's one-time environment: the scheduled changes' and the guards' own targets and groups
    environment = local_one_time_environment("eu-west-1")
    change_target = SCHEDULED_CHANGE_TARGET.read(environment)
    close_target = GUARD_CLOSE_TARGET.read(environment)
    assert change_target is not None and close_target is not None
    assert close_target.group != change_target.group
    assert close_target.target_arn.endswith(f"-{GUARD_FUNCTION}")
    assert change_target.target_arn.endswith(f"-{MAINTENANCE_FUNCTION}")
    # When a guard's close and a scheduled change are both due
    scheduler = LocalScheduler()
    OneTimeSchedules(scheduler, close_target).create("guard-7", NINE_UTC, "UTC", close_payload(7))
    OneTimeSchedules(scheduler, change_target).create("change-a", NINE_UTC, "UTC", {"scheduled_change": "a"})
    delivered: list[tuple[str, dict[str, Any]]] = []
    Deliveries(
        scheduler,
        lambda payload: delivered.append((target_function(payload), payload)),
        clock=Clock(NINE_UTC.timestamp()),
    ).tick()
    # Then the close goes to the guard function, the change to the maintenance function
    assert sorted(delivered, key=lambda pair: pair[0]) == [
        (GUARD_FUNCTION, close_payload(7)),
        (MAINTENANCE_FUNCTION, {"scheduled_change": "a"}),
    ]
