"""Maintenance windows: per configured window, an EventBridge Scheduler schedule that opens it and one that
closes it, delivering ``contract.window_payload(window, action)`` to the maintenance function.

Three failure paths, each seen:

- a delivery Scheduler could not make (Lambda refused or was unreachable): Scheduler's retries, then the
  schedules' dead-letter queue (alarmed);
- a function error (DynamoDB unavailable...): Scheduler invokes Lambda asynchronously and counts the delivery
  done once Lambda accepts it, so the function's own asynchronous configuration retries it (twice, within an
  hour) and then sends it to its on-failure queue (alarmed);
- an outcome no retry can fix (rejected, late, item too large): the function returns and counts
  ``WindowFailures`` (alarmed in infra/monitoring.py).
"""

from __future__ import annotations

from typing import cast

from aws_cdk import (
    Aws,
    CfnElement,
    Duration,
    RemovalPolicy,
    TimeZone,
    aws_iam as iam,
    aws_lambda as lambda_,
    aws_lambda_destinations as destinations,
    aws_scheduler as scheduler,
    aws_scheduler_targets as targets,
    aws_sqs as sqs,
)
from constructs import Construct

from singleton_flags_service.contract import MIN_EVENT_AGE_SECONDS, window_payload

from . import constants
from .config import FlagsConfig, MaintenanceWindow
from .nag import acknowledge, logical_id
from .queues import last_stop_queue


def max_event_age_seconds(window: MaintenanceWindow, action: str) -> int:
    """How long Scheduler may keep retrying a delivery.

    A start is worth delivering only within the first half of its window (the function refuses a later one
    as late, from the scheduled time in its payload), so a start gives up after half its window (at least
    the Scheduler minimum of 60 s). A late end is harmless (it only ends what its own occurrence holds).
    """
    if action == "start":
        half = window.duration_seconds // 2
        return max(MIN_EVENT_AGE_SECONDS, min(constants.SCHEDULE_MAX_EVENT_AGE_SECONDS, half))
    return constants.SCHEDULE_MAX_EVENT_AGE_SECONDS


class Maintenance(Construct):
    """Schedule group, dead-letter queue and two schedules (start, end) per window."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FlagsConfig,
        function: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        self._function = function
        self.dead_letter_queue = self._build_dead_letter_queue()
        self.failure_queue = self._build_failure_queue()
        # Its name is derived from the stack's path: a retained group would block re-creating the stack.
        self.group = scheduler.ScheduleGroup(self, "Group", removal_policy=RemovalPolicy.DESTROY)
        self.role = self._build_scheduler_role()
        self.schedules: dict[tuple[str, str], scheduler.Schedule] = {}
        for window in config.maintenance_windows:
            self.schedules[(window.name, "start")] = self._build_schedule(window, "start", window.start)
            self.schedules[(window.name, "end")] = self._build_schedule(window, "end", window.end)

    def _build_dead_letter_queue(self) -> sqs.Queue:
        return last_stop_queue(
            self,
            "DeadLetterQueue",
            "the dead-letter queue of the maintenance schedules (EventBridge Scheduler DeadLetterConfig",
        )

    def _build_failure_queue(self) -> sqs.Queue:
        """The maintenance function's on-failure destination: invocations Lambda accepted but whose function
        kept failing through its asynchronous retries, or that grew too old to retry."""
        queue = last_stop_queue(
            self,
            "FailureQueue",
            "the on-failure destination of the maintenance function's asynchronous invocations (Lambda "
            "EventInvokeConfig",
        )
        self._function.configure_async_invoke(
            retry_attempts=constants.ASYNC_RETRY_ATTEMPTS,
            max_event_age=Duration.seconds(constants.ASYNC_MAX_EVENT_AGE_SECONDS),
            on_failure=destinations.SqsDestination(queue),
        )
        return queue

    def _build_scheduler_role(self) -> iam.Role:
        return scheduler_role(
            self,
            "SchedulerRole",
            self.group,
            self._function,
            "singleton-flags maintenance schedules: invoke the maintenance function, dead-letter",
        )

    def _build_schedule(self, window: MaintenanceWindow, action: str, cron: str) -> scheduler.Schedule:
        schedule = scheduler.Schedule(
            self,
            f"{window.name}-{action}",
            description=f"{action} of maintenance window {window.name}. {window.description}".strip()[:512],
            schedule_group=self.group,
            schedule=scheduler.ScheduleExpression.expression(cron, TimeZone.of(window.timezone)),
            time_window=scheduler.TimeWindow.off(),
            target=targets.LambdaInvoke(
                self._function,
                role=self.role,
                input=scheduler.ScheduleTargetInput.from_object(window_payload(window.name, action)),
                dead_letter_queue=self.dead_letter_queue,
                retry_attempts=constants.SCHEDULE_RETRY_ATTEMPTS,
                max_event_age=Duration.seconds(max_event_age_seconds(window, action)),
            ),
        )
        schedule.node.add_dependency(self.group)  # the schedule names its group by a literal, not a Ref
        return schedule


def scheduler_role(
    scope: Construct,
    construct_id: str,
    group: scheduler.IScheduleGroup,
    function: lambda_.IFunction,
    description: str,
) -> iam.Role:
    """The role a group's schedules deliver with to ``function``, assumable only by Scheduler for this account's
    group (aws:SourceAccount, aws:SourceArn: the confused-deputy guard). The invoke grant is the caller's (CDK's
    LambdaInvoke target, or ``function.grant_invoke``): lambda:InvokeFunction on the function and its qualified
    ARNs (<arn>:*), acknowledged here."""
    role = iam.Role(
        scope,
        construct_id,
        description=description,
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com",
            conditions={
                "StringEquals": {
                    "aws:SourceAccount": Aws.ACCOUNT_ID,
                    "aws:SourceArn": group.schedule_group_arn,
                }
            },
        ),
    )
    acknowledge(
        role,
        "AwsSolutions-IAM5",
        f"'<function arn>:*' are the versions and aliases of the {function.node.id.removesuffix('Function').lower()} "
        "function only (CDK's grantInvoke); the schedules invoke nothing else.",
        # the function's default child is its CfnFunction
        finding=f"Resource::<{logical_id(cast(CfnElement, function.node.default_child))}.Arn>:*",
    )
    return role
