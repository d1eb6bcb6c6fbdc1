"""Change events as synthesized: the table's stream, the filtered and bounded stream mapping, the stream function's
exact rights (this stream, this bus, its own queue and logs, GetItem on the audit records alone), the stage's bus,
the alarms, and (variant) the rule forwarding to an encrypted topic only that rule may publish to.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import templates as tt
from tests.support.synth import Synth

pytestmark = pytest.mark.infra

HANDLER = "singleton_flags_service.handlers.change_events.handler"
# Stated here on purpose (not imported from infra): what the stream function may do is what these tests pin down.
STREAM_ACTIONS = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}
QUEUE_ACTIONS = {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
LOG_ACTIONS = {"logs:CreateLogStream", "logs:PutLogEvents"}
FILTERS = [
    {"dynamodb": {"Keys": {"PK": {"S": [partition]}}, "NewImage": {"PK": {"S": [partition]}}}}
    for partition in ("AUDIT#APP", "CHANGE_REQUEST#APP", "SETTINGS#APP")
]


def table_id(synth: Synth) -> str:
    table, _ = synth.one("AWS::DynamoDB::GlobalTable")
    return table


def function(synth: Synth) -> tuple[str, dict[str, Any]]:
    return tt.function_by_handler(synth.template, HANDLER)


def bus(synth: Synth) -> tuple[str, dict[str, Any]]:
    return synth.one("AWS::Events::EventBus")


def failure_queue_id(synth: Synth) -> str:
    (queue,) = [lid for lid in synth.resources("AWS::SQS::Queue") if lid.startswith("ChangeEventsFailureQueue")]
    return queue


def test_the_table_streams_new_images(any_synth: Synth) -> None:
    _, table = any_synth.one("AWS::DynamoDB::GlobalTable")
    assert table["Properties"]["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}


def test_the_stream_mapping_lets_only_new_images_of_its_three_partitions_in_and_bounds_every_failure(
    any_synth: Synth,
) -> None:
    _, mapping = any_synth.one("AWS::Lambda::EventSourceMapping")
    properties = mapping["Properties"]
    function_id, _ = function(any_synth)
    assert properties["FunctionName"] == {"Ref": function_id}
    assert properties["EventSourceArn"] == {"Fn::GetAtt": [table_id(any_synth), "StreamArn"]}
    # audit records (Flags Changed), change requests (their events), the flags item (checked against its record)
    assert [json.loads(pattern["Pattern"]) for pattern in properties["FilterCriteria"]["Filters"]] == FILTERS
    assert properties["StartingPosition"] == "TRIM_HORIZON"
    assert properties["BatchSize"] == 10  # at most one PutEvents request (10 entries) per invocation
    assert properties["BisectBatchOnFunctionError"] is True
    assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert properties["MaximumRetryAttempts"] == 10  # not -1 (until the record expires)
    assert 60 <= properties["MaximumRecordAgeInSeconds"] <= 24 * 3600  # bounded, within the stream's retention
    assert properties["ParallelizationFactor"] == 1  # one batch per shard at a time: stream order
    assert properties["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": [failure_queue_id(any_synth), "Arn"]}}
    }


def test_the_on_failure_queue_is_encrypted_tls_only_and_alarmed(any_synth: Synth) -> None:
    queue_id = failure_queue_id(any_synth)
    queue = any_synth.template["Resources"][queue_id]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True
    assert queue["MessageRetentionPeriod"] == 14 * 24 * 3600
    (policy,) = [
        p
        for p in any_synth.resources("AWS::SQS::QueuePolicy").values()
        if {"Ref": queue_id} in p["Properties"]["Queues"]
    ]
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert (deny["Effect"], deny["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})
    alarm = alarm_on(any_synth, "AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}} in alarm["Dimensions"]
    assert (alarm["Threshold"], alarm["Statistic"]) == (0, "Maximum")


def test_the_stream_function_reads_this_stream_and_puts_to_its_bus_and_nothing_else(any_synth: Synth) -> None:
    function_id, resource = function(any_synth)
    role_id = tt.referenced_id(resource["Properties"]["Role"])
    role = any_synth.template["Resources"][role_id]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
    ]
    statements = tt.role_statements(any_synth.template, role_id)  # also refuses any attached managed policy
    assert all(statement["Effect"] == "Allow" for statement in statements)
    assert tt.actions(statements) == (
        STREAM_ACTIONS | {"dynamodb:GetItem", "events:PutEvents"} | QUEUE_ACTIONS | LOG_ACTIONS
    )
    by_service = {
        prefix: [s for s in statements if any(a.startswith(prefix) for a in tt.as_list(s["Action"]))]
        for prefix in ("dynamodb:", "events:", "sqs:", "logs:")
    }
    (read_audit,) = [s for s in by_service["dynamodb:"] if tt.as_list(s["Action"]) == ["dynamodb:GetItem"]]
    # the audit records and the migration's record (the flags items' writes are checked against them, a mirror
    # through the mapping): never the flags or requests
    assert read_audit["Resource"] == {"Fn::GetAtt": [table_id(any_synth), "Arn"]}
    assert read_audit["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["AUDIT#APP", "MIGRATION#APP"]}
    }
    stream, list_streams = sorted(
        (s for s in by_service["dynamodb:"] if s is not read_audit), key=lambda s: s["Resource"] == "*"
    )
    # the stream's ARN itself: not the table's (its items), not table/*, not *
    assert stream["Resource"] == {"Fn::GetAtt": [table_id(any_synth), "StreamArn"]}
    assert set(tt.as_list(stream["Action"])) == STREAM_ACTIONS - {"dynamodb:ListStreams"}
    # ListStreams has no resource type (the Service Authorization Reference): alone, on "*"
    assert (tt.as_list(list_streams["Action"]), list_streams["Resource"]) == (["dynamodb:ListStreams"], "*")
    bus_id, _ = bus(any_synth)
    (put,) = by_service["events:"]
    assert put["Resource"] == {"Fn::GetAtt": [bus_id, "Arn"]}
    (send,) = by_service["sqs:"]
    assert send["Resource"] == {"Fn::GetAtt": [failure_queue_id(any_synth), "Arn"]}
    (logs,) = by_service["logs:"]
    log_group = tt.referenced_id(resource["Properties"]["LoggingConfig"]["LogGroup"])
    assert logs["Resource"] == {"Fn::GetAtt": [log_group, "Arn"]}
    # and no other role may read the stream or put events
    for holder, statement in tt.all_statements(any_synth.template):
        actions = set(tt.as_list(statement["Action"]))
        if statement["Effect"] == "Allow" and actions & (STREAM_ACTIONS | {"events:PutEvents", "events:*"}):
            assert holder.startswith("FunctionsChangeEventsRole"), (holder, statement)
    assert "TracingConfig" not in resource["Properties"] or resource["Properties"]["TracingConfig"] != {
        "Mode": "Active"
    }
    assert function_id.startswith("FunctionsChangeEventsFunction")


def test_the_stream_function_knows_its_bus_its_stage_and_the_table_of_its_audit_records(any_synth: Synth) -> None:
    _, resource = function(any_synth)
    stage = any_synth.config.stage
    assert resource["Properties"]["Environment"]["Variables"] == {
        "EVENT_BUS_NAME": f"singleton-flags-{stage}",
        "FLAGS_STAGE": stage,
        "TABLE_NAME": {"Ref": table_id(any_synth)},
        "POWERTOOLS_SERVICE_NAME": "singleton-flags",
        "POWERTOOLS_METRICS_NAMESPACE": f"SingletonFlags/{stage}",
    }
    assert resource["Properties"]["Runtime"] == "python3.13"
    assert resource["Properties"]["Timeout"] == 60


def test_each_stage_has_its_own_bus(two_stages: dict[str, Synth]) -> None:
    names = {}
    for stage, synth in two_stages.items():
        _, resource = bus(synth)
        names[stage] = resource["Properties"]["Name"]
    assert names == {stage: f"singleton-flags-{stage}" for stage in two_stages}


def alarm_on(synth: Synth, namespace: str, metric: str) -> dict[str, Any]:
    found = [
        alarm["Properties"]
        for lid, alarm in synth.resources("AWS::CloudWatch::Alarm").items()
        if alarm["Properties"].get("Namespace") == namespace
        and alarm["Properties"].get("MetricName") == metric
        and ("ChangeEvents" in lid or namespace.startswith("SingletonFlags"))
    ]
    assert len(found) == 1, f"{namespace}/{metric}: {len(found)} alarms"
    return found[0]


def test_refused_entries_lag_and_function_errors_are_alarmed(synth: Synth) -> None:
    refused = alarm_on(synth, "SingletonFlags/prod", "ChangeEventsRefused")
    assert (refused["Threshold"], refused["ComparisonOperator"], refused["Statistic"]) == (
        0,
        "GreaterThanThreshold",
        "Sum",
    )
    assert refused["Dimensions"] == [{"Name": "service", "Value": "singleton-flags"}]
    function_id, _ = function(synth)
    lagging = alarm_on(synth, "AWS/Lambda", "IteratorAge")
    assert lagging["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
    assert (lagging["Threshold"], lagging["Statistic"]) == (600_000, "Maximum")  # milliseconds: 10 minutes
    for metric in ("Errors", "Throttles"):
        (alarm,) = [
            a["Properties"]
            for a in synth.resources("AWS::CloudWatch::Alarm").values()
            if a["Properties"].get("MetricName") == metric
            and a["Properties"].get("Dimensions") == [{"Name": "FunctionName", "Value": {"Ref": function_id}}]
        ]
        assert alarm["Threshold"] == 0


def forwarding_rules(synth: Synth) -> list[tuple[str, dict[str, Any]]]:
    """The rules on the stage's bus (the guards' alarm rule is on the default bus: test_infra_guards.py)."""
    return [
        (lid, rule)
        for lid, rule in synth.resources("AWS::Events::Rule").items()
        if "EventBusName" in rule["Properties"]
    ]


def test_no_forwarding_rule_or_topic_without_the_option(synth: Synth) -> None:
    assert synth.config.change_events.sns_topic is False
    assert not forwarding_rules(synth)
    assert not synth.resources("AWS::SNS::Topic")
    assert "ChangeEventsTopicArn" not in synth.template["Outputs"]


def test_the_forwarding_rule_publishes_to_an_encrypted_topic_only_it_may_publish_to(variant: Synth) -> None:
    assert variant.config.change_events.sns_topic is True
    bus_id, _ = bus(variant)
    (rule_id, rule), *others = forwarding_rules(variant)
    assert not others
    properties = rule["Properties"]
    assert properties["EventBusName"] == {"Ref": bus_id}
    assert properties["EventPattern"] == {
        "source": ["singleton-flags"],
        "detail-type": ["Flags Changed", "Flag Change Request Updated"],
    }
    (target,) = properties["Targets"]
    assert "RoleArn" not in target  # an SNS target is authorised by the topic's own policy
    topic_id = tt.referenced_id(target["Arn"])
    topic = variant.template["Resources"][topic_id]
    assert topic["Type"] == "AWS::SNS::Topic"
    # The rule's ARN, as the policies name it: arn:...:rule/<bus>/<rule name>
    rule_arn = f"arn:<AWS::Partition>:events:<AWS::Region>:<AWS::AccountId>:rule/<{bus_id}>/{properties['Name']}"

    (policy,) = [
        p for p in variant.resources("AWS::SNS::TopicPolicy").values() if {"Ref": topic_id} in p["Properties"]["Topics"]
    ]
    allows = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    (allow,) = allows
    assert allow["Principal"] == {"Service": "events.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert allow["Resource"] == {"Ref": topic_id}
    ((operator, condition),) = allow["Condition"].items()
    assert operator == "ArnEquals"
    assert {key: tt.render(value) for key, value in condition.items()} == {"aws:SourceArn": rule_arn}

    # Encrypted with a key of its own whose policy lets EventBridge use it, for this rule only
    key_id = tt.referenced_id(topic["Properties"]["KmsMasterKeyId"])
    key = variant.template["Resources"][key_id]
    assert key["Properties"]["EnableKeyRotation"] is True
    (for_events,) = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if s.get("Principal") == {"Service": "events.amazonaws.com"}
    ]
    assert set(tt.as_list(for_events["Action"])) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    ((operator, condition),) = for_events["Condition"].items()
    assert operator == "ArnEquals"
    assert {key: tt.render(value) for key, value in condition.items()} == {"aws:SourceArn": rule_arn}
    assert variant.template["Outputs"]["ChangeEventsTopicArn"]["Value"] == {"Ref": topic_id}
    assert rule_id.startswith("ChangeEventsForwardRule")


def test_the_bus_name_is_an_output(any_synth: Synth) -> None:
    bus_id, _ = bus(any_synth)
    assert any_synth.template["Outputs"]["EventBusName"]["Value"] == {"Ref": bus_id}


def test_an_event_the_forwarding_rule_could_not_deliver_is_dead_lettered_and_alarmed(variant: Synth) -> None:
    """EventBridge drops an event its retries did not deliver unless the target has a dead-letter queue."""
    bus_id, _ = bus(variant)
    ((_, rule),) = forwarding_rules(variant)
    (target,) = rule["Properties"]["Targets"]
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 185, "MaximumEventAgeInSeconds": 86400}
    queue_id = tt.referenced_id(target["DeadLetterConfig"]["Arn"])
    assert target["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    assert queue_id.startswith("ChangeEventsForwardDeadLetterQueue")
    queue = variant.template["Resources"][queue_id]
    assert queue["Type"] == "AWS::SQS::Queue"
    assert queue["Properties"]["SqsManagedSseEnabled"] is True
    name = rule["Properties"]["Name"]
    rule_arn = f"arn:<AWS::Partition>:events:<AWS::Region>:<AWS::AccountId>:rule/<{bus_id}>/{name}"
    (policy,) = [
        p for p in variant.resources("AWS::SQS::QueuePolicy").values() if {"Ref": queue_id} in p["Properties"]["Queues"]
    ]
    (allow,) = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "events.amazonaws.com"}
    assert allow["Action"] == "sqs:SendMessage"
    assert allow["Resource"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    ((operator, condition),) = allow["Condition"].items()
    assert operator == "ArnEquals"
    assert {key: tt.render(value) for key, value in condition.items()} == {"aws:SourceArn": rule_arn}
    (alarm,) = [
        a["Properties"]
        for a in variant.resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "ApproximateNumberOfMessagesVisible"
        and a["Properties"].get("Dimensions")
        == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}]
    ]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
