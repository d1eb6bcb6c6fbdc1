"""Change events: one EventBridge event per version, made from the committed audit record.

The table's stream (``NEW_IMAGE``) carries every audit record the write path commits; a Lambda event source
mapping whose filter (``STREAM_FILTER``) lets through only INSERTs into the ``AUDIT#APP`` partition hands
them to the change-events function, which turns each record image into one ``Flags Changed`` event
(``change_event``) and sends them with ``PutEvents`` (``ChangePublisher``). Nothing here writes to the table,
and the write path never publishes: an event exists because its version committed.

Delivery is at least once and may be out of order (a retried batch is sent again, a consumer's rule may
deliver late): ``detail.version`` is the idempotency and ordering key. ``PutEvents`` answers per entry: an
entry it refused is sent again a bounded number of times, then the record it came from is reported as the
batch's first failure (``batchItemFailures``), so Lambda retries from that record, in order, and after its own
bounded retries hands the batch's description to the on-failure queue.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from singleton_flags.keys import AUDIT_PK, PARTITION_KEY
from singleton_flags_service.writes.audit import audit_record

SOURCE = "singleton-flags"
DETAIL_TYPE = "Flags Changed"
INSERT = "INSERT"
# The event source mapping's filter (Lambda FilterCriteria pattern): records of the audit partition that carry
# a new image, i.e. not the REMOVE a TTL expiry makes. It names the ``dynamodb`` key only, the one key a DynamoDB
# mapping filters on. ``is_change_record`` applies it again and requires an INSERT (an audit record is written
# once, never modified), so what the function and the local runner turn into events is decided in one place.
STREAM_FILTER: dict[str, Any] = {
    "dynamodb": {
        "Keys": {PARTITION_KEY: {"S": [AUDIT_PK]}},
        "NewImage": {PARTITION_KEY: {"S": [AUDIT_PK]}},
    },
}
MAX_ENTRIES_PER_CALL = 10  # PutEvents takes at most 10 entries per request
DEFAULT_ATTEMPTS = 3  # PutEvents calls per entry before its record is reported as failed
DEFAULT_BACKOFF_SECONDS = 0.2  # doubled after every attempt

PutEvents = Callable[..., Mapping[str, Any]]  # boto3's events client's put_events(Entries=[...])


def is_change_record(record: Mapping[str, Any]) -> bool:
    """Whether a stream record matches ``STREAM_FILTER`` and is an INSERT (a new audit record)."""
    stream = record.get("dynamodb", {})
    wanted = STREAM_FILTER["dynamodb"]
    return bool(
        record.get("eventName") == INSERT
        and stream.get("Keys", {}).get(PARTITION_KEY, {}).get("S") in wanted["Keys"][PARTITION_KEY]["S"]
        and stream.get("NewImage", {}).get(PARTITION_KEY, {}).get("S") in wanted["NewImage"][PARTITION_KEY]["S"]
    )


def change_event(image: Mapping[str, Any], *, stage: str) -> dict[str, Any]:
    """The ``detail`` of the event of one audit record (its stream ``NewImage``, DynamoDB-typed): plain JSON.

    ``changes`` is ``{name: {"old": value, "new": value}}`` as the record holds it; every kind passes through
    as recorded. ``previous_version`` is the version the change was made on (none before version 0).
    """
    record = audit_record(image)
    version = record["version"]
    return {
        "stage": stage,
        "version": version,
        "previous_version": version - 1 if version > 0 else None,
        "kind": record["kind"],
        "actor": record["actor"],
        "reason": record["reason"],
        "time": record["at"],
        "changes": record["changes"],
    }


def event_entry(detail: Mapping[str, Any], *, event_bus_name: str) -> dict[str, Any]:
    """One PutEvents entry for ``detail``; the event's time is the change's own."""
    return {
        "Source": SOURCE,
        "DetailType": DETAIL_TYPE,
        "Detail": json.dumps(detail, separators=(",", ":"), ensure_ascii=False),
        "EventBusName": event_bus_name,
        "Time": datetime.fromisoformat(detail["time"]),
    }


@dataclass(frozen=True, slots=True)
class _Pending:
    sequence_number: str
    entry: dict[str, Any] | None  # None: the record could not be turned into an event


@dataclass(slots=True)
class BatchResult:
    """What one batch of stream records came to."""

    published: int = 0
    refused_entries: int = 0  # entries PutEvents refused (or that a failed call carried), every attempt counted
    failed_sequence_number: str | None = None  # the first record not published: Lambda retries from it
    errors: list[str] = field(default_factory=list)

    def response(self) -> dict[str, list[dict[str, str]]]:
        """The function's answer to Lambda (ReportBatchItemFailures)."""
        if self.failed_sequence_number is None:
            return {"batchItemFailures": []}
        return {"batchItemFailures": [{"itemIdentifier": self.failed_sequence_number}]}


class ChangePublisher:
    """Turns a batch of stream records into ``Flags Changed`` events and sends them, in order.

    ``put_events`` is boto3's ``events`` client's ``put_events`` (the local runner passes its own in-memory
    bus). Records are sent in stream order, up to ten per call; an entry PutEvents refuses is sent again, with
    backoff, up to ``attempts`` calls in all. The first record still unpublished ends the batch: it is reported,
    and nothing after it is sent (Lambda sends it, and everything after it, again).
    """

    def __init__(
        self,
        put_events: PutEvents,
        *,
        event_bus_name: str,
        stage: str,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff_seconds: float = DEFAULT_BACKOFF_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self._put_events = put_events
        self._bus = event_bus_name
        self._stage = stage
        self._attempts = attempts
        self._backoff = backoff_seconds
        self._sleep = sleep

    def publish(self, event: Mapping[str, Any]) -> BatchResult:
        """Publish the change records of a DynamoDB stream event (``{"Records": [...]}``)."""
        result = BatchResult()
        pending = [self._pending(record, result) for record in event.get("Records", []) if is_change_record(record)]
        for start in range(0, len(pending), MAX_ENTRIES_PER_CALL):
            chunk = pending[start : start + MAX_ENTRIES_PER_CALL]
            failed = self._send(chunk, result)
            if failed is not None:
                result.failed_sequence_number = failed
                break
        return result

    def _pending(self, record: Mapping[str, Any], result: BatchResult) -> _Pending:
        stream = record["dynamodb"]
        try:
            detail = change_event(stream["NewImage"], stage=self._stage)
            entry: dict[str, Any] | None = event_entry(detail, event_bus_name=self._bus)
        except (KeyError, TypeError, ValueError) as exc:
            result.errors.append(f"record {stream.get('SequenceNumber')}: not an audit record image ({exc!r})")
            entry = None
        return _Pending(sequence_number=stream["SequenceNumber"], entry=entry)

    def _send(self, chunk: Sequence[_Pending], result: BatchResult) -> str | None:
        """Send ``chunk`` (at most ten); the sequence number of its first record left unpublished, or None."""
        sendable = list(_until_unconvertible(chunk))
        unsent = list(range(len(sendable)))  # indexes into sendable still to be published
        for attempt in range(1, self._attempts + 1):
            if not unsent:
                break
            if attempt > 1:
                self._sleep(self._backoff * 2 ** (attempt - 2))
            refused = self._call([sendable[index] for index in unsent], result)
            result.published += len(unsent) - len(refused)
            unsent = [unsent[position] for position in refused]
        if unsent:
            return sendable[unsent[0]].sequence_number
        if len(sendable) < len(chunk):  # a record that is no audit record image stops the batch there
            return chunk[len(sendable)].sequence_number
        return None

    def _call(self, items: Sequence[_Pending], result: BatchResult) -> list[int]:
        """One PutEvents call; the positions (in ``items``) of the entries it did not accept."""
        entries = [item.entry for item in items if item.entry is not None]
        try:
            answer = self._put_events(Entries=entries)
        except Exception as exc:  # noqa: BLE001 - any failed call (throttled, unreachable...) is retried, bounded
            result.errors.append(f"PutEvents failed: {type(exc).__name__}: {exc}")
            result.refused_entries += len(entries)
            return list(range(len(items)))
        answered = list(answer.get("Entries", []))
        refused = [
            position
            for position in range(len(items))
            # the answer lists one result per entry, in order; a missing or id-less one was not accepted
            if position >= len(answered) or "ErrorCode" in answered[position] or "EventId" not in answered[position]
        ]
        if answer.get("FailedEntryCount", 0) and not refused:  # a count without a refused entry: trust the count
            refused = list(range(len(items)))
        for position in refused:
            if position < len(answered):
                code, message = answered[position].get("ErrorCode"), answered[position].get("ErrorMessage")
                result.errors.append(f"record {items[position].sequence_number}: refused ({code}: {message})")
        result.refused_entries += len(refused)
        return refused


def _until_unconvertible(chunk: Iterable[_Pending]) -> Iterable[_Pending]:
    for item in chunk:
        if item.entry is None:
            return
        yield item
