"""Guarded changes as synthesized: the one alarm rule, the guard function's asynchronous settings and queues, the
close schedules' group and role, and the write function's narrow Scheduler rights."""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags_service.contract import HANDLERS
from tests.support import templates as tt
from tests.support.synth import Synth

pytestmark = pytest.mark.infra


def function_id(synth: Synth, name: str) -> str:
    lid, _ = tt.function_by_handler(synth.template, HANDLERS[name])
    return lid


def guards_resource(synth: Synth, resource_type: str, prefix: str) -> tuple[str, dict[str, Any]]:
    (found,) = [(lid, r) for lid, r in synth.resources(resource_type).items() if lid.startswith(f"Guards{prefix}")]
    return found


def test_one_rule_hears_alarms_of_the_prefix_going_into_alarm(any_synth: Synth) -> None:
    # the guards' one rule (a deployment with change_events.sns_topic has another, on its own bus: test_infra_events)
    _, rule = guards_resource(any_synth, "AWS::Events::Rule", "AlarmRule")
    properties = rule["Properties"]
    assert "EventBusName" not in properties  # the default bus: where CloudWatch sends alarm state changes
    assert properties["EventPattern"] == {
        "source": ["aws.cloudwatch"],
        "detail-type": ["CloudWatch Alarm State Change"],
        "detail": {"alarmName": [{"prefix": any_synth.config.guard_prefix}], "state": {"value": ["ALARM"]}},
    }
    (target,) = properties["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function_id(any_synth, "guard"), "Arn"]}
    dlq_id, _ = guards_resource(any_synth, "AWS::SQS::Queue", "RuleDeadLetterQueue")
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [dlq_id, "Arn"]}}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 10, "MaximumEventAgeInSeconds": 3600}


def test_only_eventbridge_from_that_rule_may_invoke_the_guard_function(synth: Synth) -> None:
    ((rule_id, _),) = synth.resources("AWS::Events::Rule").items()
    guard = function_id(synth, "guard")
    permissions = [
        p["Properties"]
        for p in synth.resources("AWS::Lambda::Permission").values()
        if tt.referenced_id(p["Properties"]["FunctionName"]) == guard
    ]
    assert permissions == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": [guard, "Arn"]},
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [rule_id, "Arn"]},
        }
    ]


def test_the_guard_functions_failures_end_in_its_alarmed_on_failure_queue(synth: Synth) -> None:
    guard = function_id(synth, "guard")
    (config,) = [
        c["Properties"]
        for c in synth.resources("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": guard}
    ]
    queue_id, _ = guards_resource(synth, "AWS::SQS::Queue", "FailureQueue")
    assert (config["MaximumRetryAttempts"], config["MaximumEventAgeInSeconds"]) == (2, 3600)
    assert config["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [queue_id, "Arn"]}}}


@pytest.mark.parametrize("queue", ["RuleDeadLetterQueue", "ScheduleDeadLetterQueue", "FailureQueue"])
def test_each_last_stop_queue_is_encrypted_tls_only_and_alarmed(synth: Synth, queue: str) -> None:
    queue_id, resource = guards_resource(synth, "AWS::SQS::Queue", queue)
    assert resource["Properties"]["SqsManagedSseEnabled"] is True
    (alarm,) = [
        a["Properties"]
        for a in synth.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "ApproximateNumberOfMessagesVisible"
        and a["Properties"]["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]
    ]
    assert (alarm["Threshold"], alarm["ComparisonOperator"], alarm["Statistic"]) == (
        0,
        "GreaterThanThreshold",
        "Maximum",
    )
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synth.resources("AWS::SQS::QueuePolicy").values()
        if {"Ref": queue_id} in p["Properties"]["Queues"]
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for statements in policies
        for s in statements
    )


@pytest.mark.parametrize("metric", ["GuardSkips", "GuardFailures"])
def test_skips_and_failures_are_alarmed(synth: Synth, metric: str) -> None:
    (alarm,) = [
        a["Properties"]
        for a in synth.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == metric
    ]
    assert alarm["Namespace"] == f"SingletonFlags/{synth.config.stage}"
    assert (alarm["Threshold"], alarm["ComparisonOperator"], alarm["Statistic"]) == (0, "GreaterThanThreshold", "Sum")


def test_the_close_schedules_role_invokes_only_the_guard_function(synth: Synth) -> None:
    role_id, role = guards_resource(synth, "AWS::IAM::Role", "SchedulerRole")
    group_id, _ = guards_resource(synth, "AWS::Scheduler::ScheduleGroup", "ScheduleGroup")
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"] == {
        "StringEquals": {
            "aws:SourceAccount": {"Ref": "AWS::AccountId"},
            "aws:SourceArn": {"Fn::GetAtt": [group_id, "Arn"]},
        }
    }
    statements = tt.role_statements(synth.template, role_id)
    guard = function_id(synth, "guard")
    dlq_id, _ = guards_resource(synth, "AWS::SQS::Queue", "ScheduleDeadLetterQueue")
    assert tt.grants(statements) == {
        ("lambda:InvokeFunction", f"<{guard}.Arn>"),
        ("lambda:InvokeFunction", f"<{guard}.Arn>:*"),
        ("sqs:SendMessage", f"<{dlq_id}.Arn>"),
    }


def test_the_write_function_may_create_schedules_in_the_guards_group_and_pass_only_their_role(synth: Synth) -> None:
    _, write = tt.function_by_handler(synth.template, HANDLERS["write"])
    statements = tt.role_statements(synth.template, tt.referenced_id(write["Properties"]["Role"]))
    _, group = guards_resource(synth, "AWS::Scheduler::ScheduleGroup", "ScheduleGroup")
    role_id, _ = guards_resource(synth, "AWS::IAM::Role", "SchedulerRole")
    schedules = (
        f"arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/{group['Properties']['Name']}/*"
    )
    # (the scheduled changes' own statements, in the maintenance group: test_infra_scheduled_changes.py)
    (create,) = [s for s in statements if tt.render(s["Resource"]) == schedules]
    assert tt.as_list(create["Action"]) == ["scheduler:CreateSchedule"]  # no update, delete
    (pass_role,) = [
        s
        for s in statements
        if "iam:PassRole" in tt.as_list(s["Action"]) and s["Resource"] == {"Fn::GetAtt": [role_id, "Arn"]}
    ]
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}
    others = [
        s for s in statements if any(a.startswith("scheduler:") for a in tt.as_list(s["Action"])) and s is not create
    ]
    assert all(
        group["Properties"]["Name"] not in tt.render(s["Resource"]) for s in others
    )  # nothing more in this group


def test_the_guard_function_has_no_scheduler_right_and_the_read_function_no_guard_right(synth: Synth) -> None:
    for name in ("guard", "read"):
        _, function = tt.function_by_handler(synth.template, HANDLERS[name])
        actions = tt.actions(tt.role_statements(synth.template, tt.referenced_id(function["Properties"]["Role"])))
        assert not {a for a in actions if a.startswith(("scheduler:", "iam:"))}, name
