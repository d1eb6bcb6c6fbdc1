"""Guard function: a CloudWatch alarm's change to ALARM (EventBridge) reverts the changes it guards while they
bake; a guard's one-time schedule closes it at the bake's end. Both invoke it asynchronously.

Thin: the rules live in ``singleton_flags_service.guards.guarding``. Outcomes no retry can fix are returned without
raising,
logged at ERROR and counted as ``GuardFailures``; a DynamoDB or CloudWatch failure raises, so Lambda retries the
invocation and finally sends it to the function's on-failure queue (infra/guards.py).
"""

import gc

gc.disable()  # init builds 100k+ long-lived objects, little garbage: no collection until it ends (decisions.md)

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from singleton_flags.aws import WRITE_CLIENT_CONFIG, dynamodb_client
from singleton_flags_service.contract import WindowsConfiguration, load_service_declarations
from singleton_flags_service.guards.alarms import CloudWatchAlarms
from singleton_flags_service.guards.guarding import GuardService
from singleton_flags_service.guards.items import GuardBook
from singleton_flags_service.observability import count_write_retry, logger, metrics, tracer
from singleton_flags_service.stores import function_store

CONFIG = WindowsConfiguration.from_env(os.environ)  # the environment and the deployment document, checked once
SETTINGS = CONFIG.settings
CLIENT = dynamodb_client(WRITE_CLIENT_CONFIG)
STORE = function_store(
    CLIENT,
    SETTINGS,
    load_service_declarations(),
    reserve_owner=CONFIG.longest_window_name,
    on_retry=count_write_retry,
)
GUARDS = GuardService(STORE, GuardBook(CLIENT, SETTINGS.table_name), CloudWatchAlarms())


@logger.inject_lambda_context
@metrics.log_metrics
@tracer().capture_lambda_handler(capture_response=False)
def handler(event: Any, context: Any) -> dict[str, Any]:
    outcomes = GUARDS.handle(event)
    for outcome in outcomes:
        if outcome.metric is not None:
            metrics.add_metric(name=outcome.metric, unit=MetricUnit.Count, value=1)
    return {"outcomes": [outcome.as_dict() for outcome in outcomes]}


gc.freeze()  # what init built moves to the permanent generation: warm collections never rescan it
gc.enable()
