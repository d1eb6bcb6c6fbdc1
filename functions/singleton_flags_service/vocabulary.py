"""Names the service's functions emit and the stack watches: kinds of version, and the write side's metrics, beside
the readers' own names (``singleton_flags.vocabulary``), re-exported here so a function or the stack imports every
name from one module. Pure: no imports beyond the readers' names and the standard library.
"""

from dataclasses import dataclass

from singleton_flags.vocabulary import (
    ALL_FLAGS,
    CACHE_REFRESH_FAILURES,
    CACHE_REFRESHES,
    CACHED,
    COMMITTED_VERSION,
    DEFAULT,
    DEFAULT_NAMESPACE,
    DEFAULT_SERVICE,
    DIMENSION_REASON,
    DIMENSION_SERVICE,
    NO_VERSION,
    READ_REASONS,
    READS,
    SERVED_VERSION,
    STALE,
    STATIC,
)

__all__ = [
    "ALL_FLAGS",
    "BREAK_GLASS_USED",
    "CACHED",
    "CACHE_REFRESHES",
    "CACHE_REFRESH_FAILURES",
    "CHANGES_APPLIED",
    "CHANGE_EVENTS_PUBLISHED",
    "CHANGE_EVENTS_REFUSED",
    "CHANGE_REQUESTS_APPLIED",
    "COMMITTED_VERSION",
    "DEFAULT",
    "DEFAULT_NAMESPACE",
    "DEFAULT_SERVICE",
    "DIMENSION_CODE",
    "DIMENSION_REASON",
    "DIMENSION_SERVICE",
    "GUARD_ACTOR",
    "GUARD_CLOSES",
    "GUARD_FAILURES",
    "GUARD_REVERTS",
    "GUARD_SKIPS",
    "KINDS",
    "KIND_BREAK_GLASS",
    "KIND_CHANGE",
    "KIND_CHANGE_REQUEST",
    "KIND_GUARD_REVERT",
    "KIND_MIGRATION",
    "KIND_PROTECTION_LOWERED",
    "KIND_RESTORE",
    "KIND_REVERT",
    "KIND_SCHEDULED",
    "KIND_SEED",
    "KIND_WINDOW_END",
    "KIND_WINDOW_START",
    "NO_VERSION",
    "READS",
    "READ_REASONS",
    "REFUSALS",
    "SAFETY_KINDS",
    "SCHEDULED_CHANGES_APPLIED",
    "SCHEDULED_CHANGE_FAILURES",
    "SCHEDULED_CHANGE_SKIPS",
    "SCHEDULES_OVERDUE",
    "SCHEDULES_RECREATED",
    "SERVED_VERSION",
    "STALE",
    "STATIC",
    "UNAUDITED_WRITES",
    "UNGATED_KINDS",
    "VERSION_KINDS",
    "WINDOW_ENDS",
    "WINDOW_FAILURES",
    "WINDOW_SKIPS",
    "WINDOW_STARTS",
    "WRITE_CONFLICTS",
    "WRITE_RETRIES",
    "VersionKind",
]

# Kinds of version (an audit record's ``kind``): every change of the flags is one of these.
KIND_CHANGE = "change"
KIND_REVERT = "revert"
KIND_RESTORE = "restore"
KIND_SEED = "seed"
KIND_WINDOW_START = "window-start"
KIND_WINDOW_END = "window-end"
KIND_SCHEDULED = "scheduled"  # a scheduled change applied (actor ``schedule:<id>``)
KIND_GUARD_REVERT = "guard-revert"  # a guard undid its change when one of its alarms fired (actor ``guard``)
KIND_CHANGE_REQUEST = "change_request_applied"  # an approved change request (actor: its author; approvers recorded)
KIND_BREAK_GLASS = "break_glass"  # a protected change applied alone by a principal listed for break-glass (alarmed)
KIND_MIGRATION = "migration"  # the flags written into a later item's shape (FLAGS#V1 -> FLAGS#V2), at L+1
# Not a version: the seed's audit record of declarations that lowered a flag's protection (``PROTECTION#`` records)
KIND_PROTECTION_LOWERED = "protection_lowered"


@dataclass(frozen=True, slots=True)
class VersionKind:
    """What a kind of version is, said once: how people read it, whether it is an automatic safety write (never
    blocked: not by a superseded item, not by a protected flag, not by an If-Match of an earlier item) and whether
    a change of a protected flag by it needs a change request's approvals (gated)."""

    name: str
    label: str
    safety: bool = False
    gated: bool = True


KINDS = (
    VersionKind(KIND_CHANGE, "change"),
    VersionKind(KIND_REVERT, "revert"),
    VersionKind(KIND_RESTORE, "restore (the missing item written back from the trail)", safety=True, gated=False),
    VersionKind(KIND_SEED, "seed (newly declared flags added)", gated=False),  # adds what is absent, changes nothing
    VersionKind(KIND_WINDOW_START, "maintenance window start", safety=True, gated=False),
    VersionKind(KIND_WINDOW_END, "maintenance window end", safety=True, gated=False),
    VersionKind(KIND_SCHEDULED, "scheduled change applied"),
    VersionKind(KIND_GUARD_REVERT, "reverted by a guard (an alarm fired during the bake)", safety=True, gated=False),
    VersionKind(KIND_CHANGE_REQUEST, "change request applied (approved by others)", gated=False),
    VersionKind(KIND_BREAK_GLASS, "break glass (a protected change applied alone, without approvals)", gated=False),
    VersionKind(KIND_MIGRATION, "migration (the flags written into a later item's shape)"),
)
VERSION_KINDS = tuple(kind.name for kind in KINDS)
# The automatic safety writes (a window's start or end, a guard's revert, a restore).
SAFETY_KINDS = frozenset(kind.name for kind in KINDS if kind.safety)
# The kinds that may change a protected flag without (more) approvals: an applied request, break-glass, the seed
# and the safety writes.
UNGATED_KINDS = frozenset(kind.name for kind in KINDS if not kind.gated)
GUARD_ACTOR = "guard"

# The service's EMF metrics (beside the readers'). Every metric carries the dimension `service`; Refusals adds `code`.
WRITE_CONFLICTS = "WriteConflicts"
WRITE_RETRIES = "WriteRetries"
CHANGES_APPLIED = "ChangesApplied"
REFUSALS = "Refusals"
WINDOW_STARTS = "WindowStarts"
WINDOW_ENDS = "WindowEnds"
WINDOW_SKIPS = "WindowSkips"
WINDOW_FAILURES = "WindowFailures"  # a delivery no retry can fix: rejected, late, or a change the store refuses
GUARD_REVERTS = "GuardReverts"  # a guard's alarm fired while the flags were at its version: reverted
GUARD_SKIPS = "GuardSkips"  # a guard's alarm fired after a newer change: nothing reverted (alarmed)
GUARD_CLOSES = "GuardCloses"  # a bake ended without its alarms firing
GUARD_FAILURES = "GuardFailures"  # a guard event no retry can fix, or a close schedule not created (alarmed)
CHANGE_EVENTS_PUBLISHED = "ChangeEventsPublished"  # events EventBridge accepted (versions and change requests)
CHANGE_EVENTS_REFUSED = "ChangeEventsRefused"  # PutEvents entries refused (FailedEntryCount), every attempt counted
SCHEDULED_CHANGES_APPLIED = "ScheduledChangesApplied"
SCHEDULED_CHANGE_SKIPS = "ScheduledChangeSkips"  # if_version no longer matched: recorded, nothing changed
SCHEDULED_CHANGE_FAILURES = "ScheduledChangeFailures"  # a delivery no retry can fix: rejected, unknown, failed
SCHEDULES_RECREATED = "SchedulesRecreated"  # a pending item's missing one-time schedule created again
SCHEDULES_OVERDUE = "SchedulesOverdue"  # a pending item's time passed with no delivery (alarmed; once per item)
CHANGE_REQUESTS_APPLIED = "ChangeRequestsApplied"
BREAK_GLASS_USED = "BreakGlassUsed"  # a protected change applied by break-glass (alarmed: always seen)
UNAUDITED_WRITES = "UnauditedWrites"  # a write to the flags item no audit record accounts for (alarmed)
DIMENSION_CODE = "code"
