"""What a migration of the flags item must wait for: work decided on the earlier item's shape and not done yet.

A pending scheduled change holds a patch in the earlier shape, and a baking guard the values its revert would put
back: after the migration, a writer configured for the later item would read them in the wrong shape. Rather than
converting them, the migration is refused while any is pending (each named, with what ends it: its time, its
cancellation, its bake). An Idempotency-Key's record holds an answer already given (a version of the shared
version line), not work: it is kept as it is, and a retry with the key replays that answer. A pending change
request is decided again on every approval against the flags as they are then: one whose flags moved, or whose
names the later shape no longer has, is marked stale, never applied in the wrong shape.
"""

from __future__ import annotations

from typing import Any

from singleton_flags_service.guards.items import GuardBook
from singleton_flags_service.schedules.changes import ScheduleItems

__all__ = ["pending_work"]


def pending_work(schedules: ScheduleItems, guards: GuardBook) -> list[dict[str, Any]]:
    """The refusals a migration meets now: one per pending scheduled change and per baking guard."""
    refused: list[dict[str, Any]] = [
        {
            "cause": "scheduled_change_pending",
            "schedule": change.id,
            "why": f"scheduled change {change.id} is pending: let it apply, or cancel it (flagctl schedule cancel)",
        }
        for change in schedules.pending()
    ]
    refused.extend(
        {
            "cause": "guard_baking",
            "guard": guard.version,
            "why": f"the guard of version {guard.version} is baking: wait for its bake to end",
        }
        for guard in guards.all_baking()
    )
    return refused
