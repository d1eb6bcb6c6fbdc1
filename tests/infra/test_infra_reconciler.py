"""The reconciler as synthesized: a recurring schedule in Scheduler's default group runs the reconcile function,
whose role may find and create the one-time schedules of the stack's two groups (passing their two roles, only to
Scheduler) and Query/UpdateItem only the schedules' and guards' partitions; its overdue work is alarmed."""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags.keys import GUARD_PK, SCHEDULE_PK
from singleton_flags_service.contract import HANDLERS, RECONCILE_HANDLER
from tests.support import templates as tt
from tests.support.synth import Synth

pytestmark = pytest.mark.infra

SCHEDULES_ARN = "arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/"


def reconcile(synth: Synth) -> tuple[str, dict[str, Any]]:
    return tt.function_by_handler(synth.template, RECONCILE_HANDLER)


def statements(synth: Synth) -> list[dict[str, Any]]:
    _, function = reconcile(synth)
    return tt.role_statements(synth.template, tt.referenced_id(function["Properties"]["Role"]))


def groups(synth: Synth) -> dict[str, str]:
    """The stack's one-time schedule groups by construct (Maintenance, Guards): their names."""
    return {
        prefix: next(
            g["Properties"]["Name"]
            for lid, g in synth.resources("AWS::Scheduler::ScheduleGroup").items()
            if lid.startswith(prefix)
        )
        for prefix in ("Maintenance", "Guards")
    }


def test_a_recurring_schedule_in_the_default_group_runs_the_reconcile_function_every_5_minutes(
    any_synth: Synth,
) -> None:
    function_id, _ = reconcile(any_synth)
    (schedule,) = [
        s["Properties"]
        for s in any_synth.resources("AWS::Scheduler::Schedule").values()
        if s["Properties"]["Target"]["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    assert schedule["ScheduleExpression"] == "rate(5 minutes)"
    assert schedule.get("GroupName", "default") == "default"  # no deploy replaces it
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert schedule["Target"]["RetryPolicy"]["MaximumRetryAttempts"] == 0  # the next run comes in 5 minutes
    role_id = tt.referenced_id(schedule["Target"]["RoleArn"])
    trust = any_synth.resources("AWS::IAM::Role")[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert "schedule-group/default" in tt.render(trust["Condition"]["StringEquals"]["aws:SourceArn"])
    assert tt.actions(tt.role_statements(any_synth.template, role_id)) == {"lambda:InvokeFunction"}


def test_the_reconcile_function_may_find_and_create_only_the_schedules_of_the_two_groups(any_synth: Synth) -> None:
    scheduling = [s for s in statements(any_synth) if any(a.startswith("scheduler:") for a in tt.as_list(s["Action"]))]
    (statement,) = scheduling
    assert set(tt.as_list(statement["Action"])) == {"scheduler:GetSchedule", "scheduler:CreateSchedule"}
    resources = sorted(tt.render(r) for r in tt.as_list(statement["Resource"]))
    assert resources == sorted(f"{SCHEDULES_ARN}{name}/*" for name in groups(any_synth).values())


def test_the_reconcile_function_may_pass_only_the_two_scheduler_roles_and_only_to_scheduler(any_synth: Synth) -> None:
    (statement,) = [s for s in statements(any_synth) if "iam:PassRole" in tt.as_list(s["Action"])]
    assert tt.as_list(statement["Action"]) == ["iam:PassRole"]
    roles = sorted(tt.referenced_id(r) for r in tt.as_list(statement["Resource"]))
    assert [role.startswith(("GuardsSchedulerRole", "MaintenanceSchedulerRole")) for role in roles] == [True, True]
    assert roles[0].startswith("Guards") and roles[1].startswith("Maintenance"), roles
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}


def test_the_reconcile_function_queries_and_marks_only_the_schedules_and_guards_partitions(any_synth: Synth) -> None:
    (table,) = [s for s in statements(any_synth) if any(a.startswith("dynamodb:") for a in tt.as_list(s["Action"]))]
    assert set(tt.as_list(table["Action"])) == {"dynamodb:Query", "dynamodb:UpdateItem"}
    assert table["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [SCHEDULE_PK, GUARD_PK]}}
    others = tt.actions(statements(any_synth)) - {
        "dynamodb:Query",
        "dynamodb:UpdateItem",
        "scheduler:GetSchedule",
        "scheduler:CreateSchedule",
        "iam:PassRole",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    assert others == set(), others


def test_the_reconcile_function_recreates_with_the_write_functions_own_targets(any_synth: Synth) -> None:
    _, function = reconcile(any_synth)
    _, write = tt.function_by_handler(any_synth.template, HANDLERS["write"])
    mine, theirs = (f["Properties"]["Environment"]["Variables"] for f in (function, write))
    targets = [name for name in theirs if name.startswith(("ONE_TIME_SCHEDULE_", "GUARD_SCHEDULE_"))]
    assert len(targets) == 12
    assert {name: mine[name] for name in targets} == {name: theirs[name] for name in targets}


def test_overdue_scheduled_work_is_alarmed_on_the_stacks_alarm_topic(variant: Synth) -> None:
    (alarm,) = [
        a["Properties"]
        for a in variant.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "SchedulesOverdue"
    ]
    assert alarm["Namespace"] == f"SingletonFlags/{variant.config.stage}"
    assert (alarm["Statistic"], alarm["Period"], alarm["Threshold"]) == ("Sum", 300, 0)
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    (failures,) = [
        a["Properties"]
        for a in variant.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "ScheduledChangeFailures"
    ]
    assert alarm["AlarmActions"] and alarm["AlarmActions"] == failures["AlarmActions"]  # the stack's alarm topic
    assert tt.referenced_id(alarm["AlarmActions"][0]) in variant.resources("AWS::SNS::Topic")
    # and the reconcile function's own errors are alarmed like every function's
    function_id, _ = reconcile(variant)
    errors = [
        a["Properties"]
        for a in variant.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "Errors"
        and a["Properties"].get("Dimensions") == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
    ]
    assert len(errors) == 1
