"""The local runner's EventBridge Scheduler: the two calls the write function makes (CreateSchedule,
DeleteSchedule), held in memory, and the delivery of what is due: a scheduled change to the maintenance
function, a guard's close to the guard function (``target_function``).

Nothing reaches AWS: the write function's ``OneTimeSchedules`` is given this object as its client. Like
Scheduler it refuses a second schedule of the same name (``ConflictException``) and a delete of one it does not
hold (``ResourceNotFoundException``), and a delivered one-time schedule is gone (``ActionAfterCompletion``
``DELETE``). Due schedules are delivered by ``Deliveries``: a background tick once a second, the same handler
code as a deployment (``POST /_scheduler/changes/{id}`` and ``POST /_guards/{version}/close`` deliver one at
once, for tests).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from botocore.exceptions import ClientError

from singleton_flags_infra.constants import SCHEDULE_MAX_EVENT_AGE_SECONDS, SCHEDULE_RETRY_ATTEMPTS
from singleton_flags_service.contract import (
    GUARD_CLOSE_TARGET,
    GUARD_FUNCTION,
    MAINTENANCE_FUNCTION,
    SCHEDULED_CHANGE_TARGET,
    OneTimeTarget,
)
from singleton_flags_service.guards import writes as guard_writes
from singleton_flags_service.vocabulary import DEFAULT_SERVICE

_AT = re.compile(r"at\(([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\)")
TICK_SECONDS = 1.0


def _error(code: str, operation: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


def due_at(expression: str, timezone: str) -> float:
    """Epoch seconds of a one-time schedule's ``at(...)`` in its ``ScheduleExpressionTimezone``."""
    match = _AT.fullmatch(expression)
    if match is None:
        raise ValueError(f"not a one-time schedule expression: {expression!r}")
    return datetime.fromisoformat(match.group(1)).replace(tzinfo=ZoneInfo(timezone)).timestamp()


class LocalScheduler:
    """One-time schedules by (group, name), thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._schedules: dict[tuple[str, str], dict[str, Any]] = {}

    def create_schedule(self, **params: Any) -> dict[str, Any]:
        key = (params["GroupName"], params["Name"])
        due_at(params["ScheduleExpression"], params.get("ScheduleExpressionTimezone", "UTC"))  # refuse what AWS would
        with self._lock:
            if key in self._schedules:
                raise _error("ConflictException", "CreateSchedule", f"Schedule {key[1]} already exists.")
            self._schedules[key] = dict(params)
        return {"ScheduleArn": f"arn:aws:scheduler:local:000000000000:schedule/{key[0]}/{key[1]}"}

    def delete_schedule(self, *, Name: str, GroupName: str, **_: Any) -> dict[str, Any]:  # noqa: N803 - boto3's names
        with self._lock:
            if self._schedules.pop((GroupName, Name), None) is None:
                raise _error("ResourceNotFoundException", "DeleteSchedule", f"Schedule {Name} does not exist.")
        return {}

    def names(self) -> list[str]:
        with self._lock:
            return sorted(name for _, name in self._schedules)

    def take(self, name: str) -> dict[str, Any] | None:
        """Remove the schedule ``name`` (in any group) and return its payload, as if it had just fired."""
        with self._lock:
            key = next((key for key in self._schedules if key[1] == name), None)
            return json.loads(self._schedules.pop(key)["Target"]["Input"]) if key is not None else None

    def take_due(self, now: float) -> list[dict[str, Any]]:
        """Remove and return the payloads of every schedule due at ``now`` (epoch seconds), soonest first."""
        with self._lock:
            due = sorted(
                (due_at(params["ScheduleExpression"], params.get("ScheduleExpressionTimezone", "UTC")), key)
                for key, params in self._schedules.items()
            )
            taken = [key for moment, key in due if moment <= now]
            return [json.loads(self._schedules.pop(key)["Target"]["Input"]) for key in taken]


class Deliveries:
    """Delivers what ``scheduler`` holds when it is due, with ``deliver`` (the maintenance function)."""

    def __init__(
        self,
        scheduler: LocalScheduler,
        deliver: Callable[[dict[str, Any]], Any],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._scheduler = scheduler
        self._deliver = deliver
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> list[Any]:
        """Deliver every due schedule now; the functions' answers (a failure is printed, as Scheduler retries)."""
        results = []
        for payload in self._scheduler.take_due(self._clock()):
            try:
                results.append(self._deliver(payload))
            except Exception:  # noqa: BLE001 - a failed delivery must not stop the tick
                print(f"[scheduler] delivery of {payload} failed:", file=sys.stderr)
                traceback.print_exc(file=sys.stderr)
        return results

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="local-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            self.tick()


def local_one_time_environment(region: str) -> dict[str, str]:
    """What the stack tells the write function about its one-time schedules (infra/scheduled_changes.py: the
    scheduled changes', to the maintenance function; infra/guards.py: the guards' closes, in their own group, to
    the guard function), with local names, written by the contract's writers as the stack writes them: the
    runner's own scheduler holds them and delivers them (``target_function``), so these only name things; nothing
    reaches AWS."""
    prefix = f"{DEFAULT_SERVICE}-local"
    environment: dict[str, str] = {}
    for variables, group, function in (
        (SCHEDULED_CHANGE_TARGET, prefix, MAINTENANCE_FUNCTION),
        (GUARD_CLOSE_TARGET, f"{prefix}-guards", GUARD_FUNCTION),
    ):
        target = OneTimeTarget(
            group=group,
            target_arn=f"arn:aws:lambda:{region}:000000000000:function:{prefix}-{function}",
            role_arn=f"arn:aws:iam::000000000000:role/{group}-scheduler",
            dead_letter_arn=f"arn:aws:sqs:{region}:000000000000:{group}-dead-letters",
            retry_attempts=SCHEDULE_RETRY_ATTEMPTS,
            max_event_age_seconds=SCHEDULE_MAX_EVENT_AGE_SECONDS,
        )
        environment |= variables.environment(target)
    return environment


def target_function(payload: dict[str, Any]) -> str:
    """The function a one-time schedule's payload is for: a guard's close, or else a scheduled change."""
    return GUARD_FUNCTION if payload.get("action") == guard_writes.CLOSE_ACTION else MAINTENANCE_FUNCTION


def use_local_scheduler(write_module: Any, scheduler: LocalScheduler) -> None:
    """Give the loaded write function this scheduler in place of EventBridge Scheduler (its store unchanged)."""
    from singleton_flags_service.schedules.changes import ScheduledChanges, ScheduleItems
    from singleton_flags_service.schedules.one_time import OneTimeSchedules

    configuration = write_module.CONFIG  # what the function read at its cold start
    settings = configuration.settings
    items = ScheduleItems(
        write_module.CLIENT, settings.table_name, retention_seconds=settings.audit_retention_days * 86400
    )
    write_module.SCHEDULED = ScheduledChanges(
        items, OneTimeSchedules(scheduler, configuration.scheduled_changes), landing=write_module.landing
    )
    close_target = configuration.guard_closes
    write_module.GUARDS.schedules = OneTimeSchedules(scheduler, close_target) if close_target is not None else None
