"""Maintenance windows as synthesized: a start/end schedule pair per configured window, delivered reliably."""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags_infra.config import schedule_payload
from singleton_flags_service.contract import HANDLERS
from tests.support import templates as tt
from tests.support.synth import Synth

pytestmark = pytest.mark.infra

EXPECTED = {
    "cdk.json": {
        ("weekly-patching", "start"): ("cron(0 3 ? * SUN *)", "Europe/Paris"),
        ("weekly-patching", "end"): ("cron(0 4 ? * SUN *)", "Europe/Paris"),
    },
    "variant": {
        ("weekly-patching", "start"): ("cron(0 3 ? * SUN *)", "Europe/Paris"),
        ("weekly-patching", "end"): ("cron(0 4 ? * SUN *)", "Europe/Paris"),
        ("nightly-reindex", "start"): ("cron(30 23 * * ? *)", "America/New_York"),
        ("nightly-reindex", "end"): ("cron(15 1 * * ? *)", "America/New_York"),
    },
}

START_EVENT_AGE = {"weekly-patching": 1800, "nightly-reindex": 3150}


def queue(synth: Synth, name: str) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (lid, q) for lid, q in synth.resources("AWS::SQS::Queue").items() if lid.startswith(f"Maintenance{name}")
    ]
    return found


def maintenance_group(synth: Synth) -> list[tuple[str, dict[str, Any]]]:
    """The maintenance schedules' group (the guards' close schedules have their own: test_infra_guards.py)."""
    groups = synth.resources("AWS::Scheduler::ScheduleGroup").items()
    return [(lid, group) for lid, group in groups if lid.startswith("Maintenance")]


def window_schedules(synth: Synth) -> dict[str, dict[str, Any]]:
    """The maintenance windows' schedules (the reconciler's recurring schedule is not a window's)."""
    return {lid: s for lid, s in synth.resources("AWS::Scheduler::Schedule").items() if lid.startswith("Maintenance")}


def schedules(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    """Schedules keyed by the payload they deliver."""
    found = {}
    for schedule in window_schedules(synth).values():
        payload = json.loads(schedule["Properties"]["Target"]["Input"])
        key = (payload["window"], payload["action"])
        assert key not in found, f"two schedules deliver {payload}"
        found[key] = schedule["Properties"]
    return found


@pytest.mark.parametrize("which", ["cdk.json", "variant"])
def test_a_schedule_pair_per_window(which: str, request: pytest.FixtureRequest) -> None:
    synth: Synth = request.getfixturevalue("synth" if which == "cdk.json" else "variant")
    found = schedules(synth)
    assert set(found) == set(EXPECTED[which])
    ((group_id, group),) = maintenance_group(synth)
    assert group["DeletionPolicy"] == "Delete"  # a retained group's fixed name would block a re-created stack
    maintenance_id, _ = tt.function_by_handler(synth.template, HANDLERS["maintenance"])
    queue_id, _ = queue(synth, "DeadLetterQueue")
    for lid, schedule in window_schedules(synth).items():
        assert group_id in schedule["DependsOn"], lid
    for (window, action), properties in found.items():
        expression, timezone = EXPECTED[which][(window, action)]
        assert properties["ScheduleExpression"] == expression
        assert properties["ScheduleExpressionTimezone"] == timezone
        assert properties["FlexibleTimeWindow"] == {"Mode": "OFF"}
        assert properties["State"] == "ENABLED"
        assert properties["GroupName"] == group["Properties"]["Name"]
        target = properties["Target"]
        assert json.loads(target["Input"]) == schedule_payload(window, action)
        # Scheduler substitutes its context attribute: the function can tell a late delivery
        assert json.loads(target["Input"]) == {
            "action": action,
            "window": window,
            "scheduled_time": "<aws.scheduler.scheduled-time>",
        }
        assert target["Arn"] == {"Fn::GetAtt": [maintenance_id, "Arn"]}
        # A start may not be retried past half its window (it would reopen maintenance after the window
        # ended): 60 min -> 30 min, 105 min -> 52.5 min. An end may be retried for an hour.
        age = START_EVENT_AGE[window] if action == "start" else 3600
        assert target["RetryPolicy"] == {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": age}
        assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [queue_id, "Arn"]}}


@pytest.mark.parametrize("name", ["DeadLetterQueue", "FailureQueue"])
def test_maintenance_queues_are_encrypted_ssl_only_and_kept_14_days(synth: Synth, name: str) -> None:
    queue_id, properties = queue(synth, name)
    assert properties["Properties"]["SqsManagedSseEnabled"] is True
    assert properties["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    (policy,) = [
        p for p in synth.resources("AWS::SQS::QueuePolicy").values() if p["Properties"]["Queues"] == [{"Ref": queue_id}]
    ]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_function_errors_are_retried_a_bounded_time_then_sent_to_the_failure_queue(synth: Synth) -> None:
    # Scheduler counts a delivery done once Lambda accepts it: a function error is Lambda's to retry and keep
    maintenance_id, _ = tt.function_by_handler(synth.template, HANDLERS["maintenance"])
    queue_id, _ = queue(synth, "FailureQueue")
    (config,) = [
        c["Properties"]
        for c in synth.resources("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": maintenance_id}
    ]
    assert config["Qualifier"] == "$LATEST"  # what the schedules invoke (the unqualified ARN)
    assert config["MaximumRetryAttempts"] == 2
    assert config["MaximumEventAgeInSeconds"] == 3600
    assert config["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [queue_id, "Arn"]}}}


def test_scheduler_role_invokes_only_the_maintenance_function(synth: Synth) -> None:
    (role_id,) = {tt.referenced_id(p["Target"]["RoleArn"]) for p in schedules(synth).values()}
    role = synth.template["Resources"][role_id]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    ((group_id, _),) = maintenance_group(synth)
    assert trust["Condition"] == {
        "StringEquals": {
            "aws:SourceAccount": {"Ref": "AWS::AccountId"},
            "aws:SourceArn": {"Fn::GetAtt": [group_id, "Arn"]},
        }
    }
    statements = tt.role_statements(synth.template, role_id)
    assert tt.actions(statements) == {"lambda:InvokeFunction", "sqs:SendMessage"}
    maintenance_id, _ = tt.function_by_handler(synth.template, HANDLERS["maintenance"])
    queue_id, _ = queue(synth, "DeadLetterQueue")
    for statement in statements:
        rendered = {tt.render(resource) for resource in tt.as_list(statement["Resource"])}
        if statement["Action"] == "lambda:InvokeFunction":
            assert rendered == {f"<{maintenance_id}.Arn>", f"<{maintenance_id}.Arn>:*"}
        else:
            assert rendered == {f"<{queue_id}.Arn>"}
