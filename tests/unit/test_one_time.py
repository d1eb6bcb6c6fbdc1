"""One-time Scheduler schedules (singleton_flags_service.schedules.one_time) on moto's EventBridge Scheduler."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from botocore.stub import Stubber

from singleton_flags_service.contract import GUARD_CLOSE_TARGET, SCHEDULED_CHANGE_TARGET, SettingsError
from singleton_flags_service.errors import SchedulerFault, SchedulerUnavailable
from singleton_flags_service.schedules.one_time import OneTimeSchedules, OneTimeTarget, at_expression

GROUP = "flags-test-group"
TARGET = OneTimeTarget(
    group=GROUP,
    target_arn="arn:aws:lambda:us-east-1:123456789012:function:flags-maintenance",
    role_arn="arn:aws:iam::123456789012:role/flags-scheduler",
    dead_letter_arn="arn:aws:sqs:us-east-1:123456789012:flags-dlq",
    retry_attempts=3,
    max_event_age_seconds=3600,
)
ENV = {
    "ONE_TIME_SCHEDULE_GROUP": GROUP,
    "ONE_TIME_SCHEDULE_TARGET_ARN": TARGET.target_arn,
    "ONE_TIME_SCHEDULE_ROLE_ARN": TARGET.role_arn,
    "ONE_TIME_SCHEDULE_DLQ_ARN": TARGET.dead_letter_arn,
    "ONE_TIME_SCHEDULE_RETRY_ATTEMPTS": "3",
    "ONE_TIME_SCHEDULE_MAX_EVENT_AGE_SECONDS": "3600",
}
NINE = datetime(2027, 3, 1, 9, 0, 0)  # a wall-clock time: its zone is given apart


@pytest.fixture
def scheduler(moto: None) -> Any:
    import boto3

    client = boto3.client("scheduler", region_name="us-east-1")
    client.create_schedule_group(Name=GROUP)
    return client


def test_a_schedule_is_one_time_at_a_local_time_in_its_zone_and_deletes_itself(scheduler: Any) -> None:
    schedules = OneTimeSchedules(scheduler, TARGET)
    arn = schedules.create("sc1", NINE, "Europe/Paris", {"scheduled_change": "sc1"}, description="open signups")
    got = scheduler.get_schedule(Name="sc1", GroupName=GROUP)
    assert arn == got["Arn"] == "arn:aws:scheduler:us-east-1:123456789012:schedule/flags-test-group/sc1"
    assert got["ScheduleExpression"] == "at(2027-03-01T09:00:00)"
    assert got["ScheduleExpressionTimezone"] == "Europe/Paris"
    assert got["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert got["ActionAfterCompletion"] == "DELETE"
    assert got["Target"]["Arn"] == TARGET.target_arn
    assert got["Target"]["RoleArn"] == TARGET.role_arn
    assert got["Target"]["DeadLetterConfig"] == {"Arn": TARGET.dead_letter_arn}
    assert got["Target"]["RetryPolicy"] == {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 3600}
    assert json.loads(got["Target"]["Input"]) == {"scheduled_change": "sc1"}  # the payload, nothing more


def test_the_create_is_idempotent_by_name_its_client_token(scheduler: Any) -> None:
    schedules = OneTimeSchedules(scheduler, TARGET)
    assert schedules.request("sc1", NINE, "UTC", {})["ClientToken"] == "sc1"
    first = schedules.create("sc1", NINE, "UTC", {"scheduled_change": "sc1"})
    # a retry after a lost answer: the schedule exists, the same ARN, no error
    assert schedules.create("sc1", NINE, "UTC", {"scheduled_change": "sc1"}) == first
    assert [s["Name"] for s in scheduler.list_schedules(GroupName=GROUP)["Schedules"]] == ["sc1"]


def test_delete_removes_it_and_says_when_there_was_none(scheduler: Any) -> None:
    schedules = OneTimeSchedules(scheduler, TARGET)
    schedules.create("sc1", NINE, "UTC", {})
    assert schedules.delete("sc1") is True
    assert scheduler.list_schedules(GroupName=GROUP)["Schedules"] == []
    assert schedules.delete("sc1") is False  # fired and deleted by Scheduler, or deleted before


def test_at_expression_drops_the_zone_and_keeps_seconds() -> None:
    assert at_expression(datetime(2027, 10, 31, 2, 30)) == "at(2027-10-31T02:30:00)"


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("ThrottlingException", SchedulerUnavailable),
        ("InternalServerException", SchedulerUnavailable),
        ("AccessDeniedException", SchedulerFault),
        ("ValidationException", SchedulerFault),
    ],
)
def test_failures_are_retryable_or_our_fault(scheduler: Any, code: str, error: type[Exception]) -> None:
    stubber = Stubber(scheduler)
    stubber.add_client_error("create_schedule", service_error_code=code, http_status_code=400)
    with stubber, pytest.raises(error):
        OneTimeSchedules(scheduler, TARGET).create("sc1", NINE, "UTC", {})


@pytest.mark.parametrize("name", ["no spaces", "dots.refused.as.client.tokens", "x" * 65, ""])
def test_a_name_scheduler_would_refuse_is_a_programming_error(name: str) -> None:
    with pytest.raises(ValueError, match="schedule name"):
        OneTimeSchedules(None, TARGET).request(name, NINE, "UTC", {})


def test_target_from_env_and_its_refusals() -> None:
    assert SCHEDULED_CHANGE_TARGET.read(ENV) == TARGET
    assert SCHEDULED_CHANGE_TARGET.read({}) is None  # not configured
    with pytest.raises(SettingsError, match="ONE_TIME_SCHEDULE_ROLE_ARN"):
        SCHEDULED_CHANGE_TARGET.read({**ENV, "ONE_TIME_SCHEDULE_ROLE_ARN": ""})
    with pytest.raises(SettingsError, match="ONE_TIME_SCHEDULE_MAX_EVENT_AGE_SECONDS"):
        SCHEDULED_CHANGE_TARGET.read({**ENV, "ONE_TIME_SCHEDULE_MAX_EVENT_AGE_SECONDS": "30"})


def test_a_target_round_trips_through_its_writer_and_reader_under_each_prefix() -> None:
    # Given a target / When the stack's writer names it under a prefix / Then the reader of that prefix reads it back
    for variables in (SCHEDULED_CHANGE_TARGET, GUARD_CLOSE_TARGET):
        environment = variables.environment(TARGET)
        assert set(environment) == set(variables.names)
        assert all(name.startswith(variables.prefix) for name in environment)
        assert variables.read(environment) == TARGET
    assert GUARD_CLOSE_TARGET.read(ENV) is None  # one kind's variables are not the other's


@pytest.mark.parametrize(("retry_attempts", "max_event_age"), [(-1, 3600), (186, 3600), (3, 59), (3, 86401)])
def test_the_writer_refuses_at_synth_a_retry_policy_the_reader_would_refuse(retry_attempts: int, max_event_age: int):
    target = OneTimeTarget(
        GROUP, TARGET.target_arn, TARGET.role_arn, TARGET.dead_letter_arn, retry_attempts, max_event_age
    )
    with pytest.raises(ValueError, match="ONE_TIME_SCHEDULE_"):
        SCHEDULED_CHANGE_TARGET.environment(target)


def test_an_unreachable_scheduler_is_retryable(scheduler: Any) -> None:
    class Unreachable:
        def create_schedule(self, **_: Any) -> None:
            from botocore.exceptions import EndpointConnectionError

            raise EndpointConnectionError(endpoint_url="https://scheduler.invalid")

    with pytest.raises(SchedulerUnavailable):
        OneTimeSchedules(Unreachable(), TARGET).create("sc1", NINE, "UTC", {})
