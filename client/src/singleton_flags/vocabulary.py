"""Names a reader emits and the stack watches, in one place: read reasons, the read metrics and their dimensions.

Pure (the standard library's ``enum`` only), so the CDK app can build its alarms and dashboard from the very names
the readers print: a renamed metric cannot leave an alarm watching nothing. The service's own names extend these
(``singleton_flags_service.vocabulary``).
"""

from enum import StrEnum

__all__ = [
    "ALL_FLAGS",
    "CACHED",
    "CACHE_REFRESHES",
    "CACHE_REFRESH_FAILURES",
    "COMMITTED_VERSION",
    "DEADLINE_ENDED_VARIANT",
    "DEFAULT",
    "DEFAULT_NAMESPACE",
    "DEFAULT_SERVICE",
    "DIMENSION_CAUSE",
    "DIMENSION_REASON",
    "DIMENSION_SERVICE",
    "FALLBACK_VARIANT",
    "FLAG_READS",
    "NEVER_READ_FAILURES",
    "NO_VERSION",
    "READS",
    "READ_REASONS",
    "SERVED_ITEM",
    "SERVED_VERSION",
    "STALE",
    "STATIC",
    "STORED_VARIANT",
    "VARIANTS",
    "ReadCause",
    "Reason",
]

DEFAULT_SERVICE = "singleton-flags"  # POWERTOOLS_SERVICE_NAME
DEFAULT_NAMESPACE = "SingletonFlags"  # POWERTOOLS_METRICS_NAMESPACE: the stack sets SingletonFlags/<stage>


class Reason(StrEnum):
    """Where a read's values came from, in OpenFeature's vocabulary. Each member is its own name as a string
    (``Reason.CACHED == "CACHED"``), so answers, logs and metrics print the same text whichever form they hold.

    - STATIC: fetched from the table by this read;
    - CACHED: served from the environment's cache (younger than the cache age);
    - STALE: the table failed; the last good value, younger than ``max_stale``, is served;
    - DEFAULT: the declared fallbacks (item missing, a flag missing or unusable in it, or nothing usable).
    """

    STATIC = "STATIC"
    CACHED = "CACHED"
    STALE = "STALE"
    DEFAULT = "DEFAULT"


STATIC = Reason.STATIC
CACHED = Reason.CACHED
STALE = Reason.STALE
DEFAULT = Reason.DEFAULT
# The reasons as plain strings, in the enum's order: for schemas (a Literal, an OpenAPI enum) and the stack's
# metrics, whose builders want text, not an enum member.
READ_REASONS: tuple[str, ...] = tuple(reason.value for reason in Reason)

# EMF metrics of every reader. Every metric carries the dimension `service`; Reads adds `reason`.
READS = "Reads"
CACHE_REFRESHES = "CacheRefreshes"
CACHE_REFRESH_FAILURES = "CacheRefreshFailures"
DIMENSION_SERVICE = "service"
DIMENSION_REASON = "reason"
DIMENSION_CAUSE = "cause"
# Failed fetches of an environment that has never read the item: a deployment that cannot read its table at all
# (wrong name, no grant, no region...), told apart from a table that failed after serving (``CacheRefreshFailures``).
# Dimensions: `service` and `cause` (a ``ReadCause``).
NEVER_READ_FAILURES = "RefreshFailuresNeverRead"

# Propagation: the version each reader serves, and the version each write committed (EMF, unit None).
# ServedVersion: dimension `reason` only, whichever service the reader runs in (the alarm compares every reader of
# the namespace with the committed version; the reader's own service is a property of its record, not a dimension,
# so the metric count does not grow with the applications). A reader serving the declared fallbacks (DEFAULT)
# serves no stored version: it publishes NO_VERSION, below every version, so it counts as behind.
# CommittedVersion: dimension `service`, printed by the function that committed the version.
SERVED_VERSION = "ServedVersion"
COMMITTED_VERSION = "CommittedVersion"
NO_VERSION = -1
# The record of ServedVersion carries the reads counted per flag since the previous one (a property, not a metric:
# flag names never become dimensions); a read of every flag at once (GET /flags, ``Flags.all``) counts as ALL_FLAGS.
FLAG_READS = "flag_reads"
ALL_FLAGS = "*"
# ... and the item its reader is configured for (its sort key, e.g. FLAGS#V1): a property, never a dimension (the
# alarms' metric identity does not change). A reader that follows a migration pointer still names the item it is
# configured for: that configuration is what an operator switches before finalising.
SERVED_ITEM = "item"


class ReadCause(StrEnum):
    """Why a reader cannot read its table, each with the words its log message says (``ReadCause.words``).

    A cause is told once per execution environment in the log message, and counted with every failed fetch. What a
    reader serves does not depend on it: the last good values (STALE) while young enough, else the declared
    fallbacks (DEFAULT). A new cause is one more member and its words.

    SUPERSEDED is the one cause found in a successful read: the item carries the superseded marker (its table was
    replaced, or the item retired for another key). Its values are never served, not even as STALE: the declared
    fallbacks are (fail closed), and the log names the successor.
    """

    TABLE_NOT_FOUND = "TABLE_NOT_FOUND"
    ACCESS_DENIED = "ACCESS_DENIED"
    INVALID_CREDENTIALS = "INVALID_CREDENTIALS"
    NO_CREDENTIALS = "NO_CREDENTIALS"
    NO_REGION = "NO_REGION"
    MISCONFIGURED = "MISCONFIGURED"
    UNREACHABLE = "UNREACHABLE"
    THROTTLED = "THROTTLED"
    UNEXPECTED = "UNEXPECTED"
    SUPERSEDED = "SUPERSEDED"

    @property
    def words(self) -> str:
        return _CAUSE_WORDS[self]


_CAUSE_WORDS = {
    ReadCause.TABLE_NOT_FOUND: "the table was not found (wrong name, region or account?)",
    ReadCause.ACCESS_DENIED: "access denied (the function's role lacks dynamodb:GetItem on the flags item)",
    ReadCause.INVALID_CREDENTIALS: "the AWS credentials were refused (invalid or expired)",
    ReadCause.NO_CREDENTIALS: "no AWS credentials were found",
    ReadCause.NO_REGION: "no AWS region is set (set AWS_REGION or AWS_DEFAULT_REGION)",
    ReadCause.MISCONFIGURED: "the client is misconfigured",
    ReadCause.UNREACHABLE: "DynamoDB cannot be reached (endpoint unreachable or timed out)",
    ReadCause.THROTTLED: "DynamoDB throttled the read",
    ReadCause.UNEXPECTED: "an unexpected error",
    ReadCause.SUPERSEDED: (
        "the table was replaced: its flags item is marked superseded, operators now change another one "
        "(redeploy this function so it binds the new table)"
    ),
}

# Which value an evaluation served, by name, the same in the OpenFeature provider and OFREP: the stored one, the
# declared fallback, or maintenance switched off because its window's stored deadline passed.
STORED_VARIANT = "stored"
FALLBACK_VARIANT = "fallback"
DEADLINE_ENDED_VARIANT = "deadline_ended"
VARIANTS: tuple[str, ...] = (STORED_VARIANT, FALLBACK_VARIANT, DEADLINE_ENDED_VARIANT)
