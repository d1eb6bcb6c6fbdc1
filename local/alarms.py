"""Guarded changes in the local runner: a fake alarm registry for DescribeAlarms, and the events CloudWatch and
EventBridge would deliver. Never deployed.

- ``LocalAlarms``: alarm name -> state, in memory. The write function's DescribeAlarms and the guard function's
  close check read it (``singleton_flags_service.guards.alarms.AlarmStates``); ``POST /_alarms/<name>`` sets a state,
  creating
  the alarm. Nothing reaches CloudWatch, whatever DynamoDB the runner uses.
- A change to ``ALARM`` of an alarm whose name starts with the deployment's ``guard_alarm_prefix`` is delivered
  to the guard function as the "CloudWatch Alarm State Change" event the stack's EventBridge rule would send (the
  rule's filter: the prefix, the state ALARM, and a change: setting ALARM on an alarm already in ALARM sends
  nothing, as CloudWatch sends no event without a state change).
- The guards' close schedules are held by the runner's scheduler (local.scheduler), which delivers each to the
  guard function at its bake's end; ``POST /_guards/<version>/close`` delivers one now (the end, brought forward).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from local.gateway import LOCAL_ACCOUNT
from singleton_flags.codec import iso_time
from singleton_flags_service.guards.alarms import ALARM, INSUFFICIENT_DATA, STATES
from singleton_flags_service.guards.guarding import ALARM_DETAIL_TYPE, ALARM_SOURCE


class LocalAlarms:
    """The runner's alarms (``AlarmStates``): created by their first state, as CloudWatch creates an alarm in
    INSUFFICIENT_DATA."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}

    def states(self, names: Sequence[str]) -> dict[str, str]:
        with self._lock:
            return {name: self._states[name] for name in names if name in self._states}

    def set(self, name: str, state: str) -> str | None:
        """Set ``name``'s state; its state before (None: the alarm is new)."""
        if state not in STATES:
            raise ValueError(f"an alarm's state is one of {list(STATES)}, got {state!r}")
        with self._lock:
            previous = self._states.get(name)
            self._states[name] = state
            return previous

    def all(self) -> dict[str, str]:
        with self._lock:
            return dict(self._states)


def alarm_state_change(
    name: str, state: str, previous: str | None, region: str, now: float | None = None
) -> dict[str, Any]:
    """The "CloudWatch Alarm State Change" event EventBridge delivers (CloudWatch's documented shape)."""
    moment = iso_time(time.time() if now is None else now)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": ALARM_DETAIL_TYPE,
        "source": ALARM_SOURCE,
        "account": LOCAL_ACCOUNT,
        "time": moment,
        "region": region,
        "resources": [f"arn:aws:cloudwatch:{region}:{LOCAL_ACCOUNT}:alarm:{name}"],
        "detail": {
            "alarmName": name,
            "state": {"value": state, "reason": "set through the local runner", "timestamp": moment},
            "previousState": {"value": previous or INSUFFICIENT_DATA, "reason": "", "timestamp": moment},
        },
    }


def rule_matches(name: str, state: str, previous: str | None, prefix: str) -> bool:
    """Whether the stack's alarm rule would deliver this state change (infra/guards.py: prefix, ALARM, a change)."""
    return state == ALARM and previous != ALARM and name.startswith(prefix)
