"""Maintenance windows: EventBridge Scheduler's start/end deliveries turned into owned, idempotent changes.

The deployment declares its windows in cdk.json; the stack writes their definitions into the deployment document
(``singleton_flags_service.contract``), read once at cold start; the maintenance function keeps each window's name
and length (``windows_by_name``), the write function its schedules (``window_schedules``). Each schedule delivers
``contract.window_payload``: ``{"action": "start"|"end", "window": NAME, "scheduled_time": "<ISO 8601>"}``
(Scheduler substitutes the occurrence's scheduled time).

Late deliveries (Scheduler's retries, then Lambda's asynchronous retries, can deliver long after the
scheduled time):

- a start is ``late`` when it arrives more than half its window after its scheduled time: nothing is
  written, so a retried or delayed start never reopens maintenance after (or near the end of) its window.
  A start in time holds maintenance until its scheduled end (``scheduled_time + duration_seconds``);
- an end is never late by the clock: ending is safe, and it only ends what its own window holds. It is
  ``late`` when the window now holds maintenance for a LATER occurrence (one that started after this end
  was due): an end of yesterday's occurrence never ends today's.

Ownership rules (every decision is re-taken on every attempt of ``FlagStore.change`` against the
consistent state it is about to write over, so the version condition makes decision + write atomic):

start
  - off (or held by a window whose deadline has passed): maintenance ON, owned by this window, deadline
    ``now + duration_seconds`` stored on the item -> ``started``;
  - on by hand (no owner): left alone, the window takes no ownership, so its end will not undo the
    manual switch -> ``skipped``;
  - on, owned by this window, deadline not passed: a duplicate delivery -> ``duplicate`` (nothing written);
  - on, owned by another window: the window that ends LATER holds it (maintenance covers the union of
    overlapping windows): this window takes over if its deadline is later (``started``), else it leaves
    the other in charge (``skipped``); whichever end comes from the non-owner is then skipped.
end
  - owned by this window: maintenance OFF, owner and deadline removed -> ``ended``;
  - off, no owner, and the last change was this window's own scheduler: a duplicate -> ``duplicate``;
  - anything else (switched on or off by hand meanwhile, held by another window): left alone -> ``skipped``.

Nothing is written for ``duplicate`` or ``skipped``: there is no new version, hence no audit record
(audit records are one per version); the structured log line, the ``WindowSkips`` metric and the
returned outcome carry the skip.

Outcomes no retry can fix return normally, logged at ERROR and counted as ``WindowFailures`` (alarmed):
``rejected`` (not a schedule delivery), ``late``, ``failed`` (the store refuses the change: the item
would be too large). DynamoDB failures raise, so Lambda retries the asynchronous invocation and finally
hands it to the function's on-failure destination (alarmed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from singleton_flags.codec import iso_time
from singleton_flags.keys import MAINTENANCE_FLAG
from singleton_flags.snapshot import Snapshot
from singleton_flags_service.contract import (
    DEPLOYMENT_FILE,
    WINDOW_ACTIONS,
    WINDOW_PAYLOAD_KEYS,
    SettingsError,
    WindowDefinition,
)
from singleton_flags_service.errors import ItemTooLarge, StoreUnavailable, WriteConflict
from singleton_flags_service.observability import logger
from singleton_flags_service.vocabulary import (
    KIND_WINDOW_END,
    KIND_WINDOW_START,
    WINDOW_ENDS,
    WINDOW_FAILURES,
    WINDOW_SKIPS,
    WINDOW_STARTS,
)
from singleton_flags_service.writes.store import FlagStore, Ownership

if TYPE_CHECKING:  # croniter is imported where a schedule is evaluated: the maintenance function never needs it
    from singleton_flags_service.maintenance.cron import Cron

ACTIONS = WINDOW_ACTIONS
PAYLOAD_KEYS = WINDOW_PAYLOAD_KEYS

STARTED = "started"
ENDED = "ended"
DUPLICATE = "duplicate"
SKIPPED = "skipped"
REJECTED = "rejected"
LATE = "late"
FAILED = "failed"
FAILURES = (REJECTED, LATE, FAILED)  # returned, not raised: no retry can fix them

_METRIC_BY_STATUS = {
    STARTED: WINDOW_STARTS,
    ENDED: WINDOW_ENDS,
    SKIPPED: WINDOW_SKIPS,
    **dict.fromkeys(FAILURES, WINDOW_FAILURES),
}


# ---------------------------------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True)
class Window:
    name: str
    duration_seconds: int

    @property
    def actor(self) -> str:
        return f"scheduler:{self.name}"


def windows_by_name(definitions: Iterable[WindowDefinition]) -> dict[str, Window]:
    """The deployed windows by name, each with its length (what the maintenance function acts on)."""
    return {window.name: Window(name=window.name, duration_seconds=window.duration_seconds) for window in definitions}


@dataclass(frozen=True, slots=True)
class WindowSchedule:
    """A window's two schedules as deployed: EventBridge crons evaluated in an IANA time zone."""

    name: str
    start: Cron
    end: Cron
    timezone: str

    def upcoming(self, now: datetime) -> dict[str, str | None]:
        """The next start and the next end after ``now`` (each on its own: inside a window, the next end comes
        before the next start), in the window's zone with that date's offset, and in UTC."""
        answer: dict[str, str | None] = {
            "name": self.name,
            "start": self.start.expression,
            "end": self.end.expression,
            "timezone": self.timezone,
        }
        from singleton_flags_service.maintenance.cron import next_occurrence

        for key, cron in (("start", self.start), ("end", self.end)):
            moment = next_occurrence(cron, self.timezone, now)
            answer[f"next_{key}"] = moment.isoformat() if moment is not None else None
            answer[f"next_{key}_utc"] = _iso_utc(moment.timestamp()) if moment is not None else None
        return answer


def window_schedules(definitions: Iterable[WindowDefinition]) -> tuple[WindowSchedule, ...]:
    """The windows' schedules in cdk.json's order, their crons parsed (the write function's cold start).

    Raises ``SettingsError`` naming the deployment document and the window (the stack writes it from a validated
    cdk.json)."""
    from singleton_flags_service.maintenance.cron import CronError, parse_cron

    schedules: list[WindowSchedule] = []
    for index, window in enumerate(definitions):
        try:
            schedule = WindowSchedule(
                name=window.name, start=parse_cron(window.start), end=parse_cron(window.end), timezone=window.timezone
            )
        except CronError as exc:
            raise SettingsError(
                f"the deployment document {DEPLOYMENT_FILE.name}: maintenance_windows[{index}] ({window.name!r}): {exc}"
            ) from exc
        schedules.append(schedule)
    return tuple(schedules)


# ---------------------------------------------------------------------------------------------- payload


class InvalidSchedulePayload(ValueError):
    """A delivery that is not ``{"action": "start"|"end", "window": <configured>, "scheduled_time": <ISO>}``."""


@dataclass(frozen=True, slots=True)
class Command:
    action: str
    window: Window
    scheduled_at: float  # epoch seconds of the occurrence's scheduled time


def _scheduled_at(value: Any) -> float:
    """Scheduler's ``<aws.scheduler.scheduled-time>`` (e.g. 2022-03-22T18:59:43Z) as epoch seconds."""
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            raise ValueError(value)
    except ValueError:
        raise InvalidSchedulePayload(
            f"'scheduled_time' must be an ISO 8601 time with its offset (as Scheduler writes "
            f"<aws.scheduler.scheduled-time>, e.g. 2022-03-22T18:59:43Z), got {value!r}"
        ) from None
    return moment.timestamp()


def parse_payload(event: Any, windows: Mapping[str, Window]) -> Command:
    if not isinstance(event, dict):
        raise InvalidSchedulePayload(
            f'the payload must be a JSON object {{"action": "start"|"end", "window": NAME, "scheduled_time": '
            f"TIME}}, got {type(event).__name__}"
        )
    missing, unknown = PAYLOAD_KEYS - set(event), set(event) - PAYLOAD_KEYS
    if missing or unknown:
        problems = ([f"missing key(s) {sorted(missing)}"] if missing else []) + (
            [f"unknown key(s) {sorted(map(str, unknown))}"] if unknown else []
        )
        raise InvalidSchedulePayload(f"{'; '.join(problems)}; the payload is exactly {sorted(PAYLOAD_KEYS)}")
    action, name = event["action"], event["window"]
    if action not in ACTIONS:
        raise InvalidSchedulePayload(f"'action' must be one of {list(ACTIONS)}, got {action!r}")
    if not isinstance(name, str) or name not in windows:
        raise InvalidSchedulePayload(f"unknown window {name!r}; configured: {sorted(windows)}")
    return Command(action=action, window=windows[name], scheduled_at=_scheduled_at(event["scheduled_time"]))


def start_is_late(window: Window, scheduled_at: float, now: float) -> bool:
    """A start more than half its window after its scheduled time would hold maintenance for a window mostly
    (or entirely) over: refused."""
    return now - scheduled_at > window.duration_seconds / 2


# ---------------------------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class _Decision:
    status: str  # STARTED / ENDED when the change goes ahead, else DUPLICATE or SKIPPED (nothing written)
    detail: str

    @property
    def go(self) -> bool:
        return self.status in (STARTED, ENDED)


def _stored_on(snapshot: Snapshot) -> bool:
    """maintenance_mode as stored (a broken stored value reads as its fallback, ON; treat it as not set)."""
    return snapshot.values.get(MAINTENANCE_FLAG) is True and MAINTENANCE_FLAG not in snapshot.fallen_back


def _holds_until(snapshot: Snapshot) -> float:
    """Until when the owning window holds maintenance: its deadline, or for ever if none is stored."""
    return snapshot.maintenance_deadline if snapshot.maintenance_deadline is not None else float("inf")


def _holder(snapshot: Snapshot) -> str:
    """Who holds maintenance, for the log: a window's name, "manual" (on, no owner) or "nobody" (off)."""
    if snapshot.maintenance_owner is not None:
        return snapshot.maintenance_owner
    return "manual" if _stored_on(snapshot) else "nobody"


def decide_start(window: Window, snapshot: Snapshot, now: float, deadline: float) -> _Decision:
    owner = snapshot.maintenance_owner
    if not _stored_on(snapshot):
        return _Decision(STARTED, "maintenance on, held by the window")
    if owner is not None and _holds_until(snapshot) <= now:
        return _Decision(STARTED, f"held again: window {owner!r} had passed its deadline (its end never came)")
    if owner is None:
        return _Decision(SKIPPED, "maintenance is on by hand: the window leaves it alone and takes no ownership")
    if owner == window.name:
        return _Decision(DUPLICATE, "the window already holds maintenance (duplicate delivery)")
    if _holds_until(snapshot) >= deadline:
        return _Decision(SKIPPED, f"window {owner!r} holds maintenance until after this window ends: left to it")
    return _Decision(STARTED, f"took maintenance over from window {owner!r}, which ends earlier")


def decide_end(window: Window, snapshot: Snapshot, scheduled_at: float | None = None) -> _Decision:
    owner = snapshot.maintenance_owner
    if owner == window.name and scheduled_at is not None and snapshot.maintenance_deadline is not None:
        held_since = snapshot.maintenance_deadline - window.duration_seconds  # the holding occurrence's start
        if held_since > scheduled_at:
            return _Decision(
                LATE,
                f"the window holds maintenance for a later occurrence (since "
                f"{iso_time(held_since)}), not the one this end was due for: left on",
            )
    if owner == window.name:
        return _Decision(ENDED, "maintenance off, ownership released")
    if owner is None and not _stored_on(snapshot) and snapshot.updated_by == window.actor:
        return _Decision(DUPLICATE, "the window already ended maintenance (duplicate delivery)")
    if owner is None and _stored_on(snapshot):
        return _Decision(SKIPPED, "maintenance is on by hand, not held by this window: left on")
    if owner is None:
        return _Decision(
            SKIPPED,
            "maintenance is off and not held by this window (switched off by hand, or never "
            "started by it): nothing to end",
        )
    return _Decision(SKIPPED, f"window {owner!r} holds maintenance: left alone")


# ---------------------------------------------------------------------------------------------- service


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str
    action: str | None = None
    window: str | None = None
    detail: str | None = None
    version: int | None = None
    maintenance_mode: bool | None = None
    owner: str | None = None
    deadline: str | None = None  # ISO time, while a window holds maintenance
    error: str | None = None  # why a payload was rejected, or the change failed

    @property
    def metric(self) -> str | None:
        """The metric this invocation counts (WindowStarts / WindowEnds / WindowSkips / WindowFailures), if any."""
        return _METRIC_BY_STATUS.get(self.status)

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


class MaintenanceWindows:
    """Applies schedule deliveries to the flags through ``FlagStore.change`` (audited, version-conditioned)."""

    def __init__(self, store: FlagStore, windows: Mapping[str, Window], *, clock: Callable[[], float] = time.time):
        self.store = store
        self.windows = dict(windows)
        self._clock = clock

    def handle(self, event: Any, time_budget: float | None = None) -> Outcome:
        """Apply one delivery; ``time_budget`` (seconds from now) bounds the store's retries of a conflict."""
        try:
            command = parse_payload(event, self.windows)
        except InvalidSchedulePayload as exc:
            logger.error("schedule payload rejected: not retried", error=str(exc), payload=_preview(event))
            return Outcome(status=REJECTED, error=str(exc))
        try:
            if command.action == "start":
                return self.start(command.window, command.scheduled_at, time_budget)
            return self.end(command.window, command.scheduled_at, time_budget)
        except ItemTooLarge as exc:
            logger.error(
                "maintenance window change failed: not retried (a retry would fail the same way)",
                window=command.window.name,
                action=command.action,
                error=exc.message,
                code=exc.code,
            )
            return Outcome(status=FAILED, action=command.action, window=command.window.name, error=exc.message)
        except (StoreUnavailable, WriteConflict) as exc:
            logger.error(
                "maintenance window change failed; Lambda will retry the invocation",
                window=command.window.name,
                action=command.action,
                error=exc.message,
                code=exc.code,
            )
            raise

    def start(self, window: Window, scheduled_at: float | None = None, time_budget: float | None = None) -> Outcome:
        """Open ``window``; ``scheduled_at`` (the occurrence's scheduled time) defaults to now."""
        now = self._clock()
        scheduled = now if scheduled_at is None else scheduled_at
        if start_is_late(window, scheduled, now):
            return self._late(
                window,
                "start",
                scheduled,
                f"delivered {int(now - scheduled)} s after its scheduled "
                f"time, more than half the window: maintenance not opened",
            )
        deadline = int(scheduled) + window.duration_seconds
        return self._apply(
            window,
            "start",
            lambda snapshot: decide_start(window, snapshot, now, deadline),
            f"maintenance window '{window.name}' started, until {iso_time(deadline)}",
            {MAINTENANCE_FLAG: True},
            Ownership(owner=window.name, deadline=deadline),
            time_budget,
        )

    def end(self, window: Window, scheduled_at: float | None = None, time_budget: float | None = None) -> Outcome:
        return self._apply(
            window,
            "end",
            lambda snapshot: decide_end(window, snapshot, scheduled_at),
            f"maintenance window '{window.name}' ended",
            {MAINTENANCE_FLAG: False},
            Ownership(owner=None),
            time_budget,
        )

    def _apply(
        self,
        window: Window,
        action: str,
        decide: Callable[[Snapshot], _Decision],
        reason: str,
        changes: dict[str, Any],
        ownership: Ownership,
        time_budget: float | None = None,
    ) -> Outcome:
        """One ``FlagStore.change`` conditioned on ``decide``, which the store re-takes on every attempt
        against the consistent state that attempt read; the last decision is the one that counts."""
        decisions: list[_Decision] = []

        def condition(snapshot: Snapshot) -> bool:
            decisions.append(decide(snapshot))
            return decisions[-1].go

        result = self.store.change(
            changes,
            actor=window.actor,
            reason=reason,
            ownership=ownership,
            condition=condition,
            kind=KIND_WINDOW_START if action == "start" else KIND_WINDOW_END,
            extra_audit={"window": window.name},
            time_budget=time_budget,
        )
        decision = decisions[-1]
        if decision.status == LATE:
            return self._late(window, action, None, decision.detail, result.snapshot)
        if decision.go and not result.applied:  # already in the wanted state: nothing to write
            decision = _Decision(DUPLICATE, "nothing to change")
        snapshot = result.snapshot
        outcome = Outcome(
            status=decision.status,
            action=action,
            window=window.name,
            detail=decision.detail,
            version=snapshot.version,
            maintenance_mode=snapshot.values.get(MAINTENANCE_FLAG) is True,
            owner=snapshot.maintenance_owner,
            deadline=iso_time(snapshot.maintenance_deadline) if snapshot.maintenance_deadline is not None else None,
        )
        log = logger.warning if outcome.status == SKIPPED else logger.info
        log(
            f"maintenance window {action}: {outcome.status}",
            window=window.name,
            action=action,
            status=outcome.status,
            detail=outcome.detail,
            current_owner=_holder(snapshot),
            maintenance_mode=outcome.maintenance_mode,
            version=snapshot.version,
            last_changed_by=snapshot.updated_by,
        )
        return outcome

    def _late(
        self,
        window: Window,
        action: str,
        scheduled_at: float | None,
        detail: str,
        snapshot: Snapshot | None = None,
    ) -> Outcome:
        outcome = Outcome(
            status=LATE,
            action=action,
            window=window.name,
            detail=detail,
            version=snapshot.version if snapshot is not None else None,
            maintenance_mode=snapshot.values.get(MAINTENANCE_FLAG) is True if snapshot is not None else None,
            owner=snapshot.maintenance_owner if snapshot is not None else None,
        )
        extra: dict[str, Any] = {"scheduled_time": _iso_utc(scheduled_at)} if scheduled_at is not None else {}
        logger.error(
            f"maintenance window {action}: {LATE}",
            window=window.name,
            action=action,
            status=LATE,
            detail=detail,
            **extra,
        )
        return outcome


def _iso_utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _preview(event: Any, limit: int = 500) -> str:
    text = repr(event)
    return text if len(text) <= limit else text[:limit] + "..."
