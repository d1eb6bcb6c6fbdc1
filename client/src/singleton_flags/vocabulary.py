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
    "DEFAULT",
    "DEFAULT_NAMESPACE",
    "DEFAULT_SERVICE",
    "DIMENSION_REASON",
    "DIMENSION_SERVICE",
    "READS",
    "READ_REASONS",
    "STALE",
    "STATIC",
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
