"""The reconciler: an EventBridge Scheduler recurring schedule (``rate(5 minutes)``, in Scheduler's ``default``
group, which no deploy replaces) that runs the reconcile function. The function re-creates, in the current groups,
the one-time schedule of a pending scheduled change or a baking guard that went missing (its group replaced by a
rename or move of its construct), and records once each whose time passed unapplied (``SchedulesOverdue``,
alarmed in infra/monitoring.py). Rules: ``singleton_flags_service.reconcile``.

The function is given, in its environment, both one-time targets exactly as the write function has them (the
contract's ``SCHEDULED_CHANGE_TARGET`` and ``GUARD_CLOSE_TARGET``), and in its role, beside the table's rights
(infra/functions.py: Query and UpdateItem on the schedules' and guards' partitions only):

- ``scheduler:GetSchedule`` and ``scheduler:CreateSchedule`` on the schedules of those two groups only;
- ``iam:PassRole`` on those groups' two Scheduler roles only, and only to Scheduler.

A run that fails is not retried (the next one comes in 5 minutes, and every run is idempotent): the schedule's
retries are 0 and the function's asynchronous retries 0; a failure is seen on the function's Errors alarm.
"""

from __future__ import annotations

from aws_cdk import (
    Duration,
    aws_iam as iam,
    aws_lambda as lambda_,
    aws_scheduler as scheduler,
    aws_scheduler_targets as targets,
)
from constructs import Construct

from singleton_flags_service.contract import GUARD_CLOSE_TARGET, SCHEDULED_CHANGE_TARGET, OneTimeTarget

from . import constants
from .maintenance import scheduler_role
from .nag import acknowledge
from .scheduled_changes import schedules_arn

PASSED_TO_SCHEDULER = {"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}}


class Reconciler(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        scheduled_changes: OneTimeTarget,
        guard_closes: OneTimeTarget,
    ) -> None:
        super().__init__(scope, construct_id)
        self.function = function
        for variables, target in ((SCHEDULED_CHANGE_TARGET, scheduled_changes), (GUARD_CLOSE_TARGET, guard_closes)):
            for name, value in variables.environment(target).items():
                function.add_environment(name, value)
        self._grant(function, (scheduled_changes, guard_closes))
        function.configure_async_invoke(
            retry_attempts=0, max_event_age=Duration.minutes(constants.RECONCILE_RATE_MINUTES)
        )
        default_group = scheduler.ScheduleGroup.from_default_schedule_group(self, "DefaultGroup")
        self.role = scheduler_role(
            self, "SchedulerRole", default_group, function, "singleton-flags reconciler: invoke the reconcile function"
        )
        self.schedule = scheduler.Schedule(
            self,
            "Schedule",
            description="singleton-flags: re-create missing one-time schedules, report overdue ones",
            schedule=scheduler.ScheduleExpression.rate(Duration.minutes(constants.RECONCILE_RATE_MINUTES)),
            time_window=scheduler.TimeWindow.off(),
            target=targets.LambdaInvoke(
                function,
                role=self.role,
                input=scheduler.ScheduleTargetInput.from_object({"action": "reconcile"}),
                retry_attempts=0,
                max_event_age=Duration.minutes(constants.RECONCILE_RATE_MINUTES),
            ),
        )

    @staticmethod
    def _grant(function: lambda_.Function, targets_: tuple[OneTimeTarget, ...]) -> None:
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="FindAndRecreateOneTimeSchedules",
                actions=["scheduler:GetSchedule", "scheduler:CreateSchedule"],
                resources=[schedules_arn(target.group) for target in targets_],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="PassTheSchedulerRoles",
                actions=["iam:PassRole"],
                resources=[target.role_arn for target in targets_],
                conditions=PASSED_TO_SCHEDULER,
            )
        )
        role = function.role
        assert role is not None  # noqa: S101 - built with its own role (infra/functions.py)
        for target in targets_:
            acknowledge(
                role,
                "AwsSolutions-IAM5",
                "'schedule/<group>/*' are the schedules of one of this stack's two one-time schedule groups: the "
                "reconcile function finds and re-creates schedules whose names (change-<id>, guard-<version>) are "
                "made at run time.",
                finding="Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/"
                f"{target.group}/*",
            )
