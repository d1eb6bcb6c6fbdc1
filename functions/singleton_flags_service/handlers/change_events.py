"""Change-events function: the table's stream (INSERTs of audit records only, by the event source mapping's
filter) in, one ``Flags Changed`` EventBridge event per version out.

Thin: the record-to-event rules and the bounded PutEvents retries live in ``singleton_flags_service.events``. The
answer is a partial batch response (``ReportBatchItemFailures``): the first record not published is reported,
so Lambda retries from it; a function error makes Lambda bisect the batch. Every PutEvents entry refused counts
``ChangeEventsRefused`` (alarmed); what Lambda's own bounded retries cannot deliver ends in the mapping's
on-failure queue (alarmed).
"""

import os
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config

from singleton_flags_service.contract import ChangeEventSettings
from singleton_flags_service.events import ChangePublisher
from singleton_flags_service.observability import logger, metrics
from singleton_flags_service.vocabulary import CHANGE_EVENTS_PUBLISHED, CHANGE_EVENTS_REFUSED

SETTINGS = ChangeEventSettings.from_env(os.environ)
# The publisher retries refused entries itself; botocore retries a failed call once more within it.
EVENTS_CLIENT = boto3.client(
    "events", config=Config(connect_timeout=2, read_timeout=5, retries={"total_max_attempts": 2, "mode": "standard"})
)
PUBLISHER = ChangePublisher(EVENTS_CLIENT.put_events, event_bus_name=SETTINGS.event_bus_name, stage=SETTINGS.stage)


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: Any, context: Any) -> dict[str, Any]:
    result = PUBLISHER.publish(event)
    for error in result.errors:
        logger.error("change event not published", extra={"error": error})
    metrics.add_metric(name=CHANGE_EVENTS_PUBLISHED, unit=MetricUnit.Count, value=result.published)
    if result.refused_entries:
        metrics.add_metric(name=CHANGE_EVENTS_REFUSED, unit=MetricUnit.Count, value=result.refused_entries)
    if result.failed_sequence_number is not None:
        logger.warning("batch reported from its first unpublished record", extra=result.response())
    return result.response()
