"""Change events: the stage's event bus, the table's stream wired to the change-events function, its
on-failure queue, and (``change_events.sns_topic``) a rule forwarding the events to an encrypted SNS topic.

The function reads the stream through an event source mapping whose filters (``singleton_flags_service.events.
STREAM_FILTERS``) let only new images of the audit records, the change requests and the flags item invoke it.
Failures are bounded: a function error bisects the batch, a partial batch response (``ReportBatchItemFailures``)
retries from the first record not published or checked, at most ``STREAM_RETRY_ATTEMPTS`` times and
``STREAM_MAX_RECORD_AGE_SECONDS`` after the write; then the batch's description (shard, sequence numbers; the
audit records stay in the table) goes to the on-failure queue, alarmed in infra/monitoring.py.

The forwarding rule's target retries an undelivered event (``FORWARD_RETRY_ATTEMPTS`` times, for
``FORWARD_MAX_EVENT_AGE_SECONDS``), then sends it to the rule's own dead-letter queue, alarmed in
infra/monitoring.py: EventBridge drops an event it could not deliver unless its target has a dead-letter queue.

The function's role: read this table's stream and PutEvents to this bus; GetItem on the audit partition only
(infra/functions.py: the flags item's writes are checked against their audit records); nothing else but its own
log group and the on-failure queue.
"""

from __future__ import annotations

import jsii
from aws_cdk import (
    Duration,
    Stack,
    aws_dynamodb as dynamodb,
    aws_events as events,
    aws_iam as iam,
    aws_kms as kms,
    aws_lambda as lambda_,
    aws_lambda_event_sources as sources,
    aws_sns as sns,
    aws_sqs as sqs,
)
from aws_cdk.interfaces import aws_events as events_refs
from constructs import Construct

from singleton_flags_service.events import DETAIL_TYPES, SOURCE, STREAM_FILTERS

from . import constants
from .config import FlagsConfig
from .nag import acknowledge
from .queues import last_stop_queue

# What reading a stream takes (DynamoDB's policy for a Lambda function reading a table's stream), on this
# table's stream only.
STREAM_READ_ACTIONS = (
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
)
# ListStreams has no resource type (the Service Authorization Reference lists none for it): a statement naming the
# stream's ARN never matches it. Its own statement, on "*"; it lists stream ARNs, never reads a record.
LIST_STREAMS_ACTION = "dynamodb:ListStreams"
FORWARD_RULE_SUFFIX = "to-sns"


def forward_rule_name(stage: str) -> str:
    """The rule forwarding a stage's change events to its topic: named, so its ARN is known before it exists
    (the topic's key policy names the rule, and the rule names the topic)."""
    return f"{constants.event_bus_name(stage)}-{FORWARD_RULE_SUFFIX}"


@jsii.implements(events.IRuleTarget)
class _TopicTarget:
    """The topic as a rule target, without CDK's own topic policy: ours is conditioned on the rule's ARN. Bounded
    retries, then the dead-letter queue (whose policy, also conditioned on the rule's ARN, is the caller's)."""

    def __init__(self, topic: sns.ITopic, dead_letter_queue: sqs.IQueue) -> None:
        self._topic = topic
        self._dead_letter_queue = dead_letter_queue

    def bind(self, rule: events_refs.IRuleRef, id: str | None = None) -> events.RuleTargetConfig:  # noqa: A002 - jsii's name
        return events.RuleTargetConfig(
            arn=self._topic.topic_arn,
            dead_letter_config=events.CfnRule.DeadLetterConfigProperty(arn=self._dead_letter_queue.queue_arn),
            retry_policy=events.CfnRule.RetryPolicyProperty(
                maximum_retry_attempts=constants.FORWARD_RETRY_ATTEMPTS,
                maximum_event_age_in_seconds=constants.FORWARD_MAX_EVENT_AGE_SECONDS,
            ),
        )


class ChangeEvents(Construct):
    """Bus, stream mapping, on-failure queue, grants; optionally the forwarding rule and its topic."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FlagsConfig,
        table: dynamodb.TableV2,
        function: lambda_.Function,
    ) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self.function = function
        self.bus = events.EventBus(self, "Bus", event_bus_name=constants.event_bus_name(config.stage))
        self.failure_queue = last_stop_queue(
            self,
            "FailureQueue",
            "the on-failure destination of the change events' stream mapping (Lambda event source mapping "
            "DestinationConfig",
        )
        stream_arn = table.table_stream_arn
        if stream_arn is None:
            raise ValueError("the flags table has no stream: change events need its NEW_IMAGE stream")
        self._grant(function, stream_arn)
        self.mapping = self._build_mapping(function, stream_arn)
        self.rule: events.Rule | None = None
        self.topic: sns.Topic | None = None
        self.forward_dead_letter_queue: sqs.Queue | None = None
        if config.change_events.sns_topic:
            self.rule, self.topic = self._build_forwarding()

    def _grant(self, function: lambda_.Function, stream_arn: str) -> None:
        role = function.role
        if role is None:
            raise ValueError("the change-events function has no role")
        role.add_to_principal_policy(iam.PolicyStatement(actions=list(STREAM_READ_ACTIONS), resources=[stream_arn]))
        role.add_to_principal_policy(iam.PolicyStatement(actions=[LIST_STREAMS_ACTION], resources=["*"]))
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            "dynamodb:ListStreams has no resource type (Service Authorization Reference, Amazon DynamoDB): it is "
            "authorised on '*' only, in its own statement; it lists stream ARNs and reads no record.",
            finding="Resource::*",
        )
        put = iam.PolicyStatement(actions=["events:PutEvents"], resources=[self.bus.event_bus_arn])
        role.add_to_principal_policy(put)

    def _build_mapping(self, function: lambda_.Function, stream_arn: str) -> lambda_.EventSourceMapping:
        mapping = lambda_.EventSourceMapping(
            self,
            "StreamMapping",
            target=function,
            event_source_arn=stream_arn,
            # From the oldest record the stream holds: a new mapping also publishes what was written while it
            # was being created (the first deploy's seed). Consumers drop what they saw by `version`.
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=constants.STREAM_BATCH_SIZE,
            parallelization_factor=1,  # one batch per shard at a time: records in stream order
            bisect_batch_on_error=True,
            report_batch_item_failures=True,
            retry_attempts=constants.STREAM_RETRY_ATTEMPTS,
            max_record_age=Duration.seconds(constants.STREAM_MAX_RECORD_AGE_SECONDS),
            on_failure=sources.SqsDlq(self.failure_queue),
            filters=[lambda_.FilterCriteria.filter(stream_filter) for stream_filter in STREAM_FILTERS],
        )
        mapping.node.add_dependency(function.role)  # the stream grant exists before Lambda polls
        return mapping

    def _build_forwarding(self) -> tuple[events.Rule, sns.Topic]:
        stage = self._config.stage
        rule_name = forward_rule_name(stage)
        # A rule on a custom bus is arn:<partition>:events:<region>:<account>:rule/<bus>/<rule>.
        rule_arn = Stack.of(self).format_arn(
            service="events", resource="rule", resource_name=f"{self.bus.event_bus_name}/{rule_name}"
        )

        def for_this_rule(sid: str, actions: list[str], resource: str) -> iam.PolicyStatement:
            """What EventBridge may do on a resource of ours, when delivering for this rule only."""
            return iam.PolicyStatement(
                sid=sid,
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=actions,
                resources=[resource],
                conditions={"ArnEquals": {"aws:SourceArn": rule_arn}},
            )

        key = kms.Key(
            self,
            "TopicKey",
            description=f"singleton-flags change events topic ({stage})",
            enable_key_rotation=True,
        )
        # An encrypted topic: EventBridge publishes only if the key lets it generate and decrypt data keys.
        # (in a key policy, "*" is this key)
        key.add_to_resource_policy(
            for_this_rule("EventBridgeRulePublish", ["kms:Decrypt", "kms:GenerateDataKey*"], "*")
        )
        topic = sns.Topic(
            self,
            "Topic",
            display_name=f"singleton-flags change events ({stage})",
            master_key=key,
            enforce_ssl=True,
        )
        topic.add_to_resource_policy(for_this_rule("EventBridgeRulePublish", ["sns:Publish"], topic.topic_arn))
        # EventBridge drops an event its retries did not deliver, unless the target has a dead-letter queue; the
        # queue's policy lets EventBridge send to it for this rule only.
        dead_letters = last_stop_queue(
            self, "ForwardDeadLetterQueue", "the dead-letter queue of the change events' forwarding rule target"
        )
        dead_letters.add_to_resource_policy(
            for_this_rule("EventBridgeRuleDeadLetters", ["sqs:SendMessage"], dead_letters.queue_arn)
        )
        self.forward_dead_letter_queue = dead_letters
        rule = events.Rule(
            self,
            "ForwardRule",
            rule_name=rule_name,
            description=f"Every change event of stage {stage} (versions, change requests), to the change events topic",
            event_bus=self.bus,
            event_pattern=events.EventPattern(source=[SOURCE], detail_type=list(DETAIL_TYPES)),
            targets=[_TopicTarget(topic, dead_letters)],
        )
        return rule, topic
