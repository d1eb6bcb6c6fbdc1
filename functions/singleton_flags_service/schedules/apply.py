"""Applying a scheduled change when its one-time schedule delivers ``{"scheduled_change": "<id>"}``.

The change and the item's move out of ``pending`` are ONE ``TransactWriteItems`` (``FlagStore.change`` with the
item's update as a companion, conditioned on ``status = pending``), so a change is applied at most once however
often it is delivered, and exactly once when delivered at all: a lost answer is resent with the same
``ClientRequestToken``, and a retried delivery finds the item applied and does nothing.

Outcomes (``status``), each a structured log line and, where it counts, a metric:

- ``applied``: a new version (kind ``scheduled``, actor ``schedule:<id>``, the requester and reason in its audit
  record), or no version when the values already held -> ``ScheduledChangesApplied``;
- ``skipped``: ``if_version`` no longer matches the flags' version, or (a change an approved request scheduled) a
  flag it is bound to no longer holds its base value; recorded on the item, no version -> ``ScheduledChangeSkips``;
- ``not_pending``: already applied, skipped, failed or cancelled (a second delivery, a cancelled change):
  nothing written;
- ``failed``: a flag no longer declared, a value no longer valid, any refusal of the write (a flag the migration
  removed, a value the later item refuses, the item superseded or too large, a protected flag); recorded on the item;
  ``rejected``: not a scheduled change's payload; ``unknown``: no such item -> ``ScheduledChangeFailures``
  (alarmed). These return without raising: no retry would change them.

DynamoDB failures (unavailable, contention beyond the store's retries, an outcome not known) raise, so Lambda
retries the asynchronous invocation and finally hands it to the function's on-failure queue (alarmed); every
retry is safe, the status condition makes it so.

A change an approved change request scheduled (its item names the request) is written as a version of kind
``change_request_applied`` naming the request and its approvers, the one kind of scheduled version the write path
lets change a protected flag; every other scheduled change is of kind ``scheduled`` and refused there (failed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from http import HTTPStatus
from typing import Any

from singleton_flags.declarations import Declarations
from singleton_flags.snapshot import Snapshot
from singleton_flags_service.errors import (
    FlagsError,
    InvalidRequest,
    InvalidValue,
    UnknownFlag,
    WriteConflict,
)
from singleton_flags_service.observability import logger
from singleton_flags_service.schedules.changes import (
    APPLIED,
    CHANGE_REQUEST_ATTR,
    FAILED,
    ID_PATTERN,
    PAYLOAD_KEY,
    PENDING,
    SKIPPED,
    ScheduledChange,
    ScheduleItems,
    actor_of,
)
from singleton_flags_service.values import moved
from singleton_flags_service.vocabulary import (
    KIND_CHANGE_REQUEST,
    KIND_SCHEDULED,
    SCHEDULED_CHANGE_FAILURES,
    SCHEDULED_CHANGE_SKIPS,
    SCHEDULED_CHANGES_APPLIED,
)
from singleton_flags_service.writes.store import FlagStore

NOT_PENDING = "not_pending"
REJECTED = "rejected"
UNKNOWN = "unknown"
_METRIC_BY_STATUS = {
    APPLIED: SCHEDULED_CHANGES_APPLIED,
    SKIPPED: SCHEDULED_CHANGE_SKIPS,
    FAILED: SCHEDULED_CHANGE_FAILURES,
    REJECTED: SCHEDULED_CHANGE_FAILURES,
    UNKNOWN: SCHEDULED_CHANGE_FAILURES,
}


def is_scheduled_change(event: Any) -> bool:
    """A delivery meant for scheduled changes (a maintenance window's payload never names this key)."""
    return isinstance(event, dict) and PAYLOAD_KEY in event


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str
    schedule: str | None = None
    detail: str | None = None
    version: int | None = None

    @property
    def metric(self) -> str | None:
        return _METRIC_BY_STATUS.get(self.status)

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


def refused(error: FlagsError) -> bool:
    """The write refused the change for what it is or where it would land (a 4xx: a flag the migration removed, a
    value the item refuses, a superseded item, a protected flag, the item's size); not an outage or contention (a
    5xx, a conflict beyond the retries), which a later delivery may get past."""
    return error.status < HTTPStatus.INTERNAL_SERVER_ERROR and not isinstance(error, WriteConflict)


class ScheduledChangeRunner:
    def __init__(
        self,
        store: FlagStore,
        items: ScheduleItems,
        declarations: Declarations,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._items = items
        self._declarations = declarations
        self._clock = clock

    def handle(self, event: Any, time_budget: float | None = None) -> Outcome:
        schedule_id = event.get(PAYLOAD_KEY) if isinstance(event, dict) else None
        if (
            set(event if isinstance(event, dict) else ()) != {PAYLOAD_KEY}
            or not isinstance(schedule_id, str)
            or (not ID_PATTERN.fullmatch(schedule_id))
        ):
            return self._log(Outcome(REJECTED, detail=f'the payload must be exactly {{"{PAYLOAD_KEY}": "<id>"}}'))
        found = self._items.get(schedule_id)
        if found is None:
            return self._log(Outcome(UNKNOWN, schedule_id, "no such scheduled change (its item is gone)"))
        if found.status != PENDING:
            return self._log(Outcome(NOT_PENDING, schedule_id, f"already {found.status}: nothing to do"))
        try:
            changes = self._declarations.validate_changes(found.flags)
        except (UnknownFlag, InvalidValue, InvalidRequest) as exc:
            return self._fail(found, f"no longer valid: {exc.message}")
        try:
            return self._apply(found, changes, time_budget)
        except FlagsError as exc:
            if refused(exc):  # no retry changes a refusal: failed, said why
                return self._fail(found, exc.message)
            logger.error(
                "scheduled change not applied; Lambda will retry the invocation", schedule=found.id, error=exc.message
            )
            raise

    def _apply(self, change: ScheduledChange, changes: Mapping[str, Any], time_budget: float | None) -> Outcome:
        decision: list[str] = []
        bound = change.extra.get("base_values")
        found_moved: list[str] = []

        def condition(snapshot: Snapshot) -> bool:
            """Re-taken on every attempt: still pending (after the first read, re-read), still at if_version."""
            fresh = change if not decision else self._items.get(change.id)
            if fresh is None or fresh.status != PENDING:
                decision.append(NOT_PENDING)
                return False
            if change.if_version is not None and snapshot.version != change.if_version:
                decision.append(SKIPPED)
                return False
            if bound is not None:
                found_moved[:] = moved(bound, snapshot.values)
                if found_moved:
                    decision.append(SKIPPED)
                    return False
            decision.append(APPLIED)
            return True

        def companions(version: int, now: float) -> list[dict[str, Any]]:  # finished at the version's time
            return [{"Update": self._items.finish_update(change.id, APPLIED, now, version=version)}]

        request = change.extra.get(CHANGE_REQUEST_ATTR)
        extra: dict[str, Any] = {"schedule": change.id, "requested_by": change.created_by}
        if request is not None:  # scheduled by an approved request: its approvals go with the version
            extra.update({"change_request": request, "approved_by": change.extra.get("approved_by", [])})
        result = self._store.change(
            changes,
            actor=actor_of(change.id),
            reason=change.reason,
            kind=KIND_SCHEDULED if request is None else KIND_CHANGE_REQUEST,
            condition=condition,
            extra_audit=extra,
            companions=companions,
            time_budget=time_budget,
        )
        now = self._clock()
        if decision[-1] == NOT_PENDING:
            return self._log(Outcome(NOT_PENDING, change.id, "no longer pending when it was applied: nothing to do"))
        if decision[-1] == SKIPPED:
            detail = (
                f"if_version {change.if_version} no longer matches: the flags are at version "
                f"{result.snapshot.version}; nothing changed"
                if not found_moved
                else f"{', '.join(found_moved)} no longer hold the values change request {request} was approved "
                f"against; nothing changed"
            )
            if not self._items.finish(change.id, SKIPPED, now, detail=detail):
                return self._log(Outcome(NOT_PENDING, change.id, "no longer pending: nothing to do"))
            return self._log(Outcome(SKIPPED, change.id, detail))
        if result.applied:
            return self._log(Outcome(APPLIED, change.id, "applied", result.snapshot.version))
        detail = "the values already held: no new version"
        if not self._items.finish(change.id, APPLIED, now, detail=detail):
            return self._log(Outcome(NOT_PENDING, change.id, "no longer pending: nothing to do"))
        return self._log(Outcome(APPLIED, change.id, detail))

    def _fail(self, change: ScheduledChange, detail: str) -> Outcome:
        if not self._items.finish(change.id, FAILED, self._clock(), detail=detail):
            return self._log(Outcome(NOT_PENDING, change.id, "no longer pending: nothing to do"))
        return self._log(Outcome(FAILED, change.id, detail))

    @staticmethod
    def _log(outcome: Outcome) -> Outcome:
        failed = outcome.metric == SCHEDULED_CHANGE_FAILURES
        log = logger.error if failed else logger.info
        log(f"scheduled change: {outcome.status}", **outcome.as_dict())
        return outcome
