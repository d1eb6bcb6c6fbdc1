"""The write function's part of a guarded change: check the alarms, commit the guard with the change, schedule
the bake's end.

1. Before anything is written (``FlagStore``'s ``before_write``, after an Idempotency-Key replay would have
   answered): ONE DescribeAlarms on the guard's alarms. A name CloudWatch does not know (in this account and
   region) is 400 ``GUARD_ALARM_NOT_FOUND``; an alarm in ALARM now is 409 ``GUARD_ALARM_ACTIVE`` (the change
   would revert at once). ``INSUFFICIENT_DATA`` is accepted: it is not firing.
2. The guard item is a companion of the change: one transaction with the flags' Update and the audit record's
   Put (whose ``guard`` extra names the alarms and the bake's end).
3. After the commit, a one-time Scheduler schedule (``singleton_flags_service.schedules.one_time``) delivers
   ``{"action": "close", "guard": V}`` to the guard function at the bake's end (rounded up to the minute,
   Scheduler's precision). Creating it cannot undo the committed change: a failure is logged at ERROR and
   counted as ``GuardFailures`` and the answer says ``close_scheduled: false``; the guard is then served as
   closed from its bake end on, and the guard function ignores alarms from after it. A replay of the same
   Idempotency-Key creates the schedule again (its name is its ClientToken: the same schedule).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from singleton_flags.codec import iso_time
from singleton_flags_service import work
from singleton_flags_service.contract import Settings
from singleton_flags_service.errors import GuardAlarmActive, GuardAlarmNotFound, SchedulerFault, SchedulerUnavailable
from singleton_flags_service.guards.alarms import ALARM, AlarmStates, CloudWatchAlarms
from singleton_flags_service.guards.items import BAKING, Guard, GuardBook, GuardSpec, bake_end, guard_put
from singleton_flags_service.observability import logger, metrics
from singleton_flags_service.schedules.one_time import OneTimeSchedules, OneTimeTarget
from singleton_flags_service.vocabulary import GUARD_FAILURES
from singleton_flags_service.writes.store import ChangeResult, Companions

CLOSE_ACTION = "close"
SCHEDULE_TIMEZONE = "UTC"


def close_payload(version: int) -> dict[str, Any]:
    """What a guard's close schedule delivers to the guard function."""
    return {"action": CLOSE_ACTION, "guard": version}


def close_schedule_name(version: int) -> str:
    return f"guard-{version}"


def close_time(ends_at: float) -> datetime:
    """The bake's end rounded up to the minute (Scheduler fires at minute precision: never before the end)."""
    return datetime.fromtimestamp(math.ceil(ends_at / 60) * 60, UTC)


def close_due(guard: Guard) -> float:
    """Epoch seconds at which the guard's close schedule fires."""
    return close_time(guard.bake_ends_at).timestamp()


def create_close(schedules: CloseSchedules, guard: Guard) -> str:
    """The guard's close schedule, created (or found: its name is its ClientToken), from its item alone: the write
    function and the reconciler (``singleton_flags_service.reconcile``) send the same request."""
    return schedules.create(
        close_schedule_name(guard.version),
        close_time(guard.bake_ends_at),
        SCHEDULE_TIMEZONE,
        close_payload(guard.version),
        f"singleton-flags: close the guard of version {guard.version} at the end of its bake",
    )


class CloseSchedules(Protocol):
    """What creates a named one-time schedule: ``singleton_flags_service.schedules.one_time.OneTimeSchedules`` (local: a
    recorder)."""

    def create(
        self, name: str, local_time: datetime, timezone: str, payload: Mapping[str, Any], description: str = ""
    ) -> str: ...


@dataclass(frozen=True, slots=True)
class NewGuard:
    """One request's guard: checked once before the write, committed as the change's companion."""

    spec: GuardSpec
    table: str
    actor: str
    created_at: float
    retention_seconds: int
    alarms: AlarmStates

    @property
    def ends_at(self) -> int:
        return bake_end(self.spec, self.created_at)

    @property
    def audit(self) -> dict[str, Any]:
        """The guarded change's audit extra ``guard``."""
        return {"guard": {**self.spec.as_json(), "bake_ends_at": iso_time(self.ends_at)}}

    def check(self) -> None:
        states = self.alarms.states(self.spec.alarms)
        missing = [name for name in self.spec.alarms if name not in states]
        if missing:
            raise GuardAlarmNotFound(
                f"no CloudWatch alarm named {', '.join(map(repr, missing))} in this account and region",
                rule="guard_alarm_exists",
                alarms=missing,
            )
        active = [name for name in self.spec.alarms if states[name] == ALARM]
        if active:
            raise GuardAlarmActive(
                f"alarm {', '.join(map(repr, active))} is in ALARM now: the change would be reverted at once; "
                "nothing was written",
                alarms=active,
            )

    @property
    def companions(self) -> Companions:
        def items(version: int, now: float) -> list[dict[str, Any]]:  # the bake runs from the request's time
            return [
                guard_put(
                    self.table,
                    version,
                    self.spec,
                    actor=self.actor,
                    created_at=self.created_at,
                    retention_seconds=self.retention_seconds,
                ),
                work.created(self.table),  # a baking guard is pending work: counted for the migration (work.py)
            ]

        return items


class GuardedWrites:
    """What the write function needs for guards: the alarms' states and the close schedules (public, so the local
    runner can hand in its own registry and recorder)."""

    def __init__(
        self,
        book: GuardBook,
        retention_seconds: int,
        alarms: AlarmStates,
        schedules: CloseSchedules | None,
        *,
        on_failure: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.book = book
        self.clock = clock
        self.retention_seconds = retention_seconds
        self.alarms = alarms
        self.schedules = schedules
        self._on_failure = on_failure

    @classmethod
    def for_function(
        cls, client: Any, scheduler: Any, settings: Settings, target: OneTimeTarget | None
    ) -> GuardedWrites:
        """What the write function builds at cold start: CloudWatch's alarms (its client made on first use) and,
        when the stack configured them (``target``, from the function's configuration), the close schedules
        (through ``scheduler``, the function's one Scheduler client, which its scheduled changes use too); a
        failure counted as ``GuardFailures``."""
        schedules = OneTimeSchedules(scheduler, target) if target is not None else None
        return cls(
            GuardBook(client, settings.table_name),
            settings.audit_retention_days * 86400,
            CloudWatchAlarms(),
            schedules,
            on_failure=lambda: metrics.add_metric(name=GUARD_FAILURES, unit=MetricUnit.Count, value=1),
        )

    @property
    def table(self) -> str:
        return self.book.table

    def new(self, guard: Any, actor: str) -> NewGuard | None:
        """The request's guard (its model, already validated: ``alarms``, ``bake_minutes``), or None."""
        if guard is None:
            return None
        spec = GuardSpec(alarms=tuple(guard.alarms), bake_minutes=guard.bake_minutes)
        return NewGuard(spec, self.table, actor, self.clock(), self.retention_seconds, self.alarms)

    def answer(self, result: ChangeResult, guard: NewGuard | None) -> dict[str, Any] | None:
        """The guard a guarded write created (or that a replay's first request created), its close scheduled;
        None without one (no guard asked, or nothing written)."""
        if guard is None or not result.applied or result.snapshot.version is None:
            return None
        stored = self.book.get(result.snapshot.version)
        if stored is None:  # a replay whose version was written without a guard (or it expired)
            return None
        body = stored.as_json(self.clock())
        body["close_scheduled"] = self.schedule_close(stored) if stored.state == BAKING else False
        return body

    def schedule_close(self, guard: Guard) -> bool:
        """Create the schedule that closes ``guard`` at its bake's end; False (logged, counted) when it failed."""
        if self.schedules is None:
            logger.error("no close schedule target is configured: the guard ends by its bake end only")
            self._on_failure()
            return False
        try:
            create_close(self.schedules, guard)
        except (SchedulerUnavailable, SchedulerFault) as exc:
            logger.error(
                "the guard's close schedule was not created: the change and its guard stand; the guard ends by "
                "its bake end",
                guard=guard.version,
                error=exc.message,
            )
            self._on_failure()
            return False
        return True


def guarded_request(request: dict[str, Any], guard: NewGuard | None) -> dict[str, Any]:
    """The request an Idempotency-Key names: with its guard, so the same key with another guard is refused."""
    return request if guard is None else {**request, "guard": guard.spec.as_json()}


def store_options(guard: NewGuard | None) -> dict[str, Any]:
    """What ``FlagStore.change`` / ``revert`` take for a guarded write: the alarms' check, the guard item, the
    audit record's ``guard`` extra (nothing without a guard)."""
    if guard is None:
        return {}
    return {"before_write": guard.check, "companions": guard.companions, "extra_audit": guard.audit}
