"""Names used by the stack, in one place. Pure Python: tests and the local runner may import it.

The metric and reason vocabulary is ``singleton_flags.vocabulary``'s, imported from there wherever it is used.
"""

from pathlib import Path

from singleton_flags import vocabulary

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = REPO_ROOT / "functions"  # the asset root of every function

# Must equal the aws-lambda-powertools pin in requirements.txt (a test checks): what was tested deploys.
POWERTOOLS_VERSION = "3.37.0"
LAMBDA_RUNTIME = "python3.13"
LAMBDA_ARCHITECTURE = "arm64"
# AWS's public parameter holding the layer ARN of that Powertools release, for this runtime and architecture.
POWERTOOLS_LAYER_PARAMETER = (
    f"/aws/service/powertools/python/{LAMBDA_ARCHITECTURE}/{LAMBDA_RUNTIME}/{POWERTOOLS_VERSION}"
)


def stack_name(stage: str) -> str:
    """The stack's name, and its construct id: one stack per stage, side by side in one app or account."""
    return f"{vocabulary.DEFAULT_SERVICE}-{stage}"


def metrics_namespace(stage: str) -> str:
    """The functions' EMF namespace in a stage (POWERTOOLS_METRICS_NAMESPACE), watched by that stage's alarms."""
    return f"{vocabulary.DEFAULT_NAMESPACE}/{stage}"


def sampling_rule_name(stage: str) -> str:
    """The read routes' X-Ray sampling rule: account-wide, so named per stage (X-Ray allows 32 characters)."""
    return f"flags-{stage}-read"


# Construct ids (the stack's is its name: constants.stack_name)
STORAGE_ID = "Storage"
TABLE_ID = "Table"
SEED_ID = "Seed"
FUNCTIONS_ID = "Functions"
POWERTOOLS_LAYER_ID = "PowertoolsLayer"
API_ID = "Api"
ACCOUNT_ID = "ApiGatewayAccount"
READER_POLICY_ID = "ReaderPolicy"
ADMIN_POLICY_ID = "AdminPolicy"
MAINTENANCE_ID = "Maintenance"
GUARDS_ID = "Guards"
MONITORING_ID = "Monitoring"

# Stack outputs
OUTPUT_API_URL = "ApiUrl"
OUTPUT_TABLE_NAME = "TableName"
OUTPUT_READER_POLICY_ARN = "ReaderPolicyArn"
OUTPUT_ADMIN_POLICY_ARN = "AdminPolicyArn"

# Function settings (names are those of singleton_flags.routes.HANDLERS)
MEMORY_MB = {"read": 256, "write": 512, "maintenance": 256, "guard": 256, "seed": 256}
# The write function works against a deadline taken from its remaining time; 20 s leaves API Gateway's 29 s
# integration limit a margin, so a caller gets the function's answer, never a gateway timeout.
TIMEOUT_SECONDS = {"read": 5, "write": 20, "maintenance": 30, "guard": 30, "seed": 60}
# Explicit on every Lambda integration: REST API Gateway's maximum (50 ms - 29 s without a quota increase).
INTEGRATION_TIMEOUT_SECONDS = 29

# Scheduler delivery of maintenance windows
SCHEDULE_RETRY_ATTEMPTS = 3
SCHEDULE_MAX_EVENT_AGE_SECONDS = 3600
SCHEDULE_MIN_EVENT_AGE_SECONDS = 60  # EventBridge Scheduler's lower bound
DLQ_RETENTION_DAYS = 14
# Lambda's asynchronous invocation of the maintenance function (what Scheduler's delivery hands over to)
ASYNC_RETRY_ATTEMPTS = 2  # Lambda's maximum
ASYNC_MAX_EVENT_AGE_SECONDS = 3600
# The guards' alarm rule target (EventBridge's own retries of an undelivered event, then its DLQ)
GUARD_RULE_RETRY_ATTEMPTS = 10
GUARD_RULE_MAX_EVENT_AGE_SECONDS = 3600
# Custom resources (seed, API Gateway account role): CloudFormation gives up after this, not after an hour
CUSTOM_RESOURCE_TIMEOUT_SECONDS = 300

# Tags on every resource that takes them
TAG_PROJECT = "project"
TAG_STAGE = "stage"

# STALE reads alarm: "sustained" = STALE served in at least this many of the last N one-minute periods.
STALE_ALARM_DATAPOINTS = 5
STALE_ALARM_PERIODS = 10
