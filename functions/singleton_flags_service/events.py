"""Change events: one EventBridge event per version, made from the committed audit record; one per state change
of a change request; and the check that every write to the flags item has its audit record.

The table's stream (``NEW_IMAGE``) carries every item the service writes; a Lambda event source mapping whose
filters (``STREAM_FILTERS``) let through the ``AUDIT#APP``, ``CHANGE_REQUEST#APP`` and ``SETTINGS#APP``
partitions hands them to the change-events function:

- each new audit record becomes one ``Flags Changed`` event (``change_event``);
- each new or modified change request becomes one ``Flag Change Request Updated`` event
  (``change_request_event``): created, approved (an approval that is not the last), applied, rejected,
  withdrawn, expired or stale, as the request's item records it;
- each new image of the flags item is checked against the audit record of its version (``AuditCheck``): a
  missing record, or one whose state differs from the item, is an unaudited write (someone with table rights
  calling UpdateItem directly), logged and counted (``UnauditedWrites``, alarmed).

Events are sent with ``PutEvents`` (``ChangePublisher``). Nothing here writes to the table, and the write path
never publishes: an event exists because what it tells committed.

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

from singleton_flags.codec import decode_plain
from singleton_flags.declarations import parse_declarations
from singleton_flags.keys import (
    AUDIT_PK,
    CHANGE_REQUEST_PK,
    MIGRATED_FROM_ATTR,
    MIGRATED_TO_ATTR,
    MIGRATION_MAPPING_ATTR,
    PARTITION_KEY,
    SINGLETON_PK,
    SINGLETON_SK,
    SORT_KEY,
    SUPERSEDED_BY_ATTR,
    VERSION_ATTR,
    audit_key,
    migration_key,
)
from singleton_flags_service.approvals.models import PENDING, ChangeRequest
from singleton_flags_service.errors import RequestAltered
from singleton_flags_service.writes.audit import BOOKKEEPING_IN_STATE, STATE_ATTR, audit_record
from singleton_flags_service.writes.seam import EXPANDING, Seam

SOURCE = "singleton-flags"
DETAIL_TYPE = "Flags Changed"
CHANGE_REQUEST_DETAIL_TYPE = "Flag Change Request Updated"
DETAIL_TYPES = (DETAIL_TYPE, CHANGE_REQUEST_DETAIL_TYPE)
INSERT = "INSERT"
MODIFY = "MODIFY"
CREATED = "created"  # a change request's first transition (its INSERT)
APPROVED = "approved"  # an approval that is not the last (the request stays pending)
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
# Change requests: every new image of the partition (created, and each state change or approval after it).
CHANGE_REQUEST_STREAM_FILTER: dict[str, Any] = {
    "dynamodb": {
        "Keys": {PARTITION_KEY: {"S": [CHANGE_REQUEST_PK]}},
        "NewImage": {PARTITION_KEY: {"S": [CHANGE_REQUEST_PK]}},
    },
}
# The flags item: every new image, to be checked against the audit record of its version (``AuditCheck``).
FLAGS_ITEM_STREAM_FILTER: dict[str, Any] = {
    "dynamodb": {
        "Keys": {PARTITION_KEY: {"S": [SINGLETON_PK]}},
        "NewImage": {PARTITION_KEY: {"S": [SINGLETON_PK]}},
    },
}
# The mapping's filters (a record matching any one of them invokes the function).
STREAM_FILTERS: tuple[dict[str, Any], ...] = (STREAM_FILTER, CHANGE_REQUEST_STREAM_FILTER, FLAGS_ITEM_STREAM_FILTER)
MAX_ENTRIES_PER_CALL = 10  # PutEvents takes at most 10 entries per request
DEFAULT_ATTEMPTS = 3  # PutEvents calls per entry before its record is reported as failed
DEFAULT_BACKOFF_SECONDS = 0.2  # doubled after every attempt

PutEvents = Callable[..., Mapping[str, Any]]  # boto3's events client's put_events(Entries=[...])


def _matches(record: Mapping[str, Any], stream_filter: Mapping[str, Any]) -> bool:
    stream = record.get("dynamodb", {})
    wanted = stream_filter["dynamodb"]
    return bool(
        stream.get("Keys", {}).get(PARTITION_KEY, {}).get("S") in wanted["Keys"][PARTITION_KEY]["S"]
        and stream.get("NewImage", {}).get(PARTITION_KEY, {}).get("S") in wanted["NewImage"][PARTITION_KEY]["S"]
    )


def is_change_record(record: Mapping[str, Any]) -> bool:
    """Whether a stream record matches ``STREAM_FILTER`` and is an INSERT (a new audit record)."""
    return record.get("eventName") == INSERT and _matches(record, STREAM_FILTER)


def is_change_request_record(record: Mapping[str, Any]) -> bool:
    """Whether a stream record is a change request's new image (an INSERT or a MODIFY, never a TTL's REMOVE)."""
    return record.get("eventName") in (INSERT, MODIFY) and _matches(record, CHANGE_REQUEST_STREAM_FILTER)


def is_flags_item_record(record: Mapping[str, Any]) -> bool:
    """Whether a stream record is a new image of the flags item (an INSERT or a MODIFY)."""
    return record.get("eventName") in (INSERT, MODIFY) and _matches(record, FLAGS_ITEM_STREAM_FILTER)


def is_published_record(record: Mapping[str, Any]) -> bool:
    """Whether a stream record becomes an event: a new audit record or a change request's new image."""
    return is_change_record(record) or is_change_request_record(record)


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


def change_request_event(image: Mapping[str, Any], event_name: str, *, stage: str) -> dict[str, Any] | None:
    """The ``detail`` of the event of one change request's new image, or None when the image records no
    transition (a pending request modified without a new approval).

    ``transition`` is what happened: ``created`` (the INSERT of a pending request), ``approved`` (an approval
    that is not the last: the request stays pending), or the state the request moved to (``applied``,
    ``rejected``, ``withdrawn``, ``expired``, ``stale``; a break-glass request is inserted already ``applied``).
    ``flags`` names the flags the request touches, never their values: the request itself
    (``GET /flags/change-requests/{id}``) and the ``Flags Changed`` event of the version it applied hold them.
    ``RequestAltered`` for an item whose content no longer hashes to its id.
    """
    request = ChangeRequest.from_item(image)
    content = request.content
    if request.state != PENDING:
        transition = request.state
    elif event_name == INSERT:
        transition = CREATED
    elif request.approvals:
        transition = APPROVED
    else:
        return None
    approval = dict(request.approvals[-1]) if transition == APPROVED else None
    decided = dict(request.decided) if request.decided is not None else None
    if transition == CREATED:
        at = str(content["created_at"])
    elif approval is not None:
        at = approval["at"]
    else:
        at = decided["at"] if decided is not None else str(content["created_at"])
    return {
        "stage": stage,
        "id": request.id,
        "transition": transition,
        "state": request.state,
        "kind": request.kind,
        "author": request.author,
        "reason": request.reason,
        "flags": sorted(request.flags),
        "protected_flags": list(content["protected_flags"]),
        "required_approvals": request.required_approvals,
        "approvals": [dict(approval) for approval in request.approvals],
        "approved_by": approval,
        "decided": decided,
        "base_version": request.base_version,
        "applied_version": request.applied_version,
        "expires_at": content["expires_at"],
        "time": at,
    }


def event_entry(detail: Mapping[str, Any], *, event_bus_name: str, detail_type: str = DETAIL_TYPE) -> dict[str, Any]:
    """One PutEvents entry for ``detail``; the event's time is the change's own."""
    return {
        "Source": SOURCE,
        "DetailType": detail_type,
        "Detail": json.dumps(detail, separators=(",", ":"), ensure_ascii=False),
        "EventBusName": event_bus_name,
        "Time": datetime.fromisoformat(detail["time"]),
    }


@dataclass(frozen=True, slots=True)
class _Pending:
    sequence_number: str
    entry: dict[str, Any] | None  # None: the record could not be turned into an event
    skip: bool = False  # the record tells nothing to publish


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
    """Turns a batch of stream records into ``Flags Changed`` and ``Flag Change Request Updated`` events and
    sends them, in order.

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
        converted = [
            self._pending(record, result) for record in event.get("Records", []) if is_published_record(record)
        ]
        pending = [item for item in converted if not item.skip]
        for start in range(0, len(pending), MAX_ENTRIES_PER_CALL):
            chunk = pending[start : start + MAX_ENTRIES_PER_CALL]
            failed = self._send(chunk, result)
            if failed is not None:
                result.failed_sequence_number = failed
                break
        return result

    def _pending(self, record: Mapping[str, Any], result: BatchResult) -> _Pending:
        stream = record["dynamodb"]
        sequence_number = stream["SequenceNumber"]
        if is_change_request_record(record):
            return self._change_request(record, result)
        try:
            detail = change_event(stream["NewImage"], stage=self._stage)
            entry: dict[str, Any] | None = event_entry(detail, event_bus_name=self._bus)
        except (KeyError, TypeError, ValueError) as exc:
            result.errors.append(f"record {sequence_number}: not an audit record image ({exc!r})")
            entry = None
        return _Pending(sequence_number=sequence_number, entry=entry)

    def _change_request(self, record: Mapping[str, Any], result: BatchResult) -> _Pending:
        stream = record["dynamodb"]
        sequence_number = stream["SequenceNumber"]
        try:
            detail = change_request_event(stream["NewImage"], record["eventName"], stage=self._stage)
        except RequestAltered as exc:  # refused by every route; no retry makes it an event
            result.errors.append(f"record {sequence_number}: {exc}")
            return _Pending(sequence_number=sequence_number, entry=None, skip=True)
        except (KeyError, TypeError, ValueError) as exc:
            result.errors.append(f"record {sequence_number}: not a change request image ({exc!r})")
            return _Pending(sequence_number=sequence_number, entry=None)
        if detail is None:
            return _Pending(sequence_number=sequence_number, entry=None, skip=True)
        entry = event_entry(detail, event_bus_name=self._bus, detail_type=CHANGE_REQUEST_DETAIL_TYPE)
        return _Pending(sequence_number=sequence_number, entry=entry)

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
        if len(sendable) < len(chunk):  # a record that cannot be turned into its event stops the batch there
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


# ---------------------------------------------------------------------------------------------- unaudited writes

GetItem = Callable[..., Mapping[str, Any]]  # boto3's dynamodb client's get_item(TableName=..., Key=...)
NO_RECORD = "no audit record for its version"
DIFFERS = "its flags differ from the audit record of its version"


@dataclass(frozen=True, slots=True)
class UnauditedWrite:
    """A new image of the flags item that no audit record accounts for."""

    sequence_number: str
    version: int | None  # None: the item carries no version
    problem: str
    changed: dict[str, dict[str, Any]]  # name -> {"recorded": value in the record, "item": value in the item}

    def log_fields(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "problem": self.problem,
            "record_missing": self.problem == NO_RECORD,
            "changed": self.changed,
            "sequence_number": self.sequence_number,
        }


@dataclass(slots=True)
class CheckResult:
    """What checking one batch's flags-item images came to."""

    checked: int = 0
    unaudited: list[UnauditedWrite] = field(default_factory=list)
    failed_sequence_number: str | None = None  # the first image not checked (its record could not be read)
    errors: list[str] = field(default_factory=list)


def _plain(attribute: Mapping[str, Any] | None) -> Any:
    return None if attribute is None else decode_plain(dict(attribute))


class AuditCheck:
    """Checks each new image of the flags item against the audit record of its version.

    Every version the service writes commits with its audit record in one transaction (``TransactWriteItems``),
    so when the item's stream record is read the record exists. An image is an unaudited write when the record
    of its version is missing, or when a flag (or the maintenance bookkeeping the record keeps) differs from the
    record's ``state``. Not checked: version 0 (the seed's first item has no record of its own), and an item
    carrying the superseded marker (readers serve the fallbacks, never its values). A write that changes neither
    the version nor the flags (the superseded marker, ``updated_at``, a TTL) matches its version's record.
    """

    def __init__(self, get_item: GetItem, *, table_name: str) -> None:
        self._get_item = get_item
        self._table = table_name

    def check(
        self,
        event: Mapping[str, Any],
        *,
        budget_seconds: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> CheckResult:
        """Check the flags item's new images in a DynamoDB stream event, in order; stop at the first whose record
        could not be read, or that ``budget_seconds`` (the invocation's time left for reads) no longer covers: it
        is reported, so Lambda retries from it."""
        result = CheckResult()
        started = monotonic()
        for record in event.get("Records", []):
            if not is_flags_item_record(record):
                continue
            stream = record["dynamodb"]
            if budget_seconds is not None and monotonic() - started >= budget_seconds:
                result.errors.append(f"record {stream.get('SequenceNumber')}: no time left to read its audit record")
                result.failed_sequence_number = stream["SequenceNumber"]
                break
            try:
                found = self.unaudited(stream["NewImage"], stream["SequenceNumber"])
            except Exception as exc:  # noqa: BLE001 - any failed read (throttled, unreachable...) is retried by Lambda
                result.errors.append(f"record {stream.get('SequenceNumber')}: audit record not read ({exc!r})")
                result.failed_sequence_number = stream["SequenceNumber"]
                break
            result.checked += 1
            if found is not None:
                result.unaudited.append(found)
        return result

    def unaudited(self, image: Mapping[str, Any], sequence_number: str) -> UnauditedWrite | None:
        """The unaudited write ``image`` is, or None when its version's audit record accounts for it."""
        if SUPERSEDED_BY_ATTR in image:
            return None
        raw_version = image.get(VERSION_ATTR, {}).get("N")
        if raw_version is None:
            return UnauditedWrite(sequence_number, None, "the item carries no version", {})
        version = int(raw_version)
        if version == 0:
            return None
        answer = self._get_item(TableName=self._table, Key=audit_key(version), ConsistentRead=True)
        record = answer.get("Item")
        if record is None:
            return UnauditedWrite(sequence_number, version, NO_RECORD, {})
        written, item = record.get("item", {}).get("S", SINGLETON_SK), image.get(SORT_KEY, {}).get("S")
        state = record.get(STATE_ATTR, {}).get("M", {})
        migrations: dict[str, dict[str, Any]] = {}  # the migration records this image is checked against
        if written != item:
            mirrored = self._mirrored(item, written, state, migrations)
            if mirrored is None:
                return UnauditedWrite(sequence_number, version, DIFFERS, {"item": {"recorded": written, "item": item}})
            state = mirrored
        changed = {
            name: {"recorded": _plain(state.get(name)), "item": _plain(image.get(name))}
            for name in sorted({*state, *BOOKKEEPING_IN_STATE})
            if _plain(state.get(name)) != _plain(image.get(name))
        }
        changed.update(self._pointers(image, item, migrations))
        return UnauditedWrite(sequence_number, version, DIFFERS, changed) if changed else None

    def _migration(self, target: str, migrations: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The record of the migration into ``target`` ({} when none), read once per image checked."""
        if target not in migrations:
            answer = self._get_item(TableName=self._table, Key=migration_key(target), ConsistentRead=True)
            migrations[target] = answer.get("Item") or {}
        return migrations[target]

    def _pointers(
        self, image: Mapping[str, Any], item: str | None, migrations: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """A migration's attributes on the image against the migration's record: the earlier item's pointer and
        mapping (what its readers follow), the later item's ``migrated_from`` while it expands (what its writers
        mirror by). A change of either outside the service is an unaudited write."""
        pointer = image.get(MIGRATED_TO_ATTR, {}).get("S")
        if item is None or (pointer is None and item == SINGLETON_SK):
            return {}
        migration = self._migration(pointer if pointer is not None else item, migrations)
        if pointer is not None:
            recorded = (migration.get("target", {}).get("S"), migration.get("mapping", {}).get("S"))
            held = (pointer, image.get(MIGRATION_MAPPING_ATTR, {}).get("S"))
            return {} if held == recorded else {"migration_pointer": {"recorded": recorded[0], "item": pointer}}
        expanding = migration.get("state", {}).get("S") == EXPANDING
        source = migration.get("source", {}).get("S")
        if expanding and image.get(MIGRATED_FROM_ATTR, {}).get("S") != source:
            return {MIGRATED_FROM_ATTR: {"recorded": source, "item": _plain(image.get(MIGRATED_FROM_ATTR))}}
        return {}

    def _mirrored(
        self, item: str | None, written: str, state: Mapping[str, Any], migrations: dict[str, dict[str, Any]]
    ) -> dict[str, Any] | None:
        """What the earlier item of a migration holds when it mirrors the later one's recorded ``state`` (while the
        migration expands, and as a rollback leaves it), seen through the migration's mapping (its record: the
        mapping and the earlier declarations), whatever the record says now; None when no migration joins ``item``
        to ``written`` (then its own record should have named it)."""
        if item is None:
            return None
        migration = self._migration(written, migrations)
        if migration.get("source", {}).get("S") != item:
            return None
        declarations = parse_declarations(json.loads(migration["source_declarations"]["S"]))
        seam = Seam.from_record(item, declarations, migration)
        view = seam.view(state)
        mirrored = {name: value for name, value in view.items() if name not in (PARTITION_KEY, SORT_KEY)}
        mirrored.update({name: {"NULL": True} for name in declarations if name not in mirrored})  # held: unaudited
        return mirrored
