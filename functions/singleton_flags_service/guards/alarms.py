"""CloudWatch alarms' current states, by name: ONE ``DescribeAlarms`` call with ``AlarmNames``.

A guard names its alarms (at most 5, well under the call's 100 names); both alarm types are asked for
(``AlarmTypes``: without it only metric alarms are returned, and a composite alarm would read as missing).
DescribeAlarms only sees this account's alarms in this region, so a name found here is one the stack's
EventBridge rule hears about.

Failures are classified as the DynamoDB calls' are (singleton_flags_service.writes.transaction): throttling, 5xx and
network
errors are ``AlarmsUnavailable`` (503, retryable); any other refusal (a denied call) is ``AlarmsFault`` (500).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from singleton_flags_service.aws_errors import call_error
from singleton_flags_service.errors import AlarmsFault, AlarmsUnavailable

ALARM = "ALARM"
OK = "OK"
INSUFFICIENT_DATA = "INSUFFICIENT_DATA"
STATES = (OK, ALARM, INSUFFICIENT_DATA)
ALARM_TYPES = ["MetricAlarm", "CompositeAlarm"]

# DescribeAlarms is made inside an API request (29 s at most): short timeouts, one retry.
CLOUDWATCH_CLIENT_CONFIG = Config(
    connect_timeout=1.0, read_timeout=3.0, retries={"total_max_attempts": 2, "mode": "standard"}
)
_RETRYABLE = frozenset({"Throttling", "ThrottlingException", "InternalServiceError", "InternalServiceFault"})


def cloudwatch_client(config: Config = CLOUDWATCH_CLIENT_CONFIG) -> Any:
    return boto3.client("cloudwatch", config=config)


class AlarmStates(Protocol):
    """Where alarm states come from: CloudWatch deployed, the local runner's registry locally (local/alarms.py)."""

    def states(self, names: Sequence[str]) -> dict[str, str]:
        """name -> state (OK, ALARM, INSUFFICIENT_DATA) of each named alarm that exists; a missing one is absent."""
        ...


class CloudWatchAlarms:
    """``AlarmStates`` from CloudWatch; the client is made on first use (a cold start without a guard pays nothing)."""

    def __init__(self, client_factory: Callable[[], Any] = cloudwatch_client) -> None:
        self._factory = client_factory
        self._client: Any = None

    def states(self, names: Sequence[str]) -> dict[str, str]:
        if not names:
            return {}
        if self._client is None:
            self._client = self._factory()
        found: dict[str, str] = {}
        params: dict[str, Any] = {"AlarmNames": list(names), "AlarmTypes": ALARM_TYPES}
        while True:
            answer = self._describe(params)
            for alarm in [*answer.get("MetricAlarms", []), *answer.get("CompositeAlarms", [])]:
                found[str(alarm["AlarmName"])] = str(alarm["StateValue"])
            token = answer.get("NextToken")
            if not token:
                return found
            params["NextToken"] = token

    def _describe(self, params: dict[str, Any]) -> Any:
        try:
            return self._client.describe_alarms(**params)
        except (ClientError, BotoCoreError) as exc:
            raise call_error(exc, "CloudWatch", "DescribeAlarms", _RETRYABLE, AlarmsUnavailable, AlarmsFault) from exc
