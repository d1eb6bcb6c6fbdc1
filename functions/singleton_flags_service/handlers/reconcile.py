"""Reconcile function: run on a recurring schedule, it re-creates the one-time schedule of a pending scheduled
change or a baking guard that is missing from its current group, and reports (once each) those whose time passed
unapplied as ``SchedulesOverdue`` (alarmed).

Thin: the rules live in ``singleton_flags_service.reconcile``. Every run publishes both counts (zeros
included). A Scheduler or DynamoDB failure raises (the function's Errors alarm); the next run starts again.
"""

import os
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from singleton_flags.aws import WRITE_CLIENT_CONFIG, dynamodb_client
from singleton_flags_service.contract import ReconcileConfiguration
from singleton_flags_service.guards.items import GuardBook
from singleton_flags_service.observability import logger, metrics
from singleton_flags_service.reconcile import Reconciler, Report
from singleton_flags_service.schedules.changes import ScheduleItems
from singleton_flags_service.schedules.one_time import OneTimeSchedules, scheduler_client
from singleton_flags_service.vocabulary import SCHEDULES_OVERDUE, SCHEDULES_RECREATED

CONFIG = ReconcileConfiguration.from_env(os.environ)  # the environment, checked once
SETTINGS = CONFIG.settings
CLIENT = dynamodb_client(WRITE_CLIENT_CONFIG)
SCHEDULER = scheduler_client()
RECONCILER = Reconciler(
    ScheduleItems(CLIENT, SETTINGS.table_name, retention_seconds=SETTINGS.audit_retention_days * 86400),
    OneTimeSchedules(SCHEDULER, CONFIG.scheduled_changes),
    GuardBook(CLIENT, SETTINGS.table_name),
    OneTimeSchedules(SCHEDULER, CONFIG.guard_closes),
)


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: Any, context: Any) -> dict[str, Any]:
    report = Report()
    try:
        RECONCILER.run(report)
    finally:  # what was done is counted even when the run raises: an overdue item is recorded only once
        metrics.add_metric(name=SCHEDULES_RECREATED, unit=MetricUnit.Count, value=len(report.recreated))
        metrics.add_metric(name=SCHEDULES_OVERDUE, unit=MetricUnit.Count, value=len(report.overdue))
    return report.as_dict()
