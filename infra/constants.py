"""Names used by the stack, in one place. Pure Python: tests and the local runner may import it."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = REPO_ROOT / "functions"  # the asset root of every function

SERVICE_NAME = "singleton-flags"
METRICS_NAMESPACE = "SingletonFlags"

# Must equal the aws-lambda-powertools pin in requirements.txt (a test checks): what was tested deploys.
POWERTOOLS_VERSION = "3.37.0"
LAMBDA_RUNTIME = "python3.13"
LAMBDA_ARCHITECTURE = "arm64"
# AWS's public parameter holding the layer ARN of that Powertools release, for this runtime and architecture.
POWERTOOLS_LAYER_PARAMETER = (
    f"/aws/service/powertools/python/{LAMBDA_ARCHITECTURE}/{LAMBDA_RUNTIME}/{POWERTOOLS_VERSION}"
)


def stack_name(stage: str) -> str:
    return f"{SERVICE_NAME}-{stage}"


# Construct ids
STACK_ID = "SingletonFlags"
STORAGE_ID = "Storage"
TABLE_ID = "Table"
SEED_ID = "Seed"
FUNCTIONS_ID = "Functions"
POWERTOOLS_LAYER_ID = "PowertoolsLayer"
API_ID = "Api"
READER_POLICY_ID = "ReaderPolicy"
ADMIN_POLICY_ID = "AdminPolicy"
MAINTENANCE_ID = "Maintenance"
MONITORING_ID = "Monitoring"

# Stack outputs
OUTPUT_API_URL = "ApiUrl"
OUTPUT_TABLE_NAME = "TableName"
OUTPUT_READER_POLICY_ARN = "ReaderPolicyArn"
OUTPUT_ADMIN_POLICY_ARN = "AdminPolicyArn"

# Function settings (names are those of flags.routes.HANDLERS)
MEMORY_MB = {"read": 256, "write": 512, "maintenance": 256}
TIMEOUT_SECONDS = {"read": 5, "write": 10, "maintenance": 30}

# Scheduler delivery of maintenance windows
SCHEDULE_RETRY_ATTEMPTS = 3
SCHEDULE_MAX_EVENT_AGE_SECONDS = 3600
SCHEDULE_MIN_EVENT_AGE_SECONDS = 60  # EventBridge Scheduler's lower bound
DLQ_RETENTION_DAYS = 14

# Metrics the functions emit (EMF). Every metric carries the dimension `service`; Reads adds `reason`,
# Refusals adds `code`.
METRIC_READS = "Reads"
READ_REASONS = ("STATIC", "CACHED", "STALE", "DEFAULT")
METRIC_CACHE_REFRESHES = "CacheRefreshes"
METRIC_CACHE_REFRESH_FAILURES = "CacheRefreshFailures"
METRIC_WRITE_CONFLICTS = "WriteConflicts"
METRIC_WRITE_RETRIES = "WriteRetries"
METRIC_CHANGES_APPLIED = "ChangesApplied"
METRIC_REFUSALS = "Refusals"
METRIC_WINDOW_STARTS = "WindowStarts"
METRIC_WINDOW_ENDS = "WindowEnds"
METRIC_WINDOW_SKIPS = "WindowSkips"
DIMENSION_SERVICE = "service"
DIMENSION_REASON = "reason"
DIMENSION_CODE = "code"

# STALE reads alarm: "sustained" = STALE served in at least this many of the last N one-minute periods.
STALE_ALARM_DATAPOINTS = 5
STALE_ALARM_PERIODS = 10
