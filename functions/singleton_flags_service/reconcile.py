"""Reconciling the one-time schedules with the items they trigger: no pending work is lost with its schedule.

A scheduled change (``SCHEDULE#`` item ``pending``) and a guard's close (``GUARD#`` item ``baking``) each wait on one
one-time schedule in the stack's schedule groups. A group is named from its construct's path and deleted with
it: a rename or a move of the construct replaces the group, and deleting a group deletes every schedule in it
(eventually; one due meanwhile may still fire). The items would then stay pending for ever.

The reconcile function runs this on a recurring schedule. For every pending change and baking guard:

- its schedule's time is more than ``MIN_LEAD_SECONDS`` ahead and the schedule is not in the current group
  (GetSchedule): it is created again from the item alone, under the same deterministic name and ClientToken, with
  the same request the write function sends (``create_schedule``, ``create_close``) -> ``recreated``;
- its time passed more than ``OVERDUE_GRACE_SECONDS`` ago and it is still pending: recorded once on the item
  (``overdue_reported_at``, conditioned on still pending and not yet recorded) and counted as
  ``SchedulesOverdue`` (alarmed) -> ``overdue``. Nothing else changes: a late delivery still applies it, a
  cancellation still cancels it;
- otherwise (its schedule is there, its time is too near to create one, or its delivery may be under way): nothing.

Safe to run concurrently with itself and with a delivery: a create of an existing name is that schedule
(``ConflictException``, or the same ClientToken); a schedule fires only at its time, which is never ahead of now
when it is checked; every delivery is conditioned on the item being pending, so a late fire from a deleting group
after the re-creation finds the work done and writes nothing (one version). A Scheduler failure on one item is
logged and the others are still reconciled; the run then raises, so the function's Errors alarm sees it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from singleton_flags_service.errors import SchedulerFault, SchedulerUnavailable
from singleton_flags_service.guards.items import GuardBook
from singleton_flags_service.guards.writes import close_due, close_schedule_name, create_close
from singleton_flags_service.observability import logger
from singleton_flags_service.schedules.changes import ScheduleItems, create_schedule, due_at, schedule_name
from singleton_flags_service.schedules.one_time import OneTimeSchedules

# A schedule is created again only when its time is at least this far ahead: Scheduler has the minute to take it.
MIN_LEAD_SECONDS = 60
# A delivery's time passed by more than this and its item is still pending: overdue. Scheduler fires within the
# minute and Lambda starts an asynchronous invocation in seconds; more than this is a delivery that did not come.
OVERDUE_GRACE_SECONDS = 10 * 60

RECREATED = "recreated"
OVERDUE = "overdue"


class ReconcileFailed(Exception):
    """Scheduler failed for some items (the others were reconciled): the run raises so its Errors alarm fires."""


@dataclass(slots=True)
class Report:
    """What one run did, by schedule name."""

    recreated: list[str] = field(default_factory=list)
    overdue: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    checked: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "checked": self.checked,
            "recreated": self.recreated,
            "overdue": self.overdue,
            "failed": self.failed,
        }


class Reconciler:
    def __init__(
        self,
        changes: ScheduleItems,
        change_schedules: OneTimeSchedules,
        guards: GuardBook,
        close_schedules: OneTimeSchedules,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._changes = changes
        self._change_schedules = change_schedules
        self._guards = guards
        self._close_schedules = close_schedules
        self._clock = clock

    def run(self, report: Report | None = None) -> Report:
        """Reconcile every pending item, filling ``report`` as it goes (a caller that passes its own still has
        what was done when the run raises: an overdue item is recorded, and so counted, only once)."""
        report = Report() if report is None else report
        for change in self._changes.pending():
            self._one(
                report,
                schedule_name(change.id),
                due_at(change),
                self._change_schedules,
                partial(create_schedule, self._change_schedules, change),
                partial(self._changes.mark_overdue, change.id),
            )
        for guard in self._guards.all_baking():
            self._one(
                report,
                close_schedule_name(guard.version),
                close_due(guard),
                self._close_schedules,
                partial(create_close, self._close_schedules, guard),
                partial(self._guards.mark_overdue, guard.version),
            )
        logger.info(
            "schedules reconciled",
            checked=report.checked,
            recreated=report.recreated,
            overdue=report.overdue,
            failed=report.failed,
        )
        if report.failed:
            raise ReconcileFailed(f"EventBridge Scheduler failed for {', '.join(report.failed)}; the rest reconciled")
        return report

    def _one(
        self,
        report: Report,
        name: str,
        due: float,
        schedules: OneTimeSchedules,
        create: Callable[[], str],
        mark_overdue: Callable[[float], bool],
    ) -> None:
        report.checked += 1
        now = self._clock()
        if due + OVERDUE_GRACE_SECONDS <= now:
            if mark_overdue(now):  # counted once: later runs find it recorded
                report.overdue.append(name)
                logger.error(
                    "a one-time schedule's time passed and its work is still pending: its delivery never came (its "
                    "schedule group replaced, or deleted under it); cancel it, or apply it by hand",
                    schedule=name,
                    due=due,
                )
            return
        if due < now + MIN_LEAD_SECONDS:  # firing now, fired and under way, or too near to create
            return
        try:
            if schedules.exists(name):
                return
            create()
        except (SchedulerUnavailable, SchedulerFault) as exc:
            report.failed.append(name)
            logger.error(
                "a missing one-time schedule could not be checked or created", schedule=name, error=exc.message
            )
            return
        report.recreated.append(name)
        logger.warning(
            "a pending item's one-time schedule was missing from the current group (replaced or deleted): created "
            "again under the same name",
            schedule=name,
            group=schedules.target.group,
        )
