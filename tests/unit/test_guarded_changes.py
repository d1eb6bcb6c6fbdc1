"""Guarded changes on moto: a PATCH or revert with a guard (its checks, its one transaction, its close schedule),
the guard function reverting, skipping, ignoring and closing, and GET /flags/guards.

CloudWatch alarms and the Scheduler group are moto's; the write function's store and guards and the guard
function's service run on one fake clock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import boto3
import pytest

from local.functions import load_module
from singleton_flags.codec import iso_time
from singleton_flags.keys import GUARD_PK, audit_key, guard_key
from singleton_flags_service.guards.alarms import ALARM, INSUFFICIENT_DATA, OK, CloudWatchAlarms
from singleton_flags_service.guards.guarding import AlarmEvent, GuardService
from singleton_flags_service.guards.items import GuardBook
from singleton_flags_service.guards.writes import close_payload
from singleton_flags_service.schedules.one_time import OneTimeSchedules, OneTimeTarget
from singleton_flags_service.writes.store import FlagStore
from tests.conftest import GUARD_ALARM_PREFIX, REGION
from tests.support.unit import CALLER, REASON, Clock, FailingClient, LossyClient, WriteApi, body_of, emf_metrics

ERRORS = f"{GUARD_ALARM_PREFIX}errors"
LATENCY = f"{GUARD_ALARM_PREFIX}latency"
GROUP = "guards"
FUNCTION_ARN = f"arn:aws:lambda:{REGION}:123456789012:function:guard"
TARGET = OneTimeTarget(
    group=GROUP,
    target_arn=FUNCTION_ARN,
    role_arn="arn:aws:iam::123456789012:role/guard-schedules",
    dead_letter_arn=f"arn:aws:sqs:{REGION}:123456789012:guard-dlq",
    retry_attempts=3,
    max_event_age_seconds=3600,
)


@dataclass
class Guarded:
    api: WriteApi
    guard_module: ModuleType
    cloudwatch: Any
    scheduler: Any
    clock: Clock
    context: Any

    def alarm(self, name: str, state: str = OK) -> None:
        self.cloudwatch.put_metric_alarm(
            AlarmName=name,
            MetricName="Errors",
            Namespace="App",
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=1,
            ComparisonOperator="GreaterThanThreshold",
        )
        if state != INSUFFICIENT_DATA:
            self.cloudwatch.set_alarm_state(AlarmName=name, StateValue=state, StateReason="test")

    def patch(self, flags: dict[str, Any], guard: Any, **options: Any) -> dict[str, Any]:
        body = {"flags": flags, "reason": REASON, "guard": guard}
        return self.api("PATCH", "/flags", body=body, **options)

    def fire(self, name: str, at: float | None = None) -> dict[str, Any]:
        """Deliver the alarm state change event EventBridge's rule sends the guard function."""
        return self.invoke(alarm_event(name, self.clock() if at is None else at))

    def invoke(self, event: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.guard_module.handler(event, self.context)
        return result

    def guard_item(self, version: int) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self.api.client.get_item(TableName=self.api.table, Key=guard_key(version)).get(
            "Item"
        )
        return item

    def flags(self) -> dict[str, Any]:
        return body_of(self.api("GET", "/flags/history", query={"limit": "1"}))["records"][0]["state"]

    def records(self) -> list[dict[str, Any]]:
        return body_of(self.api.history(limit="100"))["records"]

    def schedules(self) -> list[dict[str, Any]]:
        names = [item["Name"] for item in self.scheduler.list_schedules(GroupName=GROUP)["Schedules"]]
        return [self.scheduler.get_schedule(Name=name, GroupName=GROUP) for name in names]


def alarm_event(name: str, at: float, state: str = ALARM) -> dict[str, Any]:
    """A "CloudWatch Alarm State Change" event as EventBridge delivers it (CloudWatch's documented shape)."""
    return {
        "version": "0",
        "id": "c4c1c1c9-6542-e61b-6ef0-8c4d36933a92",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": iso_time(at),
        "region": REGION,
        "resources": [f"arn:aws:cloudwatch:{REGION}:123456789012:alarm:{name}"],
        "detail": {
            "alarmName": name,
            "state": {"value": state, "reason": "test", "timestamp": iso_time(at)},
            "previousState": {"value": OK, "reason": "test", "timestamp": iso_time(at - 60)},
        },
    }


@pytest.fixture
def guarded(api: WriteApi, clock: Clock, lambda_context: Any, monkeypatch: pytest.MonkeyPatch) -> Guarded:
    """Given version 1 (ai_search_enabled on), two quiet alarms, the guards' schedule group, both functions."""
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    scheduler = boto3.client("scheduler", region_name=REGION)
    scheduler.create_schedule_group(Name=GROUP)
    writes = api.module.GUARDS
    monkeypatch.setattr(writes, "alarms", CloudWatchAlarms(lambda: cloudwatch))
    monkeypatch.setattr(writes, "schedules", OneTimeSchedules(scheduler, TARGET))
    monkeypatch.setattr(writes, "clock", clock)
    monkeypatch.setattr(writes, "book", GuardBook(api.client, api.table))
    guard_module = load_module("singleton_flags_service.handlers.guard")
    store = FlagStore(api.client, api.table, api.module.DECLARATIONS, clock=clock, sleep=lambda _: None)
    service = GuardService(store, GuardBook(api.client, api.table), CloudWatchAlarms(lambda: cloudwatch), clock=clock)
    monkeypatch.setattr(guard_module, "GUARDS", service)
    setup = Guarded(api, guard_module, cloudwatch, scheduler, clock, lambda_context)
    setup.alarm(ERRORS)
    setup.alarm(LATENCY)
    return setup


GUARD = {"alarms": [ERRORS, LATENCY], "bake_minutes": 30}


# ---------------------------------------------------------------------------------------------- the guarded write


def test_a_guarded_patch_commits_its_guard_with_the_change_and_schedules_the_bakes_end(guarded: Guarded) -> None:
    response = guarded.patch({"signup_enabled": False}, GUARD)

    assert response["statusCode"] == 200, body_of(response)
    body = body_of(response)
    assert body["version"] == 2
    assert body["guard"]["state"] == "baking"
    assert body["guard"]["alarms"] == [ERRORS, LATENCY]
    assert body["guard"]["close_scheduled"] is True
    item = guarded.guard_item(2)
    assert item is not None
    assert item["PK"]["S"] == GUARD_PK
    assert item["SK"]["S"] == "GUARD#000000000002"
    assert item["state"]["S"] == "baking"
    assert int(item["bake_ends_at"]["N"]) == int(guarded.clock()) + 30 * 60
    assert item["actor"]["S"] == CALLER
    record = guarded.records()[0]
    assert (record["version"], record["kind"]) == (2, "change")
    assert record["guard"] == {**GUARD, "bake_ends_at": body["guard"]["bake_ends_at"]}
    (schedule,) = guarded.schedules()
    assert schedule["Name"] == "guard-2"
    assert json.loads(schedule["Target"]["Input"]) == close_payload(2)
    assert schedule["Target"]["Arn"] == FUNCTION_ARN
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["ScheduleExpression"] == "at(2023-11-14T22:44:00)"  # START + 30 min, rounded up to the minute


def test_a_guarded_revert_is_guarded_too(guarded: Guarded) -> None:
    response = guarded.api("POST", "/flags/revert", body={"version": 0, "reason": REASON, "guard": GUARD})

    assert response["statusCode"] == 200, body_of(response)
    assert body_of(response)["guard"]["version"] == 2
    record = guarded.records()[0]
    assert (record["kind"], record["reverted_to"], record["guard"]["alarms"]) == ("revert", 0, GUARD["alarms"])
    assert guarded.guard_item(2) is not None


def test_an_alarm_in_insufficient_data_may_guard_a_change(guarded: Guarded) -> None:
    name = f"{GUARD_ALARM_PREFIX}new"
    guarded.alarm(name, INSUFFICIENT_DATA)

    response = guarded.patch({"signup_enabled": False}, {"alarms": [name], "bake_minutes": 1})

    assert response["statusCode"] == 200, body_of(response)


@pytest.mark.parametrize(
    ("guard", "rule"),
    [
        (None, "guard"),
        ([ERRORS], "guard"),
        ({"alarms": [ERRORS]}, "guard"),
        ({"alarms": [ERRORS], "bake_minutes": 5, "extra": 1}, "guard"),
        ({"alarms": [], "bake_minutes": 5}, "guard_alarms"),
        ({"alarms": ERRORS, "bake_minutes": 5}, "guard_alarms"),
        ({"alarms": [f"{GUARD_ALARM_PREFIX}{n}" for n in range(6)], "bake_minutes": 5}, "guard_alarms"),
        ({"alarms": [ERRORS, ERRORS], "bake_minutes": 5}, "guard_alarms"),
        ({"alarms": [7], "bake_minutes": 5}, "guard_alarms"),
        ({"alarms": [ERRORS + "\n"], "bake_minutes": 5}, "guard_alarms"),
        ({"alarms": [GUARD_ALARM_PREFIX + "x" * 256], "bake_minutes": 5}, "guard_alarms"),
        ({"alarms": ["someone-elses-alarm"], "bake_minutes": 5}, "guard_alarm_prefix"),
        ({"alarms": [GUARD_ALARM_PREFIX], "bake_minutes": 5}, "guard_alarm_prefix"),
        ({"alarms": [ERRORS], "bake_minutes": 0}, "guard_bake_minutes"),
        ({"alarms": [ERRORS], "bake_minutes": 1441}, "guard_bake_minutes"),
        ({"alarms": [ERRORS], "bake_minutes": "5"}, "guard_bake_minutes"),
        ({"alarms": [ERRORS], "bake_minutes": True}, "guard_bake_minutes"),
        ({"alarms": [ERRORS], "bake_minutes": 5.0}, "guard_bake_minutes"),
    ],
)
def test_a_malformed_guard_is_400_naming_its_rule_and_writes_nothing(guarded: Guarded, guard: Any, rule: str) -> None:
    before = guarded.api.state()

    response = guarded.patch({"signup_enabled": False}, guard)

    assert response["statusCode"] == 400, body_of(response)
    error = body_of(response)["error"]
    assert (error["code"], error["rule"]) == ("INVALID_REQUEST", rule)
    assert guarded.api.state() == before
    assert guarded.guard_item(2) is None
    assert guarded.schedules() == []


def test_a_guard_naming_an_alarm_that_does_not_exist_is_400_and_writes_nothing(guarded: Guarded) -> None:
    before = guarded.api.state()
    missing = f"{GUARD_ALARM_PREFIX}missing"

    response = guarded.patch({"signup_enabled": False}, {"alarms": [ERRORS, missing], "bake_minutes": 5})

    assert response["statusCode"] == 400
    error = body_of(response)["error"]
    assert (error["code"], error["rule"], error["alarms"]) == ("GUARD_ALARM_NOT_FOUND", "guard_alarm_exists", [missing])
    assert guarded.api.state() == before
    assert guarded.guard_item(2) is None


def test_a_guard_naming_an_alarm_in_alarm_is_409_guard_alarm_active_and_writes_nothing(guarded: Guarded) -> None:
    guarded.alarm(LATENCY, ALARM)
    before = guarded.api.state()

    response = guarded.patch({"signup_enabled": False}, GUARD)

    assert response["statusCode"] == 409
    error = body_of(response)["error"]
    assert (error["code"], error["alarms"]) == ("GUARD_ALARM_ACTIVE", [LATENCY])
    assert guarded.api.state() == before
    assert guarded.guard_item(2) is None
    assert guarded.schedules() == []


def test_cloudwatch_throttling_is_503_with_retry_after_and_writes_nothing(
    guarded: Guarded, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = FailingClient(guarded.cloudwatch, "describe_alarms", "Throttling")
    monkeypatch.setattr(guarded.api.module.GUARDS, "alarms", CloudWatchAlarms(lambda: failing))
    before = guarded.api.state()

    response = guarded.patch({"signup_enabled": False}, GUARD)

    assert response["statusCode"] == 503
    assert body_of(response)["error"]["code"] == "ALARMS_UNAVAILABLE"
    assert response["multiValueHeaders"]["Retry-After"] == ["2"]
    assert guarded.api.state() == before


def test_a_no_op_guarded_patch_writes_no_version_and_no_guard(guarded: Guarded) -> None:
    response = guarded.patch({"ai_search_enabled": True}, GUARD)  # already on at version 1

    assert response["statusCode"] == 200
    assert (body_of(response)["applied"], "guard" in body_of(response)) == (False, False)
    assert (
        guarded.api.client.query(
            TableName=guarded.api.table,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": GUARD_PK}},
        )["Items"]
        == []
    )


def test_the_same_idempotency_key_writes_one_version_and_one_guard(guarded: Guarded) -> None:
    headers = {"Idempotency-Key": "guarded-1"}
    first = guarded.patch({"signup_enabled": False}, GUARD, headers=headers)
    second = guarded.patch({"signup_enabled": False}, GUARD, headers=headers)

    assert (first["statusCode"], second["statusCode"]) == (200, 200)
    assert second["multiValueHeaders"]["Idempotent-Replayed"] == ["true"]
    assert body_of(second)["guard"]["version"] == body_of(first)["guard"]["version"] == 2
    assert [record["version"] for record in guarded.records()] == [2, 1]
    assert len(guarded.schedules()) == 1
    other = guarded.patch({"signup_enabled": False}, {**GUARD, "bake_minutes": 5}, headers=headers)
    assert (other["statusCode"], body_of(other)["error"]["code"]) == (422, "IDEMPOTENCY_KEY_REUSED")


def test_a_lost_answer_resent_with_its_token_commits_one_guard(
    guarded: Guarded, monkeypatch: pytest.MonkeyPatch
) -> None:
    lossy = LossyClient(guarded.api.client, lose=1)
    guarded.api.use_store(monkeypatch, lossy, clock=guarded.clock)

    response = guarded.patch({"signup_enabled": False}, GUARD)

    assert response["statusCode"] == 200, body_of(response)
    assert len(set(lossy.tokens)) == 1 and len(lossy.tokens) == 2  # the same request, resent once
    assert body_of(response)["guard"]["version"] == 2
    assert guarded.guard_item(2) is not None
    assert [record["version"] for record in guarded.records()] == [2, 1]


def test_a_close_schedule_that_cannot_be_created_leaves_the_change_and_says_so(
    guarded: Guarded, monkeypatch: pytest.MonkeyPatch, stdout: Any
) -> None:
    failing = FailingClient(guarded.scheduler, "create_schedule", "ThrottlingException")
    monkeypatch.setattr(guarded.api.module.GUARDS, "schedules", OneTimeSchedules(failing, TARGET))

    response = guarded.patch({"signup_enabled": False}, GUARD)

    assert response["statusCode"] == 200
    assert body_of(response)["guard"]["close_scheduled"] is False
    assert guarded.guard_item(2) is not None
    assert ("GuardFailures", 1.0) in [(name, value) for name, value, _ in emf_metrics(stdout.records())]


# ---------------------------------------------------------------------------------------------- the guard function


def test_an_alarm_during_the_bake_reverts_the_guarded_change_as_actor_guard(guarded: Guarded, stdout: Any) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    guarded.clock.advance(120)

    result = guarded.fire(LATENCY)

    assert [outcome["status"] for outcome in result["outcomes"]] == ["reverted"]
    record = guarded.records()[0]
    assert (record["version"], record["kind"], record["actor"]) == (3, "guard-revert", "guard")
    assert record["reverted_to"] == 1
    assert record["guard"] == {"version": 2, "alarm": LATENCY}
    assert record["state"]["signup_enabled"] is True  # version 1's value again
    item = guarded.guard_item(2)
    assert item is not None
    assert (item["state"]["S"], item["alarm"]["S"], item["reverted_by"]["N"]) == ("reverted", LATENCY, "3")
    assert ("GuardReverts", 1.0) in [(name, value) for name, value, _ in emf_metrics(stdout.records())]


def test_a_second_delivery_of_the_alarm_does_nothing(guarded: Guarded) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    event = alarm_event(ERRORS, guarded.clock() + 60)
    guarded.invoke(event)
    after_first = guarded.api.state()

    result = guarded.invoke(event)

    assert result["outcomes"] == []  # no guard is baking any more
    assert guarded.api.state() == after_first


def test_an_alarm_after_a_newer_change_skips_the_guard_and_counts_a_skip(guarded: Guarded, stdout: Any) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    guarded.api.patch({"search_ranking": "hybrid"})  # version 3, unguarded
    before = guarded.api.state()

    result = guarded.fire(ERRORS)

    (outcome,) = result["outcomes"]
    assert (outcome["status"], outcome["guard"], outcome["version"]) == ("skipped", 2, 3)
    assert guarded.api.state() == before  # nothing undone
    item = guarded.guard_item(2)
    assert item is not None
    assert item["state"]["S"] == "skipped"
    assert "version 3" in item["outcome"]["S"]
    assert ("GuardSkips", 1.0) in [(name, value) for name, value, _ in emf_metrics(stdout.records())]


def test_an_alarm_after_the_bake_is_ignored_and_closes_the_guard(guarded: Guarded) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    guarded.clock.advance(30 * 60)
    before = guarded.api.state()

    (outcome,) = guarded.fire(ERRORS)["outcomes"]

    assert outcome["status"] == "ignored"
    assert guarded.api.state() == before
    item = guarded.guard_item(2)
    assert item is not None and item["state"]["S"] == "closed"


def test_an_alarm_change_from_before_the_guard_existed_reverts_nothing(guarded: Guarded) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    before = guarded.api.state()

    (outcome,) = guarded.fire(ERRORS, at=guarded.clock() - 5)["outcomes"]

    assert outcome["status"] == "ignored"
    assert guarded.api.state() == before
    item = guarded.guard_item(2)
    assert item is not None and item["state"]["S"] == "baking"


def test_an_alarm_only_concerns_the_guards_watching_it(guarded: Guarded) -> None:
    other = f"{GUARD_ALARM_PREFIX}other"
    guarded.alarm(other)
    guarded.patch({"signup_enabled": False}, {"alarms": [other], "bake_minutes": 10})
    before = guarded.api.state()

    assert guarded.fire(ERRORS)["outcomes"] == []
    assert guarded.api.state() == before


def test_the_close_ends_a_quiet_bake_once(guarded: Guarded, stdout: Any) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    guarded.clock.advance(30 * 60)

    first = guarded.invoke(close_payload(2))["outcomes"]
    second = guarded.invoke(close_payload(2))["outcomes"]

    assert [outcome["status"] for outcome in first + second] == ["closed", "duplicate"]
    item = guarded.guard_item(2)
    assert item is not None and item["state"]["S"] == "closed"
    assert [record["version"] for record in guarded.records()] == [2, 1]  # closing writes no version
    assert ("GuardCloses", 1.0) in [(name, value) for name, value, _ in emf_metrics(stdout.records())]


def test_a_close_before_the_bakes_end_leaves_the_guard_baking(guarded: Guarded) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    guarded.clock.advance(29 * 60)

    (outcome,) = guarded.invoke(close_payload(2))["outcomes"]

    assert outcome["status"] == "early"
    item = guarded.guard_item(2)
    assert item is not None and item["state"]["S"] == "baking"


def test_the_close_reverts_when_an_alarm_is_in_alarm_at_the_bakes_end(guarded: Guarded) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    guarded.alarm(ERRORS, ALARM)  # its state change event never arrived
    guarded.clock.advance(30 * 60)

    (outcome,) = guarded.invoke(close_payload(2))["outcomes"]

    assert (outcome["status"], outcome["alarm"]) == ("reverted", ERRORS)
    assert guarded.records()[0]["kind"] == "guard-revert"


def test_a_revert_the_store_refuses_fails_without_raising_and_skips_the_guard(guarded: Guarded, stdout: Any) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    guarded.api.client.delete_item(TableName=guarded.api.table, Key=audit_key(1))  # version 1 expired from the trail

    (outcome,) = guarded.fire(ERRORS)["outcomes"]

    assert outcome["status"] == "failed"
    item = guarded.guard_item(2)
    assert item is not None and item["state"]["S"] == "skipped"
    assert ("GuardFailures", 1.0) in [(name, value) for name, value, _ in emf_metrics(stdout.records())]


@pytest.mark.parametrize(
    "event",
    [
        None,
        [],
        {},
        {"action": "close"},
        {"action": "close", "guard": 0},
        {"action": "close", "guard": "2"},
        {"action": "close", "guard": 2, "extra": 1},
        {"source": "aws.cloudwatch", "detail-type": "CloudWatch Alarm Configuration Change", "detail": {}},
        {"source": "aws.cloudwatch", "detail-type": "CloudWatch Alarm State Change", "detail": {"alarmName": ERRORS}},
        {**alarm_event(ERRORS, 1_700_000_000.0, state=OK)},
        {**alarm_event(ERRORS, 1_700_000_000.0), "time": "yesterday"},
    ],
    ids=[
        "null",
        "list",
        "empty",
        "close-without-guard",
        "close-guard-0",
        "close-guard-text",
        "close-extra-key",
        "other-detail-type",
        "no-state",
        "state-ok",
        "bad-time",
    ],
)
def test_a_delivery_that_is_neither_is_rejected_without_raising(guarded: Guarded, event: Any, stdout: Any) -> None:
    before = guarded.api.state()

    (outcome,) = guarded.invoke(event)["outcomes"]

    assert outcome["status"] == "rejected"
    assert guarded.api.state() == before
    assert ("GuardFailures", 1.0) in [(name, value) for name, value, _ in emf_metrics(stdout.records())]


def test_dynamodb_unavailable_raises_so_lambda_retries(guarded: Guarded, monkeypatch: pytest.MonkeyPatch) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    failing = FailingClient(guarded.api.client, "query", "ProvisionedThroughputExceededException")
    service = guarded.guard_module.GUARDS
    monkeypatch.setattr(service, "book", GuardBook(failing, guarded.api.table))

    with pytest.raises(Exception, match="ProvisionedThroughputExceeded"):
        guarded.fire(ERRORS)


# ---------------------------------------------------------------------------------------------- GET /flags/guards


def test_get_guards_lists_guards_newest_first_with_their_state_and_outcome(guarded: Guarded) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)  # version 2
    guarded.fire(ERRORS)  # version 3, the guard-revert
    guarded.patch({"search_ranking": "hybrid"}, {"alarms": [LATENCY], "bake_minutes": 1})  # version 4

    response = guarded.api("GET", "/flags/guards")

    assert response["statusCode"] == 200
    guards = body_of(response)["guards"]
    assert [(guard["version"], guard["state"]) for guard in guards] == [(4, "baking"), (2, "reverted")]
    assert guards[1]["alarm"] == ERRORS and guards[1]["reverted_by"] == 3 and guards[1]["outcome"]
    assert guards[0]["alarms"] == [LATENCY] and guards[0]["outcome"] is None
    guarded.clock.advance(60)
    assert body_of(guarded.api("GET", "/flags/guards"))["guards"][0]["state"] == "closed"  # the bake is over


def test_get_guards_pages_with_a_cursor(guarded: Guarded) -> None:
    for ranking in ("hybrid", "classic", "hybrid"):
        guarded.patch({"search_ranking": ranking}, {"alarms": [ERRORS], "bake_minutes": 5})

    first = body_of(guarded.api("GET", "/flags/guards", query={"limit": "2"}))
    second = body_of(guarded.api("GET", "/flags/guards", query={"limit": "2", "cursor": first["next_cursor"]}))

    assert [guard["version"] for guard in first["guards"] + second["guards"]] == [4, 3, 2]
    assert second["next_cursor"] is None


@pytest.mark.parametrize("query", [{"limit": "0"}, {"limit": "101"}, {"limit": "-1"}, {"cursor": "nonsense"}])
def test_get_guards_refuses_a_bad_query_with_400(guarded: Guarded, query: dict[str, str]) -> None:
    response = guarded.api("GET", "/flags/guards", query=query)

    assert response["statusCode"] == 400
    assert body_of(response)["error"]["rule"] in ("limit", "cursor")


class CompositeOnly:
    """DescribeAlarms as CloudWatch answers it for one composite alarm (moto has no composite alarms): it is in
    CompositeAlarms only, and only when the request asks for that type."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.requests: list[dict[str, Any]] = []

    def describe_alarms(self, **params: Any) -> dict[str, Any]:
        self.requests.append(params)
        wanted = "CompositeAlarm" in params.get("AlarmTypes", []) and self.name in params["AlarmNames"]
        composite = [{"AlarmName": self.name, "StateValue": OK}] if wanted else []
        return {"MetricAlarms": [], "CompositeAlarms": composite}


def test_a_composite_alarm_may_guard_a_change(guarded: Guarded, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"{GUARD_ALARM_PREFIX}composite"
    cloudwatch = CompositeOnly(name)
    monkeypatch.setattr(guarded.api.module.GUARDS, "alarms", CloudWatchAlarms(lambda: cloudwatch))

    response = guarded.patch({"signup_enabled": False}, {"alarms": [name], "bake_minutes": 5})

    assert response["statusCode"] == 200, body_of(response)
    assert body_of(response)["guard"]["alarms"] == [name]
    (request,) = cloudwatch.requests
    assert request == {"AlarmNames": [name], "AlarmTypes": ["MetricAlarm", "CompositeAlarm"]}


def test_an_alarm_for_a_guard_another_delivery_ended_is_a_duplicate(guarded: Guarded) -> None:
    guarded.patch({"signup_enabled": False}, GUARD)
    guarded.fire(ERRORS)  # reverted
    service = guarded.guard_module.GUARDS
    ended = service.book.get(2)
    before = guarded.api.state()

    outcome = service.on_alarm(ended, AlarmEvent(LATENCY, guarded.clock()))

    assert (outcome.status, outcome.detail) == ("duplicate", "the guard is already reverted")
    assert guarded.api.state() == before
