"""Maintenance function: EventBridge Scheduler delivers ``{"action": "start"|"end", "window": NAME,
"scheduled_time": TIME}``, invoking it asynchronously.

Thin: the rules (ownership, idempotency, lateness, rejection) live in ``singleton_flags.windows``. An outcome no retry
can fix (``rejected``, ``late``, ``failed``) is returned without raising, logged at ERROR and counted as
``WindowFailures``; a DynamoDB failure raises, so Lambda retries the invocation and finally sends it to the
function's on-failure destination. (Scheduler's own retries and dead-letter queue cover only deliveries
Lambda did not accept.)
"""

import gc

gc.disable()  # init builds 100k+ long-lived objects, little garbage: no collection until it ends (decisions.md)

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from singleton_flags.aws import WRITE_CLIENT_CONFIG, dynamodb_client
from singleton_flags.declarations import load_declarations
from singleton_flags.observability import count_write_retry, logger, metrics, tracer
from singleton_flags.settings import Settings
from singleton_flags.store import FlagStore
from singleton_flags.windows import MaintenanceWindows, windows_from_env

SETTINGS = Settings.from_env(os.environ)
CLIENT = dynamodb_client(WRITE_CLIENT_CONFIG)
STORE = FlagStore.for_function(
    CLIENT,
    SETTINGS,
    load_declarations(),
    on_retry=count_write_retry,
)
MAINTENANCE = MaintenanceWindows(STORE, windows_from_env(os.environ))


@logger.inject_lambda_context
@metrics.log_metrics
@tracer().capture_lambda_handler(capture_response=False)
def handler(event: Any, context: Any) -> dict[str, Any]:
    outcome = MAINTENANCE.handle(event)
    if outcome.metric is not None:
        metrics.add_metric(name=outcome.metric, unit=MetricUnit.Count, value=1)
    return outcome.as_dict()


gc.freeze()  # what init built moves to the permanent generation: warm collections never rescan it
gc.enable()
