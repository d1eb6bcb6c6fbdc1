"""Names a reader emits and the stack watches, in one place: read reasons, the read metrics and their dimensions.

Pure (no imports), so the CDK app can build its alarms and dashboard from the very names the readers print: a
renamed metric cannot leave an alarm watching nothing. The service's own names extend these
(``singleton_flags_service.vocabulary``).
"""

DEFAULT_SERVICE = "singleton-flags"  # POWERTOOLS_SERVICE_NAME
DEFAULT_NAMESPACE = "SingletonFlags"  # POWERTOOLS_METRICS_NAMESPACE: the stack sets SingletonFlags/<stage>

# Where a read's values came from, in OpenFeature's vocabulary (see singleton_flags.reader).
STATIC = "STATIC"
CACHED = "CACHED"
STALE = "STALE"
DEFAULT = "DEFAULT"
READ_REASONS = (STATIC, CACHED, STALE, DEFAULT)

# EMF metrics of every reader. Every metric carries the dimension `service`; Reads adds `reason`.
READS = "Reads"
CACHE_REFRESHES = "CacheRefreshes"
CACHE_REFRESH_FAILURES = "CacheRefreshFailures"
DIMENSION_SERVICE = "service"
DIMENSION_REASON = "reason"
