"""Names used by the stack, in one place. Pure Python: tests and the local runner may import it.

The metric and reason vocabulary is ``singleton_flags.vocabulary``'s, imported from there wherever it is used.
"""

from pathlib import Path

from singleton_flags_service import contract, vocabulary

# Builds kept between synths (layers, the staged functions asset): .build/ of the directory the CDK app runs in
# (ignored by git; never site-packages).
BUILD_DIR = Path.cwd() / ".build"

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


def event_bus_name(stage: str) -> str:
    """The stage's own event bus, where its ``Flags Changed`` events go (docs/change-workflows.md)."""
    return f"{vocabulary.DEFAULT_SERVICE}-{stage}"


# The function the table's stream invokes (not an API function:
# functions/singleton_flags_service/handlers/change_events.py), named by the contract
CHANGE_EVENTS_FUNCTION = contract.CHANGE_EVENTS_FUNCTION
RECONCILE_FUNCTION = contract.RECONCILE_FUNCTION

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
APPROVER_POLICY_ID = "ApproverPolicy"
MAINTENANCE_ID = "Maintenance"
GUARDS_ID = "Guards"
SCHEDULED_CHANGES_ID = "ScheduledChanges"
MONITORING_ID = "Monitoring"
DISCOVERY_ID = "Discovery"
CHANGE_EVENTS_ID = "ChangeEvents"
RECONCILER_ID = "Reconciler"

# Stack outputs
OUTPUT_API_URL = "ApiUrl"
OUTPUT_TABLE_NAME = "TableName"
OUTPUT_READER_POLICY_ARN = "ReaderPolicyArn"
OUTPUT_ADMIN_POLICY_ARN = "AdminPolicyArn"
OUTPUT_APPROVER_POLICY_ARN = "ApproverPolicyArn"
OUTPUT_EVENT_BUS_NAME = "EventBusName"
OUTPUT_CHANGE_EVENTS_TOPIC_ARN = "ChangeEventsTopicArn"

# Function settings (names are those of singleton_flags_service.contract.HANDLERS)
MEMORY_MB = {
    "read": 256,
    "write": 512,
    "maintenance": 256,
    "guard": 256,
    "seed": 256,
    CHANGE_EVENTS_FUNCTION: 256,
    RECONCILE_FUNCTION: 256,
}
# The write function works against a deadline taken from its remaining time; 20 s leaves API Gateway's 29 s
# integration limit a margin, so a caller gets the function's answer, never a gateway timeout.
# change_events: one batch (one PutEvents request, 3 calls of at most 2 x 7 s each, with backoff) fits in 60 s
# reconcile: a Query per partition, then a GetSchedule (3 s, one retry) per pending item still due later
TIMEOUT_SECONDS = {
    "read": 5,
    "write": 20,
    "maintenance": 30,
    "guard": 30,
    "seed": 60,
    CHANGE_EVENTS_FUNCTION: 60,
    RECONCILE_FUNCTION: 120,
}
# The reconciler's recurring run (infra/reconciler.py): every 5 minutes
RECONCILE_RATE_MINUTES = 5
# Explicit on every Lambda integration: REST API Gateway's maximum (50 ms - 29 s without a quota increase).
INTEGRATION_TIMEOUT_SECONDS = 29

# Scheduler delivery of maintenance windows
SCHEDULE_RETRY_ATTEMPTS = 3
SCHEDULE_MAX_EVENT_AGE_SECONDS = 3600
DLQ_RETENTION_DAYS = 14
# Lambda's asynchronous invocation of the maintenance function (what Scheduler's delivery hands over to)
ASYNC_RETRY_ATTEMPTS = 2  # Lambda's maximum
ASYNC_MAX_EVENT_AGE_SECONDS = 3600
# The guards' alarm rule target (EventBridge's own retries of an undelivered event, then its DLQ)
GUARD_RULE_RETRY_ATTEMPTS = 10
GUARD_RULE_MAX_EVENT_AGE_SECONDS = 3600
# The change events' forwarding rule target (EventBridge's retries of an undelivered event, then its DLQ): a
# day, as EventBridge's own default, but bounded and dead-lettered rather than dropped
FORWARD_RETRY_ATTEMPTS = 185  # EventBridge's maximum
FORWARD_MAX_EVENT_AGE_SECONDS = 86400  # EventBridge's maximum
# The change events' event source mapping (the table's stream -> the change-events function)
STREAM_BATCH_SIZE = 10  # one PutEvents request per batch; its worst case stays inside the function's timeout
STREAM_RETRY_ATTEMPTS = 10  # Lambda's retries of a failed batch (bisected on error), then the on-failure queue
STREAM_MAX_RECORD_AGE_SECONDS = 6 * 3600  # a record not published within 6 h goes to the on-failure queue
STREAM_LAG_ALARM_SECONDS = 600  # the function this far behind the stream (IteratorAge) alarms
# Custom resources (seed, API Gateway account role): CloudFormation gives up after this, not after an hour
CUSTOM_RESOURCE_TIMEOUT_SECONDS = 300

# Tags on every resource that takes them
TAG_PROJECT = "project"
TAG_STAGE = "stage"

# STALE reads alarm: "sustained" = STALE served in at least this many of the last N one-minute periods.
STALE_ALARM_DATAPOINTS = 5
STALE_ALARM_PERIODS = 10
