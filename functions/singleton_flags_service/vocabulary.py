"""Names the service's functions emit and the stack watches: kinds of version, and the write side's metrics, beside
the readers' own names (``singleton_flags.vocabulary``), re-exported here so a function or the stack imports every
name from one module. Pure: no imports beyond the readers' names.
"""

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
    "SCHEDULED_CHANGES_APPLIED",
    "SCHEDULED_CHANGE_FAILURES",
    "SCHEDULED_CHANGE_SKIPS",
    "SCHEDULES_OVERDUE",
    "SCHEDULES_RECREATED",
    "SERVED_VERSION",
    "STALE",
    "STATIC",
    "UNAUDITED_WRITES",
    "VERSION_KINDS",
    "WINDOW_ENDS",
    "WINDOW_FAILURES",
    "WINDOW_SKIPS",
    "WINDOW_STARTS",
    "WRITE_CONFLICTS",
    "WRITE_RETRIES",
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
VERSION_KINDS = (
    KIND_CHANGE,
    KIND_REVERT,
    KIND_RESTORE,
    KIND_SEED,
    KIND_WINDOW_START,
    KIND_WINDOW_END,
    KIND_SCHEDULED,
    KIND_GUARD_REVERT,
    KIND_CHANGE_REQUEST,
    KIND_BREAK_GLASS,
    KIND_MIGRATION,
)
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
