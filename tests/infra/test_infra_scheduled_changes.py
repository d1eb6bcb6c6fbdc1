"""Scheduled changes as synthesized: the write function may create and delete the one-time schedules of this
stack's group and pass them the Scheduler role, nothing more; they deliver as the maintenance schedules do."""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags_service.contract import HANDLERS
from tests.support import templates as tt
from tests.support.synth import Synth, cdk_json_context, synthesize

pytestmark = pytest.mark.infra


@pytest.fixture(scope="module")
def no_windows(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The stack of a deployment that declares no maintenance window."""
    context = cdk_json_context()
    context["singleton-flags"] = {**context["singleton-flags"], "maintenance_windows": []}
    return synthesize(context, tmp_path_factory.mktemp("synth-no-windows"))


def function(synth: Synth, name: str) -> tuple[str, dict[str, Any]]:
    return tt.function_by_handler(synth.template, HANDLERS[name])


def scheduler_role_id(synth: Synth) -> str:
    """The maintenance schedules' role (the guards' close schedules have their own: test_infra_guards.py)."""
    (role_id,) = [
        lid
        for lid, role in synth.resources("AWS::IAM::Role").items()
        if role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"].get("Service")
        == "scheduler.amazonaws.com"
        and lid.startswith("Maintenance")
    ]
    return role_id


def dead_letter_queue_id(synth: Synth) -> str:
    (queue_id,) = [lid for lid in synth.resources("AWS::SQS::Queue") if lid.startswith("MaintenanceDeadLetterQueue")]
    return queue_id


def test_the_write_function_may_create_and_delete_only_the_schedules_of_the_stacks_group(any_synth: Synth) -> None:
    _, write = function(any_synth, "write")
    statements = tt.role_statements(any_synth.template, tt.referenced_id(write["Properties"]["Role"]))
    scheduling = [s for s in statements if any(a.startswith("scheduler:") for a in tt.as_list(s["Action"]))]
    ((_, group),) = [
        (lid, g)
        for lid, g in any_synth.resources("AWS::Scheduler::ScheduleGroup").items()
        if lid.startswith("Maintenance")
    ]
    # one statement for this group; the only other is the guards' CreateSchedule in their own group (test_infra_guards)
    (statement,) = [s for s in scheduling if group["Properties"]["Name"] in tt.render(s["Resource"])]
    assert len(scheduling) == 2
    assert set(tt.as_list(statement["Action"])) == {"scheduler:CreateSchedule", "scheduler:DeleteSchedule"}
    assert "Condition" not in statement and statement["Effect"] == "Allow"
    (resource,) = tt.as_list(statement["Resource"])
    rendered = tt.render(resource)
    prefix = "arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/"
    assert rendered.startswith(prefix) and rendered.endswith("/*"), rendered
    group_name = rendered.removeprefix(prefix).removesuffix("/*")
    assert group_name == group["Properties"]["Name"]  # this stack's one group, every schedule in it, no other
    environment = write["Properties"]["Environment"]["Variables"]
    assert environment["ONE_TIME_SCHEDULE_GROUP"] == group_name
    # and no function other than the write function may touch Scheduler at all
    for name in ("read", "maintenance", "guard"):
        _, other = function(any_synth, name)
        actions = tt.actions(tt.role_statements(any_synth.template, tt.referenced_id(other["Properties"]["Role"])))
        assert not {a for a in actions if a.startswith(("scheduler:", "iam:"))}, name


def test_the_write_function_may_pass_only_the_scheduler_role_and_only_to_scheduler(any_synth: Synth) -> None:
    _, write = function(any_synth, "write")
    statements = tt.role_statements(any_synth.template, tt.referenced_id(write["Properties"]["Role"]))
    passing = [s for s in statements if "iam:PassRole" in tt.as_list(s["Action"])]
    # this role's statement; the only other passes the guards' close schedules' role (test_infra_guards.py)
    (statement,) = [s for s in passing if s["Resource"] == {"Fn::GetAtt": [scheduler_role_id(any_synth), "Arn"]}]
    assert len(passing) == 2
    assert tt.as_list(statement["Action"]) == ["iam:PassRole"]
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}


def test_one_time_schedules_deliver_to_the_maintenance_function_with_the_maintenance_schedules_settings(
    any_synth: Synth,
) -> None:
    maintenance_id, _ = function(any_synth, "maintenance")
    _, write = function(any_synth, "write")
    environment = write["Properties"]["Environment"]["Variables"]
    assert environment["ONE_TIME_SCHEDULE_TARGET_ARN"] == {"Fn::GetAtt": [maintenance_id, "Arn"]}
    assert environment["ONE_TIME_SCHEDULE_ROLE_ARN"] == {"Fn::GetAtt": [scheduler_role_id(any_synth), "Arn"]}
    assert environment["ONE_TIME_SCHEDULE_DLQ_ARN"] == {"Fn::GetAtt": [dead_letter_queue_id(any_synth), "Arn"]}
    assert (
        environment["ONE_TIME_SCHEDULE_RETRY_ATTEMPTS"],
        environment["ONE_TIME_SCHEDULE_MAX_EVENT_AGE_SECONDS"],
    ) == (
        "3",
        "3600",
    )


def test_the_scheduler_role_may_invoke_the_target_and_dead_letter_without_any_window(no_windows: Synth) -> None:
    # Given a deployment with no maintenance window (no schedule grants the role anything)
    assert not [lid for lid in no_windows.resources("AWS::Scheduler::Schedule") if lid.startswith("Maintenance")]
    maintenance_id, _ = function(no_windows, "maintenance")
    statements = tt.role_statements(no_windows.template, scheduler_role_id(no_windows))
    assert tt.grants(statements) == {
        ("lambda:InvokeFunction", f"<{maintenance_id}.Arn>"),
        ("lambda:InvokeFunction", f"<{maintenance_id}.Arn>:*"),
        ("sqs:SendMessage", f"<{dead_letter_queue_id(no_windows)}.Arn>"),
    }
