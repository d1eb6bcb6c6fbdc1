"""Names a reader emits and the stack watches, in one place: read reasons, the read metrics and their dimensions.

Pure (the standard library's ``enum`` only), so the CDK app can build its alarms and dashboard from the very names
the readers print: a renamed metric cannot leave an alarm watching nothing. The service's own names extend these
(``singleton_flags_service.vocabulary``).
"""

from enum import StrEnum

__all__ = [
    "CACHED",
    "CACHE_REFRESHES",
    "CACHE_REFRESH_FAILURES",
    "DEADLINE_ENDED_VARIANT",
    "DEFAULT",
    "DEFAULT_NAMESPACE",
    "DEFAULT_SERVICE",
    "DIMENSION_CAUSE",
    "DIMENSION_REASON",
    "DIMENSION_SERVICE",
    "FALLBACK_VARIANT",
    "NEVER_READ_FAILURES",
    "READS",
    "READ_REASONS",
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
