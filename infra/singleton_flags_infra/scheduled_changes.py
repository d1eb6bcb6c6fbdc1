"""Scheduled changes: what the write function needs to create and delete one-time schedules, and nothing more.

The schedules live in the maintenance windows' schedule group, invoke the maintenance function (which applies
them, ``singleton_flags_service.schedules.apply``) with the maintenance schedules' role, retry policy and dead-letter
queue. The write function is given, in its environment, where they go (the contract's ``SCHEDULED_CHANGE_TARGET``
writes it, the write function's reader reads it), and in its role:

- ``scheduler:CreateSchedule`` and ``scheduler:DeleteSchedule`` on the schedules of this stack's group only
  (``arn:<partition>:scheduler:<region>:<account>:schedule/<group>/*``);
- ``iam:PassRole`` on the Scheduler role only, and only to Scheduler (``iam:PassedToService``
  ``scheduler.amazonaws.com``): CreateSchedule passes the role the schedule delivers with.

The Scheduler role is granted the invocation and the dead-letter queue here too, so scheduled changes work in a
deployment that declares no maintenance window (whose schedules would otherwise be what grants them).
"""

from __future__ import annotations

from aws_cdk import Aws, aws_iam as iam, aws_lambda as lambda_
from constructs import Construct

from singleton_flags_service.contract import SCHEDULED_CHANGE_TARGET, OneTimeTarget

from . import constants
from .maintenance import Maintenance
from .nag import acknowledge


def schedules_arn(group_name: str) -> str:
    """Every schedule of one schedule group (the resource type ``schedule`` of EventBridge Scheduler)."""
    return f"arn:{Aws.PARTITION}:scheduler:{Aws.REGION}:{Aws.ACCOUNT_ID}:schedule/{group_name}/*"


class ScheduledChanges(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        writer: lambda_.Function,
        target: lambda_.IFunction,
        maintenance: Maintenance,
    ) -> None:
        super().__init__(scope, construct_id)
        group = maintenance.group.schedule_group_name
        self.target = OneTimeTarget(
            group=group,
            target_arn=target.function_arn,
            role_arn=maintenance.role.role_arn,
            dead_letter_arn=maintenance.dead_letter_queue.queue_arn,
            retry_attempts=constants.SCHEDULE_RETRY_ATTEMPTS,
            max_event_age_seconds=constants.SCHEDULE_MAX_EVENT_AGE_SECONDS,
        )
        environment = SCHEDULED_CHANGE_TARGET.environment(self.target)
        for name, value in environment.items():
            writer.add_environment(name, value)
        writer.add_to_role_policy(
            iam.PolicyStatement(
                sid="OneTimeSchedules",
                actions=["scheduler:CreateSchedule", "scheduler:DeleteSchedule"],
                resources=[schedules_arn(group)],
            )
        )
        writer.add_to_role_policy(
            iam.PolicyStatement(
                sid="PassTheSchedulerRole",
                actions=["iam:PassRole"],
                resources=[maintenance.role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
            )
        )
        if writer.role is not None:
            acknowledge(
                writer.role,
                "AwsSolutions-IAM5",
                "'schedule/<group>/*' are the schedules of this stack's own schedule group: the write function "
                "creates and deletes one one-time schedule per scheduled change, named by its id.",
                finding=f"Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/{group}/*",
            )
        target.grant_invoke(maintenance.role)
        # SendMessage alone, as the schedules' own DeadLetterConfig grants it (the same statement: merged)
        maintenance.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[maintenance.dead_letter_queue.queue_arn])
        )
