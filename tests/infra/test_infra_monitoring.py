"""Alarms, the optional SNS topic and the dashboard, as synthesized."""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags_service.contract import HANDLERS
from tests.support import templates as tt
from tests.support.synth import Synth

pytestmark = pytest.mark.infra

SERVICE = {"Name": "service", "Value": "singleton-flags"}
ALARM_ARNS = "arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:*"


def namespace(synth: Synth) -> str:
    return f"SingletonFlags/{synth.config.stage}"


def alarms(synth: Synth) -> list[dict[str, Any]]:
    return [alarm["Properties"] for alarm in synth.resources("AWS::CloudWatch::Alarm").values()]


def dimensions(alarm: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(alarm.get("Dimensions", []), key=lambda d: d["Name"])


def find(synth: Synth, namespace: str, metric: str, **dimension_values: Any) -> dict[str, Any]:
    """The one alarm on ``namespace/metric`` whose dimensions include ``dimension_values``."""
    found = [
        alarm
        for alarm in alarms(synth)
        if alarm.get("Namespace") == namespace
        and alarm.get("MetricName") == metric
        and all({"Name": k, "Value": v} in alarm.get("Dimensions", []) for k, v in dimension_values.items())
    ]
    assert len(found) == 1, f"{namespace}/{metric} {dimension_values}: {len(found)} alarms"
    return found[0]


def assert_above_zero(
    alarm: dict[str, Any], *, statistic: str = "Sum", evaluation: int = 1, datapoints: int = 1, period: int = 300
) -> None:
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Threshold"] == 0
    assert alarm["Statistic"] == statistic
    assert alarm["Period"] == period
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (evaluation, datapoints)
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmDescription"]


def test_default_reads_alarm_on_the_first_fallback(synth: Synth) -> None:
    alarm = find(synth, namespace(synth), "Reads", reason="DEFAULT")
    assert dimensions(alarm) == [{"Name": "reason", "Value": "DEFAULT"}, SERVICE]
    assert_above_zero(alarm, period=60)
    # the operator is told how to bring a missing item back
    assert "flagctl restore" in alarm["AlarmDescription"]


def test_stale_reads_alarm_when_sustained(synth: Synth) -> None:
    alarm = find(synth, namespace(synth), "Reads", reason="STALE")
    assert dimensions(alarm) == [{"Name": "reason", "Value": "STALE"}, SERVICE]
    assert_above_zero(alarm, period=60, evaluation=10, datapoints=5)


def test_api_5xx_alarm(synth: Synth) -> None:
    ((stage_id, _),) = synth.resources("AWS::ApiGateway::Stage").items()
    alarm = find(synth, "AWS/ApiGateway", "5XXError")
    assert dimensions(alarm) == [
        {"Name": "ApiName", "Value": f"singleton-flags-{synth.config.stage}"},
        {"Name": "Stage", "Value": {"Ref": stage_id}},
    ]
    assert_above_zero(alarm)


@pytest.mark.parametrize("metric", ["Errors", "Throttles"])
@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_function_alarms(synth: Synth, name: str, metric: str) -> None:
    function_id, _ = tt.function_by_handler(synth.template, HANDLERS[name])
    alarm = find(synth, "AWS/Lambda", metric, FunctionName={"Ref": function_id})
    assert_above_zero(alarm)


@pytest.mark.parametrize("queue", ["DeadLetterQueue", "FailureQueue"])
def test_maintenance_queue_alarms(synth: Synth, queue: str) -> None:
    # the schedules' dead-letter queue (undelivered) and the function's on-failure destination (failed)
    (queue_id,) = [lid for lid in synth.resources("AWS::SQS::Queue") if lid.startswith(f"Maintenance{queue}")]
    alarm = find(
        synth, "AWS/SQS", "ApproximateNumberOfMessagesVisible", QueueName={"Fn::GetAtt": [queue_id, "QueueName"]}
    )
    assert_above_zero(alarm, statistic="Maximum")


def test_window_failures_alarm(synth: Synth) -> None:
    # late, rejected or impossible deliveries: the function returns (no retry helps) and counts WindowFailures
    alarm = find(synth, namespace(synth), "WindowFailures")
    assert dimensions(alarm) == [SERVICE]
    assert_above_zero(alarm)


def test_scheduled_change_failures_alarm(synth: Synth) -> None:
    # a scheduled change no longer valid when due, an unknown id, a payload that is no scheduled change's
    alarm = find(synth, namespace(synth), "ScheduledChangeFailures")
    assert dimensions(alarm) == [SERVICE]
    assert_above_zero(alarm)


def test_no_topic_without_alarm_email(synth: Synth) -> None:
    assert synth.config.alarm_email == ""
    assert not synth.resources("AWS::SNS::Topic")
    assert all(not alarm.get("AlarmActions") for alarm in alarms(synth))


def monitoring_one(synth: Synth, resource_type: str) -> tuple[str, dict[str, Any]]:
    """The one resource of ``resource_type`` the Monitoring construct made (change events may add their own)."""
    ((found, resource),) = [
        (lid, r) for lid, r in synth.resources(resource_type).items() if lid.startswith("Monitoring")
    ]
    return found, resource


def test_alarm_email_adds_an_encrypted_topic_as_every_alarm_action(variant: Synth) -> None:
    topic_id, topic = monitoring_one(variant, "AWS::SNS::Topic")
    key_id, key = monitoring_one(variant, "AWS::KMS::Key")
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert key["Properties"]["EnableKeyRotation"] is True
    # CloudWatch may use the key only for this account's alarms in this region
    (cloudwatch,) = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert sorted(tt.as_list(cloudwatch["Action"])) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert_alarms_of_this_account(cloudwatch)
    (subscription,) = variant.resources("AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "ops@example.com"
    assert subscription["Properties"]["TopicArn"] == {"Ref": topic_id}
    # A topic policy replaces SNS's default one: it must itself allow CloudWatch to publish, and keep TLS only
    _, topic_policy = monitoring_one(variant, "AWS::SNS::TopicPolicy")
    statements = topic_policy["Properties"]["PolicyDocument"]["Statement"]
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    (publish,) = [s for s in statements if s["Effect"] == "Allow"]
    assert publish["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert publish["Action"] == "sns:Publish"
    assert publish["Resource"] == {"Ref": topic_id}
    assert_alarms_of_this_account(publish)
    for alarm in alarms(variant):
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]


def assert_alarms_of_this_account(statement: dict[str, Any]) -> None:
    condition = statement["Condition"]
    assert set(condition) == {"StringEquals", "ArnLike"}
    assert condition["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert {key: tt.render(value) for key, value in condition["ArnLike"].items()} == {"aws:SourceArn": ALARM_ARNS}


def test_dashboard_shows_reads_refreshes_conflicts_changes_windows_latency(synth: Synth) -> None:
    _, dashboard = synth.one("AWS::CloudWatch::Dashboard")
    body = json.loads(tt.render(dashboard["Properties"]["DashboardBody"]))
    titles = {widget["properties"].get("title") for widget in body["widgets"]}
    assert {
        "Reads by reason",
        "Cache refreshes",
        "Changes and conflicts",
        "Maintenance windows",
        "API latency",
        "Refusals by error code",
        "Alarms",
    } <= titles
    metrics = [line for widget in body["widgets"] for line in widget["properties"].get("metrics", [])]
    flags_metrics = {line[1] for line in metrics if line[0] == namespace(synth)}
    assert flags_metrics >= {
        "Reads",
        "CacheRefreshes",
        "CacheRefreshFailures",
        "WriteConflicts",
        "WriteRetries",
        "ChangesApplied",
        "WindowStarts",
        "WindowEnds",
        "WindowSkips",
        "WindowFailures",
    }
    reasons = {line[line.index("reason") + 1] for line in metrics if line[:2] == [namespace(synth), "Reads"]}
    assert reasons == {"STATIC", "CACHED", "STALE", "DEFAULT"}
    latency = [line for line in metrics if "Latency" in line]
    assert {line[-1]["stat"] for line in latency} == {"p50", "p99"}
    assert any("SEARCH(" in json.dumps(line) and "Refusals" in json.dumps(line) for line in metrics)
