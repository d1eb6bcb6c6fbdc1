"""The guard function's rules: an alarm's state change reverts the changes it guards; a bake's end closes one.

Two deliveries, both asynchronous invocations:

- a "CloudWatch Alarm State Change" event (EventBridge's default bus; the stack's ONE rule matches
  ``source`` aws.cloudwatch, ``detail.state.value`` ALARM and ``detail.alarmName`` by the deployment's prefix).
  For each guard still baking that watches the alarm, newest first:

  - the flags are still at the guarded version V: ``FlagStore.revert`` to V-1 with actor ``guard`` and kind
    ``guard-revert``, conditioned on the version being V (If-Match V) AND, in the same transaction, on the
    guard being ``baking`` (its transition to ``reverted`` is the revert's companion) -> ``reverted``;
  - the flags moved on (a newer change): nothing is undone; the guard is marked ``skipped`` with the reason
    (conditioned on ``baking``) and ``GuardSkips`` is counted (alarmed) -> ``skipped``;
  - the alarm changed state before the guard existed, or after its bake ended: not this bake's alarm ->
    ``ignored`` (a bake that ended is closed on the way).

  A second delivery of the same event finds the guard no longer baking: nothing happens.
- ``{"action": "close", "guard": V}`` from the guard's one-time schedule at its bake's end: one DescribeAlarms
  on its alarms (an ALARM whose event was lost still reverts, as above); otherwise ``baking`` -> ``closed``.

Outcomes no retry can fix (a payload that is neither, a revert the store refuses: the earlier version's record
expired, the item would be too large) are returned, logged at ERROR and counted as ``GuardFailures`` (alarmed);
the guard is then marked ``skipped`` with the error. DynamoDB or CloudWatch failures raise, so Lambda retries
the invocation and finally hands it to the function's on-failure queue (alarmed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from singleton_flags.codec import iso_time
from singleton_flags_service.errors import (
    InvalidValue,
    ItemTooLarge,
    PreconditionFailed,
    StoreUnavailable,
    VersionNotFound,
)
from singleton_flags_service.guards.alarms import ALARM, AlarmStates
from singleton_flags_service.guards.items import BAKING, CLOSED, REVERTED, SKIPPED, Guard, GuardBook, guard_transition
from singleton_flags_service.guards.writes import CLOSE_ACTION
from singleton_flags_service.observability import logger
from singleton_flags_service.vocabulary import (
    GUARD_ACTOR,
    GUARD_CLOSES,
    GUARD_FAILURES,
    GUARD_REVERTS,
    GUARD_SKIPS,
    KIND_GUARD_REVERT,
)
from singleton_flags_service.writes.store import FlagStore

ALARM_SOURCE = "aws.cloudwatch"
ALARM_DETAIL_TYPE = "CloudWatch Alarm State Change"

IGNORED = "ignored"
DUPLICATE = "duplicate"
REJECTED = "rejected"
FAILED = "failed"
EARLY = "early"

_METRIC_BY_STATUS = {
    REVERTED: GUARD_REVERTS,
    SKIPPED: GUARD_SKIPS,
    CLOSED: GUARD_CLOSES,
    REJECTED: GUARD_FAILURES,
    FAILED: GUARD_FAILURES,
    EARLY: GUARD_FAILURES,
}


class InvalidGuardEvent(ValueError):
    """A delivery that is neither an alarm state change nor a guard's close."""


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str
    guard: int | None = None
    alarm: str | None = None
    detail: str | None = None
    version: int | None = None  # the flags' version after the outcome (a revert's new version)

    @property
    def metric(self) -> str | None:
        return _METRIC_BY_STATUS.get(self.status)

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass(frozen=True, slots=True)
class AlarmEvent:
    alarm: str
    at: float  # when the alarm changed state (the event's time)


def _event_time(value: Any) -> float:
    if not isinstance(value, str):
        raise InvalidGuardEvent(f"the event's time must be an ISO 8601 text, got {value!r}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidGuardEvent(f"the event's time is not ISO 8601: {value!r}") from None
    if moment.tzinfo is None:
        raise InvalidGuardEvent(f"the event's time has no offset: {value!r}")
    return moment.timestamp()


def parse_alarm_event(event: Mapping[str, Any]) -> AlarmEvent:
    if event.get("detail-type") != ALARM_DETAIL_TYPE:
        raise InvalidGuardEvent(f"an aws.cloudwatch event that is not a {ALARM_DETAIL_TYPE!r}")
    detail = event.get("detail")
    if not isinstance(detail, dict):
        raise InvalidGuardEvent("the alarm event has no detail object")
    name = detail.get("alarmName")
    state = detail.get("state")
    if not isinstance(name, str) or not name:
        raise InvalidGuardEvent("the alarm event names no alarm (detail.alarmName)")
    if not isinstance(state, dict) or state.get("value") != ALARM:
        raise InvalidGuardEvent(f"alarm {name!r}: only a change to ALARM reverts (the rule should not send others)")
    return AlarmEvent(alarm=name, at=_event_time(event.get("time")))


def parse_close(event: Mapping[str, Any]) -> int:
    if set(event) != {"action", "guard"}:
        raise InvalidGuardEvent('a close payload is exactly {"action": "close", "guard": <version>}')
    version = event["guard"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidGuardEvent(f"'guard' must be a guarded version (an integer >= 1), got {version!r}")
    return version


class GuardService:
    def __init__(
        self,
        store: FlagStore,
        book: GuardBook,
        alarms: AlarmStates,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.book = book
        self.alarms = alarms  # public: the local runner hands in its registry
        self._clock = clock

    def handle(self, event: Any) -> list[Outcome]:
        """Every outcome of one delivery (one per guard the alarm concerned; none when no guard watches it)."""
        try:
            if not isinstance(event, dict):
                raise InvalidGuardEvent(f"the payload must be a JSON object, got {type(event).__name__}")
            if event.get("source") == ALARM_SOURCE:
                alarm = parse_alarm_event(event)
                return [self.on_alarm(guard, alarm) for guard in self.book.baking(alarm.alarm)]
            if event.get("action") == CLOSE_ACTION:
                return [self.close(parse_close(event))]
            raise InvalidGuardEvent("neither a CloudWatch alarm state change nor a guard's close payload")
        except InvalidGuardEvent as exc:
            logger.error("guard event rejected: not retried", error=str(exc), payload=repr(event)[:500])
            return [Outcome(status=REJECTED, detail=str(exc))]

    def on_alarm(self, guard: Guard, event: AlarmEvent) -> Outcome:
        if guard.state != BAKING:  # ended by another delivery since it was read
            return self._log(Outcome(DUPLICATE, guard.version, event.alarm, f"the guard is already {guard.state}"))
        if event.at < guard.created_at:
            return self._log(Outcome(IGNORED, guard.version, event.alarm, "the alarm changed state before the guard"))
        if not guard.baking_at(event.at):
            self._end(guard, CLOSED, "the bake ended with no alarm during it")
            return self._log(Outcome(IGNORED, guard.version, event.alarm, "the alarm fired after the bake ended"))
        return self._revert(guard, event.alarm, f"alarm {event.alarm!r} went into ALARM during the bake")

    def close(self, version: int) -> Outcome:
        guard = self.book.get(version)
        if guard is None:
            return self._log(Outcome(IGNORED, version, detail="no such guard (expired, or never written)"))
        if guard.state != BAKING:
            return self._log(Outcome(DUPLICATE, version, detail=f"the guard is already {guard.state}"))
        now = self._clock()
        if now < guard.bake_ends_at:
            detail = f"delivered before the bake's end ({iso_time(guard.bake_ends_at)}): left baking"
            return self._log(Outcome(EARLY, version, detail=detail))
        states = self.alarms.states(guard.alarms)
        firing = [name for name in guard.alarms if states.get(name) == ALARM]
        if firing:  # its state change event was lost, or is still on its way: the bake saw it
            return self._revert(guard, firing[0], f"alarm {firing[0]!r} was in ALARM at the end of the bake")
        detail = "the bake ended with no alarm"
        if not self._end(guard, CLOSED, detail):
            return self._log(Outcome(DUPLICATE, version, detail="ended meanwhile by another delivery"))
        return self._log(Outcome(CLOSED, version, detail=detail))

    # -------------------------------------------------------------------------------------------- revert

    def _revert(self, guard: Guard, alarm: str, why: str) -> Outcome:
        version = guard.version

        def companions(new_version: int, now: float) -> list[dict[str, Any]]:
            outcome = f"{why}: reverted to version {version - 1}'s state as version {new_version}"
            update = guard_transition(
                self.book.table, version, REVERTED, outcome, now, alarm=alarm, reverted_by=new_version
            )
            return [{"Update": update}]

        try:
            result = self.store.revert(
                version - 1,
                actor=GUARD_ACTOR,
                reason=f"guard of version {version}: {why}",
                expected_version=version,
                kind=KIND_GUARD_REVERT,
                extra_audit={"guard": {"version": version, "alarm": alarm}},
                companions=companions,
            )
        except PreconditionFailed as exc:
            return self._moved_on(guard, alarm, exc.current_version)
        except (VersionNotFound, ItemTooLarge, InvalidValue) as exc:
            detail = f"{why}, but the revert was refused: {exc.message}"
            self._end(guard, SKIPPED, detail, alarm=alarm)
            return self._log(Outcome(FAILED, version, alarm, detail))
        if not result.applied:
            detail = f"{why}, but version {version - 1}'s values already hold: nothing to revert"
            self._end(guard, SKIPPED, detail, alarm=alarm)
            return self._log(Outcome(SKIPPED, version, alarm, detail, result.snapshot.version))
        return self._log(Outcome(REVERTED, version, alarm, why, result.snapshot.version))

    def _moved_on(self, guard: Guard, alarm: str, current: int | None) -> Outcome:
        """The revert's transaction found the flags, or the guard, not as it wanted."""
        fresh = self.book.get(guard.version)
        if fresh is None or fresh.state != BAKING:
            state = fresh.state if fresh is not None else "gone"
            return self._log(Outcome(DUPLICATE, guard.version, alarm, f"the guard is already {state}"))
        if current == guard.version:  # a concurrent transaction held an item: a retry will decide
            raise StoreUnavailable(f"the revert of version {guard.version} conflicted with another write; retried")
        detail = (
            f"alarm {alarm!r} fired, but the flags are at version {current}, not the guarded version "
            f"{guard.version}: a newer change is not undone"
        )
        if not self._end(guard, SKIPPED, detail, alarm=alarm):
            return self._log(Outcome(DUPLICATE, guard.version, alarm, "ended meanwhile by another delivery"))
        return self._log(Outcome(SKIPPED, guard.version, alarm, detail, current))

    def _end(self, guard: Guard, state: str, outcome: str, *, alarm: str | None = None) -> bool:
        update = guard_transition(self.book.table, guard.version, state, outcome, self._clock(), alarm=alarm)
        return self.book.end(update)

    @staticmethod
    def _log(outcome: Outcome) -> Outcome:
        log = logger.error if outcome.metric == GUARD_FAILURES else logger.warning
        if outcome.status in (REVERTED, CLOSED, IGNORED, DUPLICATE):
            log = logger.info
        log(f"guard: {outcome.status}", **outcome.as_dict())
        return outcome
