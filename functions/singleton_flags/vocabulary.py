"""Names the functions emit and the stack watches, in one place: read reasons, metric names, dimensions.

Pure (no imports), so the CDK app can build its alarms and dashboard from the very names the functions
print: a renamed metric cannot leave an alarm watching nothing.
"""

DEFAULT_SERVICE = "singleton-flags"  # POWERTOOLS_SERVICE_NAME
DEFAULT_NAMESPACE = "SingletonFlags"  # POWERTOOLS_METRICS_NAMESPACE: the stack sets SingletonFlags/<stage>

# Where a read's values came from, in OpenFeature's vocabulary (see singleton_flags.reader).
STATIC = "STATIC"
CACHED = "CACHED"
STALE = "STALE"
DEFAULT = "DEFAULT"
READ_REASONS = (STATIC, CACHED, STALE, DEFAULT)

# Kinds of version (an audit record's ``kind``): every change of the flags is one of these.
KIND_CHANGE = "change"
KIND_REVERT = "revert"
KIND_RESTORE = "restore"
KIND_SEED = "seed"
KIND_WINDOW_START = "window-start"
KIND_WINDOW_END = "window-end"
KIND_SCHEDULED = "scheduled"  # a scheduled change applied (actor ``schedule:<id>``)
KIND_GUARD_REVERT = "guard-revert"  # a guard undid its change when one of its alarms fired (actor ``guard``)
VERSION_KINDS = (
    KIND_CHANGE,
    KIND_REVERT,
    KIND_RESTORE,
    KIND_SEED,
    KIND_WINDOW_START,
    KIND_WINDOW_END,
    KIND_SCHEDULED,
    KIND_GUARD_REVERT,
)
GUARD_ACTOR = "guard"

# EMF metrics. Every metric carries the dimension `service`; Reads adds `reason`, Refusals adds `code`.
READS = "Reads"
CACHE_REFRESHES = "CacheRefreshes"
CACHE_REFRESH_FAILURES = "CacheRefreshFailures"
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
CHANGE_EVENTS_PUBLISHED = "ChangeEventsPublished"  # Flags Changed events EventBridge accepted
CHANGE_EVENTS_REFUSED = "ChangeEventsRefused"  # PutEvents entries refused (FailedEntryCount), every attempt counted
SCHEDULED_CHANGES_APPLIED = "ScheduledChangesApplied"
SCHEDULED_CHANGE_SKIPS = "ScheduledChangeSkips"  # if_version no longer matched: recorded, nothing changed
SCHEDULED_CHANGE_FAILURES = "ScheduledChangeFailures"  # a delivery no retry can fix: rejected, unknown, failed
DIMENSION_SERVICE = "service"
DIMENSION_REASON = "reason"
DIMENSION_CODE = "code"
