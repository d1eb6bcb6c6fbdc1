"""One-time EventBridge Scheduler schedules: create one that invokes the stack's Scheduler target once, at a
wall-clock time in an IANA time zone, find one, and delete one before it fires.

Every schedule made here is the same shape, so a caller only names it, says when, and gives its payload:

- ``ScheduleExpression`` ``at(yyyy-mm-ddThh:mm:ss)`` with ``ScheduleExpressionTimezone``: Scheduler evaluates
  the local time in that zone (daylight saving time included), with 60-second precision;
- ``FlexibleTimeWindow`` ``OFF``: delivered at that minute, not spread over a window;
- ``ActionAfterCompletion`` ``DELETE``: Scheduler deletes the schedule once it has invoked its target, so
  fired schedules do not pile up in the group (whose quota is per account);
- in the stack's schedule group, delivered with the stack's Scheduler role, its retry policy and its
  dead-letter queue (``OneTimeTarget``, which the function reads from its environment at cold start:
  ``singleton_flags_service.contract``);
- ``ClientToken`` is the schedule's name: a create retried after a lost answer is the same request to
  Scheduler, and a create of a name that already exists (``ConflictException``) is that same schedule.

Failures are classified as the DynamoDB calls' are (singleton_flags_service.writes.transaction): throttling, 5xx and
network
errors are ``SchedulerUnavailable`` (retryable, 503); any other refusal is ``SchedulerFault`` (our fault, 500).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from singleton_flags_service.aws_errors import call_error, error_code
from singleton_flags_service.contract import OneTimeTarget
from singleton_flags_service.errors import SchedulerFault, SchedulerUnavailable
from singleton_flags_service.observability import logger

__all__ = ["OneTimeSchedules", "OneTimeTarget", "at_expression", "scheduler_client"]

# Scheduler's own limits: a name is 1-64 of [0-9a-zA-Z-_.] and a ClientToken 1-64 of [a-zA-Z0-9-_] (the name is
# sent as both, so no "."). (A target's retry limits: singleton_flags_service.contract.)
NAME_PATTERN = re.compile(r"[0-9A-Za-z_-]{1,64}")
MAX_DESCRIPTION = 512

# Scheduler calls are made inside an API request (29 s at most): short timeouts, one retry.
SCHEDULER_CLIENT_CONFIG = Config(
    connect_timeout=1.0, read_timeout=3.0, retries={"total_max_attempts": 2, "mode": "standard"}
)
_RETRYABLE = frozenset({"ThrottlingException", "InternalServerException", "ServiceQuotaExceededException"})


def scheduler_client(config: Config = SCHEDULER_CLIENT_CONFIG) -> Any:
    return boto3.client("scheduler", config=config)


def at_expression(local_time: datetime) -> str:
    """``at(yyyy-mm-ddThh:mm:ss)`` of a wall-clock time (its zone is given apart, as ScheduleExpressionTimezone)."""
    return f"at({local_time.replace(tzinfo=None).strftime('%Y-%m-%dT%H:%M:%S')})"


class OneTimeSchedules:
    """Create, find and delete the stack's one-time schedules (see the module's docstring for their shape)."""

    def __init__(self, client: Any, target: OneTimeTarget) -> None:
        self._client = client
        self._target = target

    @property
    def target(self) -> OneTimeTarget:
        return self._target

    def request(
        self, name: str, local_time: datetime, timezone: str, payload: Mapping[str, Any], description: str = ""
    ) -> dict[str, Any]:
        """The CreateSchedule parameters for ``name`` (exposed so tests and docs show exactly what is sent)."""
        if not NAME_PATTERN.fullmatch(name):
            raise ValueError(f"a schedule name is 1-64 of [0-9A-Za-z_-], got {name!r}")
        target = self._target
        return {
            "Name": name,
            "GroupName": target.group,
            "ScheduleExpression": at_expression(local_time),
            "ScheduleExpressionTimezone": timezone,
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "ActionAfterCompletion": "DELETE",
            "State": "ENABLED",
            "Description": description[:MAX_DESCRIPTION],
            "ClientToken": name,
            "Target": {
                "Arn": target.target_arn,
                "RoleArn": target.role_arn,
                "Input": json.dumps(dict(payload), separators=(",", ":"), sort_keys=True),
                "DeadLetterConfig": {"Arn": target.dead_letter_arn},
                "RetryPolicy": {
                    "MaximumRetryAttempts": target.retry_attempts,
                    "MaximumEventAgeInSeconds": target.max_event_age_seconds,
                },
            },
        }

    def create(
        self, name: str, local_time: datetime, timezone: str, payload: Mapping[str, Any], description: str = ""
    ) -> str:
        """Create the schedule (or find it already created under that name); its ARN."""
        request = self.request(name, local_time, timezone, payload, description)
        try:
            answer = self._call("create_schedule", **request)
        except _Conflict:
            logger.info("one-time schedule already exists: the earlier create went through", schedule=name)
            return self.arn(name)
        return str(answer.get("ScheduleArn") or self.arn(name))

    def delete(self, name: str) -> bool:
        """Delete the schedule; False when there was none (already fired and deleted by Scheduler, or never made)."""
        try:
            self._call("delete_schedule", Name=name, GroupName=self._target.group)
        except _NotFound:
            return False
        return True

    def exists(self, name: str) -> bool:
        """Whether the schedule is in the group now (False: never made, fired and deleted, or its group replaced)."""
        try:
            self._call("get_schedule", Name=name, GroupName=self._target.group)
        except _NotFound:
            return False
        return True

    def arn(self, name: str) -> str:
        """The schedule's ARN, from the target function's partition, region and account."""
        _, partition, _, region, account = self._target.target_arn.split(":")[:5]
        return f"arn:{partition}:scheduler:{region}:{account}:schedule/{self._target.group}/{name}"

    def _call(self, operation: str, **params: Any) -> Any:
        try:
            return getattr(self._client, operation)(**params)
        except (ClientError, BotoCoreError) as exc:
            code = error_code(exc) if isinstance(exc, ClientError) else ""
            if code == "ConflictException" and operation == "create_schedule":
                raise _Conflict from exc
            if code == "ResourceNotFoundException" and operation in ("delete_schedule", "get_schedule"):
                raise _NotFound from exc
            raise call_error(
                exc, "EventBridge Scheduler", operation, _RETRYABLE, SchedulerUnavailable, SchedulerFault
            ) from exc


class _Conflict(Exception):
    pass


class _NotFound(Exception):
    pass
