"""Maintenance function: EventBridge Scheduler delivers ``{"action": "start"|"end", "window": NAME,
"scheduled_time": TIME}`` (a maintenance window) or ``{"scheduled_change": ID}`` (a scheduled change's one-time
schedule), invoking it asynchronously.

Scheduled changes are applied by ``singleton_flags_service.schedules.apply`` (the same shape of outcome: a failure no
retry can fix returns, logged at ERROR and counted as ``ScheduledChangeFailures``; a DynamoDB failure raises).

Thin: the rules (ownership, idempotency, lateness, rejection) live in ``singleton_flags_service.maintenance.windows``.
An outcome no retry
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
from singleton_flags_service.contract import WindowsConfiguration, load_service_declarations
from singleton_flags_service.maintenance.windows import MaintenanceWindows, Outcome, windows_by_name
from singleton_flags_service.observability import count_write_retry, logger, metrics, tracer
from singleton_flags_service.schedules.apply import (
    Outcome as ScheduledOutcome,
    ScheduledChangeRunner,
    is_scheduled_change,
)
from singleton_flags_service.schedules.changes import ScheduleItems
from singleton_flags_service.stores import function_store

CONFIG = WindowsConfiguration.from_env(os.environ)  # the environment and the deployment document, checked once
SETTINGS = CONFIG.settings
CLIENT = dynamodb_client(WRITE_CLIENT_CONFIG)
STORE = function_store(
    CLIENT,
    SETTINGS,
    load_service_declarations(),
    on_retry=count_write_retry,
)
MAINTENANCE = MaintenanceWindows(STORE, windows_by_name(CONFIG.windows))
SCHEDULED = ScheduledChangeRunner(
    STORE,
    ScheduleItems(CLIENT, SETTINGS.table_name, retention_seconds=SETTINGS.audit_retention_days * 86400),
    STORE.declarations,
)
DEADLINE_MARGIN_SECONDS = 1.0  # answer (and let Lambda retry) before the invocation times out


@logger.inject_lambda_context
@metrics.log_metrics
@tracer().capture_lambda_handler(capture_response=False)
def handler(event: Any, context: Any) -> dict[str, Any]:
    outcome: Outcome | ScheduledOutcome
    budget = context.get_remaining_time_in_millis() / 1000 - DEADLINE_MARGIN_SECONDS  # conflicts retried within it
    if is_scheduled_change(event):
        outcome = SCHEDULED.handle(event, time_budget=budget)
    else:
        outcome = MAINTENANCE.handle(event, time_budget=budget)
    if outcome.metric is not None:
        metrics.add_metric(name=outcome.metric, unit=MetricUnit.Count, value=1)
    return outcome.as_dict()


gc.freeze()  # what init built moves to the permanent generation: warm collections never rescan it
gc.enable()
