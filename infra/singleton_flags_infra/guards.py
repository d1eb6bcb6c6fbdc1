"""Guarded changes: the ONE EventBridge rule that hands alarms going into ALARM to the guard function, the guard
function's asynchronous invocation settings, the schedule group its bakes' ends are scheduled in, and what the
write function may do to create those schedules and check a guard's alarms.

Failure paths, each alarmed (infra/monitoring.py):

- an alarm event EventBridge could not deliver (the function throttled or unreachable): the rule target's
  retries, then the rule's dead-letter queue;
- a close schedule Scheduler could not deliver: its retries, then the schedules' dead-letter queue;
- a function error on either (DynamoDB or CloudWatch unavailable): Lambda's asynchronous retries (twice, within
  an hour), then the function's on-failure queue;
- an outcome no retry can fix, or a skipped guard: the function returns and counts ``GuardFailures`` /
  ``GuardSkips``.

CloudWatch: ``cloudwatch:DescribeAlarms`` is the only CloudWatch action either function gets, on ``*``: the action
takes no resource-level permission for composite alarms (docs/decisions.md).
"""

from __future__ import annotations

from aws_cdk import (
    Duration,
    RemovalPolicy,
    aws_events as events,
    aws_events_targets as events_targets,
    aws_iam as iam,
    aws_lambda as lambda_,
    aws_lambda_destinations as destinations,
    aws_scheduler as scheduler,
    aws_sqs as sqs,
)
from constructs import Construct

from singleton_flags_service.contract import GUARD_CLOSE_TARGET, OneTimeTarget
from singleton_flags_service.guards.alarms import ALARM
from singleton_flags_service.guards.guarding import ALARM_DETAIL_TYPE, ALARM_SOURCE

from . import constants
from .config import FlagsConfig
from .maintenance import scheduler_role
from .nag import acknowledge
from .queues import last_stop_queue
from .scheduled_changes import schedules_arn

DESCRIBE_ALARMS = "cloudwatch:DescribeAlarms"


def alarm_event_pattern(prefix: str) -> events.EventPattern:
    """Alarm state changes to ALARM of the alarms named ``prefix...`` (EventBridge content filtering, ``prefix``)."""
    return events.EventPattern(
        source=[ALARM_SOURCE],
        detail_type=[ALARM_DETAIL_TYPE],
        detail={"alarmName": [{"prefix": prefix}], "state": {"value": [ALARM]}},
    )


class Guards(Construct):
    """The alarm rule, the guard function's queues and async settings, the close schedules' group and role."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FlagsConfig,
        guard_function: lambda_.Function,
        write_function: lambda_.Function,
    ) -> None:
        super().__init__(scope, construct_id)
        self._guard = guard_function
        self._write = write_function
        self.rule_dead_letter_queue = last_stop_queue(
            self, "RuleDeadLetterQueue", "the dead-letter queue of the guards' alarm rule target (EventBridge DLQ"
        )
        self.schedule_dead_letter_queue = last_stop_queue(
            self, "ScheduleDeadLetterQueue", "the dead-letter queue of the guards' close schedules (Scheduler DLQ"
        )
        self.failure_queue = last_stop_queue(
            self,
            "FailureQueue",
            "the on-failure destination of the guard function's asynchronous invocations (Lambda EventInvokeConfig",
        )
        guard_function.configure_async_invoke(
            retry_attempts=constants.ASYNC_RETRY_ATTEMPTS,
            max_event_age=Duration.seconds(constants.ASYNC_MAX_EVENT_AGE_SECONDS),
            on_failure=destinations.SqsDestination(self.failure_queue),
        )
        self.rule = self._build_rule(config.guard_prefix)
        # Its name is derived from the stack's path: a retained group would block re-creating the stack.
        self.group = scheduler.ScheduleGroup(self, "ScheduleGroup", removal_policy=RemovalPolicy.DESTROY)
        self.scheduler_role = scheduler_role(
            self,
            "SchedulerRole",
            self.group,
            guard_function,
            "singleton-flags guard close schedules: invoke the guard function, dead-letter",
        )
        guard_function.grant_invoke(self.scheduler_role)
        # what Scheduler's dead-lettering takes, and no more (grant_send_messages would add GetQueueUrl/Attributes)
        self.scheduler_role.add_to_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self.schedule_dead_letter_queue.queue_arn])
        )
        self._grant_describe_alarms(guard_function, "closes a bake (an ALARM whose event was lost still reverts)")
        self._grant_describe_alarms(write_function, "checks a guard's alarms before the change is written")
        self._grant_close_schedules()

    def _build_rule(self, prefix: str) -> events.Rule:
        rule = events.Rule(
            self,
            "AlarmRule",
            description=f"singleton-flags guards: alarms named {prefix}* going into ALARM",
            event_pattern=alarm_event_pattern(prefix),
        )
        rule.add_target(
            events_targets.LambdaFunction(
                self._guard,
                dead_letter_queue=self.rule_dead_letter_queue,
                retry_attempts=constants.GUARD_RULE_RETRY_ATTEMPTS,
                max_event_age=Duration.seconds(constants.GUARD_RULE_MAX_EVENT_AGE_SECONDS),
            )
        )
        return rule

    def _grant_describe_alarms(self, function: lambda_.Function, why: str) -> None:
        function.add_to_role_policy(iam.PolicyStatement(actions=[DESCRIBE_ALARMS], resources=["*"]))
        role = function.role
        assert role is not None  # noqa: S101 - every function here is built with its own role (infra/functions.py)
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            f"{DESCRIBE_ALARMS} (the only CloudWatch action granted) must be on '*': it takes no resource-level "
            f"permission for composite alarms. The function {why}.",
            finding="Resource::*",
        )

    def _grant_close_schedules(self) -> None:
        """The write function creates one-time schedules in the guards' group only, passing the guards' role only."""
        schedules = schedules_arn(self.group.schedule_group_name)
        self._write.add_to_role_policy(iam.PolicyStatement(actions=["scheduler:CreateSchedule"], resources=[schedules]))
        self._write.add_to_role_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[self.scheduler_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
            )
        )
        role = self._write.role
        assert role is not None  # noqa: S101 - built with its own role
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            "The write function creates the guards' close schedules, whose names (guard-<version>) are made at run "
            "time: scheduler:CreateSchedule on the guards' schedule group only.",
            finding=f"Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/"
            f"{self.group.schedule_group_name}/*",
        )
        self.close_target = closes = OneTimeTarget(
            group=self.group.schedule_group_name,
            target_arn=self._guard.function_arn,
            role_arn=self.scheduler_role.role_arn,
            dead_letter_arn=self.schedule_dead_letter_queue.queue_arn,
            retry_attempts=constants.SCHEDULE_RETRY_ATTEMPTS,
            max_event_age_seconds=constants.SCHEDULE_MAX_EVENT_AGE_SECONDS,
        )
        for name, value in GUARD_CLOSE_TARGET.environment(closes).items():
            self._write.add_environment(name, value)

    @property
    def queues(self) -> dict[str, sqs.IQueue]:
        return {
            "GuardRuleDeadLetters": self.rule_dead_letter_queue,
            "GuardScheduleDeadLetters": self.schedule_dead_letter_queue,
            "GuardFailureQueue": self.failure_queue,
        }
