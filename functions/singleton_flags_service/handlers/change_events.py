"""Change-events function: the table's stream in (audit records, change requests and the flags item, by the event
source mapping's filters); ``Flags Changed`` and ``Flag Change Request Updated`` EventBridge events out, and every
write to the flags item checked against the audit record of its version.

Thin: the record-to-event rules, the bounded PutEvents retries and the audit check live in
``singleton_flags_service.events``. The answer is a partial batch response (``ReportBatchItemFailures``): the
first record not published or not checked is reported, so Lambda retries from it; a function error makes Lambda
bisect the batch. Every PutEvents entry refused counts ``ChangeEventsRefused`` (alarmed); every unaudited write
counts ``UnauditedWrites`` (alarmed) and is logged at ERROR with its version and what differs; what Lambda's own
bounded retries cannot deliver ends in the mapping's on-failure queue (alarmed).
"""

import os
from collections.abc import Mapping
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from botocore.config import Config

from singleton_flags_service.contract import ChangeEventSettings
from singleton_flags_service.events import AuditCheck, ChangePublisher
from singleton_flags_service.observability import logger, metrics
from singleton_flags_service.vocabulary import CHANGE_EVENTS_PUBLISHED, CHANGE_EVENTS_REFUSED, UNAUDITED_WRITES

SETTINGS = ChangeEventSettings.from_env(os.environ)
# The publisher retries refused entries itself; botocore retries a failed call once more within it.
CLIENT_CONFIG = Config(connect_timeout=2, read_timeout=5, retries={"total_max_attempts": 2, "mode": "standard"})
READ_SECONDS = 2 * (2 + 5)  # one call's worst case under CLIENT_CONFIG: two attempts of connect and read
EVENTS_CLIENT = boto3.client("events", config=CLIENT_CONFIG)
DYNAMODB_CLIENT = boto3.client("dynamodb", config=CLIENT_CONFIG)
PUBLISHER = ChangePublisher(EVENTS_CLIENT.put_events, event_bus_name=SETTINGS.event_bus_name, stage=SETTINGS.stage)
AUDIT_CHECK = AuditCheck(DYNAMODB_CLIENT.get_item, table_name=SETTINGS.table_name)


def first_failure(event: Mapping[str, Any], *sequence_numbers: str | None) -> str | None:
    """Of the records reported, the one first in the batch (Lambda retries from it, and everything after it)."""
    reported = {number for number in sequence_numbers if number is not None}
    for record in event.get("Records", []):
        number = record.get("dynamodb", {}).get("SequenceNumber")
        if number in reported:
            return str(number)
    return None


@logger.inject_lambda_context
@metrics.log_metrics
def handler(event: Any, context: Any) -> dict[str, Any]:
    result = PUBLISHER.publish(event)
    # one audit record read takes at most READ_SECONDS (two attempts): none starts that the timeout would cut off
    check = AUDIT_CHECK.check(event, budget_seconds=context.get_remaining_time_in_millis() / 1000 - READ_SECONDS)
    for error in result.errors:
        logger.error("change event not published", extra={"error": error})
    for error in check.errors:
        logger.error("flags item write not checked", extra={"error": error})
    for unaudited in check.unaudited:
        logger.error("unaudited write to the flags item", extra=unaudited.log_fields())
    metrics.add_metric(name=CHANGE_EVENTS_PUBLISHED, unit=MetricUnit.Count, value=result.published)
    if result.refused_entries:
        metrics.add_metric(name=CHANGE_EVENTS_REFUSED, unit=MetricUnit.Count, value=result.refused_entries)
    if check.unaudited:
        metrics.add_metric(name=UNAUDITED_WRITES, unit=MetricUnit.Count, value=len(check.unaudited))
    failed = first_failure(event, result.failed_sequence_number, check.failed_sequence_number)
    if failed is None:
        return {"batchItemFailures": []}
    response = {"batchItemFailures": [{"itemIdentifier": failed}]}
    logger.warning("batch reported from its first unpublished or unchecked record", extra=response)
    return response
