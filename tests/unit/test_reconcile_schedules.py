"""The reconciler on moto: a scheduled change and a guard's close whose one-time schedules were deleted under them
(their schedule group replaced) are created again in the current group, or, once their time has passed, reported
overdue once; nothing else is touched. The write API creates the work, on one frozen clock."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import boto3
import pytest

from local.functions import load_module
from singleton_flags.keys import guard_key, schedule_key
from singleton_flags_service.guards.alarms import OK, CloudWatchAlarms
from singleton_flags_service.guards.items import GuardBook
from singleton_flags_service.reconcile import OVERDUE_GRACE_SECONDS, ReconcileFailed, Reconciler, Report
from singleton_flags_service.schedules.changes import OVERDUE_ATTR, ScheduledChanges, ScheduleItems
from singleton_flags_service.schedules.one_time import OneTimeSchedules, OneTimeTarget
from tests.conftest import GUARD_ALARM_PREFIX, REGION
from tests.support.unit import Clock, FailingClient, WriteApi, body_of, emf_metrics

ALARM_NAME = f"{GUARD_ALARM_PREFIX}errors"
ACCOUNT = "123456789012"
OLD, NEW = "flags-scheduled-changes-old", "flags-scheduled-changes-new"
OLD_GUARDS, NEW_GUARDS = "flags-guards-old", "flags-guards-new"


def target(group: str, function: str) -> OneTimeTarget:
    return OneTimeTarget(
        group=group,
        target_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function}",
        role_arn=f"arn:aws:iam::{ACCOUNT}:role/{function}-schedules",
        dead_letter_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:{function}-dlq",
        retry_attempts=3,
        max_event_age_seconds=3600,
    )


CHANGES, CLOSES = target(OLD, "maintenance"), target(OLD_GUARDS, "guard")


@dataclass
class Replaced:
    api: WriteApi
    scheduler: Any
    clock: Clock
    reconciler: Reconciler
    change_id: str
    version: int
    before: dict[str, dict[str, Any]]  # each schedule as first created, by name

    def schedule(self, group: str, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self.scheduler.get_schedule(Name=name, GroupName=group)
        except self.scheduler.exceptions.ResourceNotFoundException:
            return None
        return found

    def item(self, key: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = self.api.client.get_item(TableName=self.api.table, Key=key, ConsistentRead=True)["Item"]
        return found


def same_request(schedule: dict[str, Any]) -> dict[str, Any]:
    """What a schedule does, apart from where it lives."""
    return {key: schedule[key] for key in ("Name", "ScheduleExpression", "ScheduleExpressionTimezone", "Target")}


@pytest.fixture
def replaced(api: WriteApi, clock: Clock, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> Replaced:
    """Given a pending scheduled change (due in 1 h) and a guarded change baking for 30 min, each with its one-time
    schedule in the first groups; then those groups deleted with their schedules (a renamed construct), and new,
    empty groups the reconciler is configured with."""
    scheduler = boto3.client("scheduler", region_name=REGION)
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    for group in (OLD, OLD_GUARDS, NEW, NEW_GUARDS):
        scheduler.create_schedule_group(Name=group)
    cloudwatch.put_metric_alarm(
        AlarmName=ALARM_NAME,
        MetricName="Errors",
        Namespace="App",
        Statistic="Sum",
        Period=60,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanThreshold",
    )
    cloudwatch.set_alarm_state(AlarmName=ALARM_NAME, StateValue=OK, StateReason="test")
    items = ScheduleItems(api.client, api.table, retention_seconds=365 * 86400)
    monkeypatch.setattr(
        api.module,
        "SCHEDULED",
        ScheduledChanges(items, OneTimeSchedules(scheduler, CHANGES), landing=api.module.landing, clock=clock),
    )
    writes = api.module.GUARDS
    monkeypatch.setattr(writes, "alarms", CloudWatchAlarms(lambda: cloudwatch))
    monkeypatch.setattr(writes, "schedules", OneTimeSchedules(scheduler, CLOSES))
    monkeypatch.setattr(writes, "clock", clock)
    monkeypatch.setattr(writes, "book", GuardBook(api.client, api.table))
    at = clock() + 3600
    created = api(
        "POST",
        "/flags/schedules",
        body={"flags": {"ai_search_enabled": True}, "reason": "launch", "at": _iso(at)},
    )
    assert created["statusCode"] == 201, created["body"]
    change_id = body_of(created)["id"]
    patched = api(
        "PATCH",
        "/flags",
        body={
            "flags": {"signup_enabled": False},
            "reason": "try",
            "guard": {"alarms": [ALARM_NAME], "bake_minutes": 30},
        },
    )
    assert patched["statusCode"] == 200, patched["body"]
    version = body_of(patched)["version"]
    before = {
        f"change-{change_id}": scheduler.get_schedule(Name=f"change-{change_id}", GroupName=OLD),
        f"guard-{version}": scheduler.get_schedule(Name=f"guard-{version}", GroupName=OLD_GUARDS),
    }
    for group in (OLD, OLD_GUARDS):  # the construct renamed: its group, and every schedule in it, deleted
        for name in [s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]]:
            scheduler.delete_schedule(Name=name, GroupName=group)
        scheduler.delete_schedule_group(Name=group)
    reconciler = Reconciler(
        items,
        OneTimeSchedules(scheduler, replace(CHANGES, group=NEW)),
        GuardBook(api.client, api.table),
        OneTimeSchedules(scheduler, replace(CLOSES, group=NEW_GUARDS)),
        clock=clock,
    )
    return Replaced(api, scheduler, clock, reconciler, change_id, version, before)


def _iso(epoch: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch - epoch % 60 + 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_pending_change_and_a_guard_close_whose_schedules_are_gone_are_created_again_in_the_current_group(
    replaced: Replaced,
) -> None:
    change, close = f"change-{replaced.change_id}", f"guard-{replaced.version}"
    assert replaced.schedule(NEW, change) is None and replaced.schedule(NEW_GUARDS, close) is None
    # When the reconciler runs
    report = replaced.reconciler.run()
    # Then both schedules are back, in the current groups, under the same names, doing exactly what they did
    assert sorted(report.recreated) == sorted([change, close]) and report.overdue == []
    for group, name in ((NEW, change), (NEW_GUARDS, close)):
        schedule = replaced.schedule(group, name)
        assert schedule is not None, name
        assert same_request(schedule) == same_request(replaced.before[name])
        assert schedule["ActionAfterCompletion"] == "DELETE"
    assert json.loads(replaced.before[change]["Target"]["Input"]) == {"scheduled_change": replaced.change_id}
    # And the items are untouched: still pending, still baking, nothing reported
    assert replaced.item(schedule_key(replaced.change_id))["status"]["S"] == "pending"
    assert OVERDUE_ATTR not in replaced.item(guard_key(replaced.version))


def test_a_second_run_finds_every_schedule_in_place_and_creates_nothing(replaced: Replaced) -> None:
    replaced.reconciler.run()
    # When it runs again (or another run overlaps it)
    report = replaced.reconciler.run()
    # Then nothing is created: each schedule is found where it belongs
    assert (report.recreated, report.overdue, report.checked) == ([], [], 2)
    names = [s["Name"] for s in replaced.scheduler.list_schedules(GroupName=NEW)["Schedules"]]
    assert names == [f"change-{replaced.change_id}"]


def test_work_whose_time_passed_unapplied_is_reported_overdue_once_and_left_pending(replaced: Replaced) -> None:
    # Given both items' times passed (the change's at +1 h, the close's at +30 min) by more than the grace
    replaced.clock.advance(3600 + 60 + OVERDUE_GRACE_SECONDS)
    # When the reconciler runs
    report = replaced.reconciler.run()
    # Then both are reported overdue, recorded on their items, not re-created, and still pending
    assert sorted(report.overdue) == sorted([f"change-{replaced.change_id}", f"guard-{replaced.version}"])
    assert report.recreated == []
    assert replaced.schedule(NEW, f"change-{replaced.change_id}") is None
    change = replaced.item(schedule_key(replaced.change_id))
    assert change["status"]["S"] == "pending" and OVERDUE_ATTR in change
    guard = replaced.item(guard_key(replaced.version))
    assert guard["state"]["S"] == "baking" and OVERDUE_ATTR in guard
    # And a second run does not report them again (one alarm per lost delivery)
    assert replaced.reconciler.run().overdue == []


def test_work_due_within_the_grace_is_neither_created_nor_reported(replaced: Replaced) -> None:
    # Given the close's time passed 5 minutes ago (its delivery may be under way) and the change's is 25 min ahead
    replaced.clock.advance(35 * 60)
    report = replaced.reconciler.run()
    # Then the close is left to its delivery; only the change's schedule is created again
    assert report.recreated == [f"change-{replaced.change_id}"] and report.overdue == []
    assert replaced.schedule(NEW_GUARDS, f"guard-{replaced.version}") is None


def test_a_scheduler_failure_on_one_item_still_reconciles_the_others_and_raises(replaced: Replaced) -> None:
    failing = FailingClient(replaced.scheduler, "get_schedule", "AccessDeniedException")
    changes = OneTimeSchedules(failing, replace(CHANGES, group=NEW))
    reconciler = Reconciler(
        ScheduleItems(replaced.api.client, replaced.api.table, retention_seconds=86400),
        changes,
        GuardBook(replaced.api.client, replaced.api.table),
        OneTimeSchedules(replaced.scheduler, replace(CLOSES, group=NEW_GUARDS)),
        clock=replaced.clock,
    )
    report = Report()
    with pytest.raises(ReconcileFailed, match=f"change-{replaced.change_id}"):
        reconciler.run(report)
    # The guard's close was still re-created
    assert report.recreated == [f"guard-{replaced.version}"]
    assert replaced.schedule(NEW_GUARDS, f"guard-{replaced.version}") is not None


def test_the_handler_counts_what_it_recreated_and_what_is_overdue(
    replaced: Replaced, monkeypatch: pytest.MonkeyPatch, lambda_context: Any, stdout: Any
) -> None:
    module = _reconcile_module(monkeypatch)
    monkeypatch.setattr(module, "RECONCILER", replaced.reconciler)
    answer = module.handler({"action": "reconcile"}, lambda_context)
    assert len(answer["recreated"]) == 2
    counted = {name: value for name, value, _ in emf_metrics(stdout.records())}
    assert counted["SchedulesRecreated"] == 2 and counted["SchedulesOverdue"] == 0


def _reconcile_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    for prefix, configured in (("ONE_TIME_SCHEDULE_", CHANGES), ("GUARD_SCHEDULE_", CLOSES)):
        monkeypatch.setenv(f"{prefix}GROUP", configured.group)
        monkeypatch.setenv(f"{prefix}TARGET_ARN", configured.target_arn)
        monkeypatch.setenv(f"{prefix}ROLE_ARN", configured.role_arn)
        monkeypatch.setenv(f"{prefix}DLQ_ARN", configured.dead_letter_arn)
        monkeypatch.setenv(f"{prefix}RETRY_ATTEMPTS", "3")
        monkeypatch.setenv(f"{prefix}MAX_EVENT_AGE_SECONDS", "3600")
    return load_module("singleton_flags_service.handlers.reconcile", fresh=True)
