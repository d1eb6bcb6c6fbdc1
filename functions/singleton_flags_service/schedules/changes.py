"""Scheduled changes: a change of the flags asked for now and applied by EventBridge Scheduler at a set time.

Each is one item ``SCHEDULE#APP / SCHEDULE#<id>`` (its own partition: never on the read path) plus one
one-time Scheduler schedule (``singleton_flags_service.schedules.one_time``) named ``change-<id>`` whose payload is only
``{"scheduled_change": "<id>"}``. The item is the truth; the schedule is only its trigger.

Life of an item (``status``):

- ``pending``: created by ``POST /flags/schedules`` (who and when on the item);
- ``applied``: the change committed, in the same transaction as this status
(``singleton_flags_service.schedules.apply``),
  with the version it wrote (none when the values already held);
- ``skipped``: ``if_version`` no longer matched when it came due (the reason on the item, no version);
- ``failed``: it could not apply (a flag no longer declared, a value no longer valid, the item too large), or
  its schedule could not be created;
- ``cancelled``: ``DELETE /flags/schedules/{id}`` while pending (who and when on the item).

Only ``pending`` moves, and every move is conditioned on ``status = pending``: of a cancellation and a delivery
racing, exactly one wins, and a second delivery finds nothing to do.

Order of creation, so that a failure leaves nothing that could fire unseen: the item is written first (pending),
then the schedule. If the schedule cannot be created, the item is marked ``failed`` (and a schedule that may
have been created despite the error is deleted, best effort): a schedule without a pending item applies nothing.
Cancellation is the reverse: the item is marked ``cancelled`` first, then its schedule deleted (best effort: a
leftover schedule finds a cancelled item, does nothing, and Scheduler deletes it after it fires).

With an ``Idempotency-Key``, the key's item (naming the change's id, which names its schedule and ClientToken) is
put in the same transaction as the pending item: a retry, a concurrent duplicate, or a retry after a lost answer
gets the same change back (``Idempotent-Replayed``) and never a second one. A duplicate that finds its change
still pending and due later creates the schedule again under the same name and ClientToken (Scheduler answers a
repeat as the same schedule), so a request that stopped between the item and the schedule is completed by its
retry. A change whose schedule could not be created is marked ``failed`` and its key released in one
transaction: the answer was a failure, and the retry is a new attempt.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from singleton_flags.codec import decode_plain, encode_plain, iso_time
from singleton_flags.keys import PARTITION_KEY, SCHEDULE_PK, SCHEDULE_SK_PREFIX, SORT_KEY, TTL_ATTR, schedule_key
from singleton_flags_service import work
from singleton_flags_service.errors import (
    InvalidRequest,
    ScheduleNotFound,
    ScheduleNotPending,
    SchedulerFault,
    SchedulerUnavailable,
    StoreUnavailable,
)
from singleton_flags_service.observability import logger
from singleton_flags_service.schedules.one_time import OneTimeSchedules
from singleton_flags_service.schedules.timing import ScheduleTime, check_lead
from singleton_flags_service.writes import transaction
from singleton_flags_service.writes.idempotency import Idempotency

PENDING = "pending"
APPLIED = "applied"
SKIPPED = "skipped"
FAILED = "failed"
CANCELLED = "cancelled"
STATUSES = (PENDING, APPLIED, SKIPPED, FAILED, CANCELLED)

PAYLOAD_KEY = "scheduled_change"  # the schedule's payload: {"scheduled_change": "<id>"}
SCHEDULE_NAME_PREFIX = "change-"
ID_PATTERN = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}")  # creation time (sorts by it) + 32 random bits
MAX_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20

# A change scheduled by an approved change request (``singleton_flags_service.approvals.store``): the request's id,
# its approvals and the values it is bound to, which must still hold when it comes due (else it is skipped). Only
# such a change may touch a protected flag when it is delivered (a version of kind ``change_request_applied``).
CHANGE_REQUEST_ATTR = "change_request"
FROM_REQUEST = (CHANGE_REQUEST_ATTR, "approved_by", "base_values")

# Attributes of a schedule's item beyond its key (low-level names: the item is built and read here only).
_PLAIN = ("id", "status", "reason", "at", "local_time", "timezone", "created_by", "created_at")
_OPTIONAL = ("if_version", "cancelled_by", "cancelled_at", "finished_at", "version", "detail", *FROM_REQUEST)


def schedule_name(schedule_id: str) -> str:
    """The Scheduler schedule of a scheduled change (in the stack's group)."""
    return SCHEDULE_NAME_PREFIX + schedule_id


def due_at(change: ScheduledChange) -> float:
    """Epoch seconds at which the change's schedule fires."""
    return datetime.fromisoformat(change.at).timestamp()


def create_schedule(schedules: OneTimeSchedules, change: ScheduledChange) -> str:
    """The change's one-time schedule, created (or found: the same name is the same ClientToken), from its item
    alone: the write API and the reconciler (``singleton_flags_service.reconcile``) send the same
    request."""
    return schedules.create(
        schedule_name(change.id),
        datetime.fromisoformat(change.at),
        "UTC",  # the instant, already resolved from the local time and zone (schedule_time)
        {PAYLOAD_KEY: change.id},
        description=f"singleton-flags scheduled change {change.id}: {change.reason}",
    )


def new_id(now: float) -> str:
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now))}-{secrets.token_hex(4)}"


def actor_of(schedule_id: str) -> str:
    """Who a scheduled change's version is by, in the audit trail."""
    return f"schedule:{schedule_id}"


@dataclass(frozen=True, slots=True)
class ScheduledChange:
    """One item, decoded: what the API answers (``as_json``) and what the apply reads."""

    id: str
    status: str
    flags: dict[str, Any]
    reason: str
    at: str  # the UTC instant it applies, RFC 3339
    local_time: str  # as asked for, in ``timezone``
    timezone: str
    created_by: str
    created_at: str
    if_version: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # cancelled_by/at, finished_at, version, detail; FROM_REQUEST

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> ScheduledChange:
        plain = {name: decode_plain(item[name]) for name in (*_PLAIN, *_OPTIONAL, "flags") if name in item}
        return cls(
            id=plain["id"],
            status=plain["status"],
            flags=plain.get("flags", {}),
            reason=plain["reason"],
            at=plain["at"],
            local_time=plain["local_time"],
            timezone=plain["timezone"],
            created_by=plain["created_by"],
            created_at=plain["created_at"],
            if_version=plain.get("if_version"),
            extra={name: plain[name] for name in _OPTIONAL if name in plain and name != "if_version"},
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "flags": self.flags,
            "reason": self.reason,
            "at": self.at,
            "local_time": self.local_time,
            "timezone": self.timezone,
            "if_version": self.if_version,
            "created_by": self.created_by,
            "created_at": self.created_at,
            **self.extra,
        }


class ScheduleItems:
    """The items of the ``SCHEDULE#APP`` partition: written, read, finished (only from pending), listed."""

    def __init__(self, client: Any, table_name: str, *, retention_seconds: int) -> None:
        self._client = client
        self._table = table_name
        self._retention_seconds = retention_seconds

    def put_pending(
        self,
        schedule_id: str,
        changes: Mapping[str, Any],
        reason: str,
        when: ScheduleTime,
        if_version: int | None,
        actor: str,
        now: float,
        idempotency: Idempotency | None = None,
    ) -> dict[str, Any]:
        """Write the pending item, counted as pending work (``work``), with its key's item when the request has
        one, in one transaction; ``transaction.Conflict`` when the id, or the key, is taken."""
        put = self.pending_put(schedule_id, changes, reason, when, if_version, actor, now)
        entries = [{"Put": put}, work.created(self._table)]  # pending work: counted for the migration (work.py)
        if idempotency is not None:
            entries.append({"Put": idempotency.put(self._table, now, {"schedule": schedule_id})})
        self._send(entries, "the scheduled change")
        return dict(put["Item"])

    def pending_put(
        self,
        schedule_id: str,
        changes: Mapping[str, Any],
        reason: str,
        when: ScheduleTime,
        if_version: int | None,
        actor: str,
        now: float,
        from_request: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The ``Put`` of a new pending item (conditioned on its id being new), sent alone or in a transaction with
        what it records; ``from_request``: the FROM_REQUEST attributes of a change an approved request schedules."""
        item: dict[str, Any] = {
            **schedule_key(schedule_id),
            "id": {"S": schedule_id},
            "status": {"S": PENDING},
            "flags": encode_plain(dict(changes)),
            "reason": {"S": reason},
            "at": {"S": when.iso},
            "local_time": {"S": when.local},
            "timezone": {"S": when.timezone},
            "created_by": {"S": actor},
            "created_at": {"S": iso_time(now)},
            # kept as long as the audit trail keeps the version it may write
            TTL_ATTR: {"N": str(int(when.utc.timestamp()) + self._retention_seconds)},
        }
        if if_version is not None:
            item["if_version"] = {"N": str(if_version)}
        for name, value in (from_request or {}).items():
            if name not in FROM_REQUEST:
                raise ValueError(f"{name!r} is not an attribute of a change scheduled by a request")
            item[name] = encode_plain(value)
        return {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
        }

    def get_key(self, idempotency: Idempotency) -> dict[str, Any] | None:
        item: dict[str, Any] | None = transaction.call(
            self._client, "get_item", TableName=self._table, Key=idempotency.key, ConsistentRead=True
        ).get("Item")
        return item

    def fail_and_release(self, schedule_id: str, idempotency: Idempotency, now: float, detail: str) -> bool:
        """Mark a pending item failed and forget its key's answer, together; False when it was no longer pending."""
        entries = [
            {"Update": self.finish_update(schedule_id, FAILED, now, detail=detail)},
            {"Update": idempotency.release(self._table)},
        ]
        try:
            self._send(entries, "the failed scheduled change")
        except transaction.Conflict:
            return False
        return True

    def _send(self, entries: list[dict[str, Any]], what: str) -> None:
        """One transaction (resent with its token after a lost answer); ``transaction.Conflict`` on a condition."""
        request = {"TransactItems": entries, "ClientRequestToken": secrets.token_hex(16)}
        try:
            transaction.send(self._client, request, transaction.Budget(None, time.monotonic, 0.0))
        except transaction.Lost as lost:
            raise StoreUnavailable(
                f"the write of {what} was sent but DynamoDB's answer was lost ({lost.cause}); a retry with the "
                "same Idempotency-Key is safe"
            ) from lost

    def get(self, schedule_id: str) -> ScheduledChange | None:
        item = transaction.call(
            self._client, "get_item", TableName=self._table, Key=schedule_key(schedule_id), ConsistentRead=True
        ).get("Item")
        return ScheduledChange.from_item(item) if item is not None else None

    def finish_update(self, schedule_id: str, status: str, now: float, **attributes: Any) -> dict[str, Any]:
        """The ``Update`` moving a pending item to ``status`` (with ``attributes``), conditioned on pending:
        sent alone (``finish``) or inside a transaction with the change it records."""
        sets = {"status": status, "finished_at": iso_time(now), **attributes}
        if status == CANCELLED:
            sets.pop("finished_at")
        names = {"#status": "status", **{f"#a{i}": name for i, name in enumerate(sets)}}
        values = {
            ":pending": {"S": PENDING},
            **{f":a{i}": encode_plain(value) for i, value in enumerate(sets.values())},
        }
        return {
            "TableName": self._table,
            "Key": schedule_key(schedule_id),
            "UpdateExpression": "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(sets))),
            "ConditionExpression": "#status = :pending",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

    def finish(self, schedule_id: str, status: str, now: float, **attributes: Any) -> bool:
        """Move a pending item to ``status``; False when it was no longer pending (nothing written)."""
        try:
            transaction.call(
                self._client,
                "update_item",
                conditional=True,
                **self.finish_update(schedule_id, status, now, **attributes),
            )
        except transaction.Conflict:
            return False
        return True

    def pending(self) -> list[ScheduledChange]:
        """Every pending change, oldest first (a Query on the schedules' partition, filtered: items expire by TTL
        after their retention, so the partition stays small)."""
        params: dict[str, Any] = {
            **self._query(),
            "FilterExpression": "#status = :pending",
            "ConsistentRead": True,
        }
        params["ExpressionAttributeNames"]["#status"] = "status"
        params["ExpressionAttributeValues"][":pending"] = {"S": PENDING}
        return transaction.query_all(self._client, params, ScheduledChange.from_item)

    def mark_overdue(self, schedule_id: str, now: float) -> bool:
        """Record, once, that a pending change's time passed unapplied; False when it is no longer pending or was
        already recorded (so each overdue change is counted once)."""
        return mark_overdue_item(self._client, self._table, schedule_key(schedule_id), "status", PENDING, now)

    def _query(self) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": SCHEDULE_PK}, ":prefix": {"S": SCHEDULE_SK_PREFIX}},
        }

    def page(self, limit: int, cursor: str | None) -> tuple[list[ScheduledChange], str | None]:
        """Newest first (ids sort by creation time), ``limit`` at a time; one more is read than asked, so the
        last page never hands out a cursor to an empty page."""
        params: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": SCHEDULE_PK}, ":prefix": {"S": SCHEDULE_SK_PREFIX}},
            "ScanIndexForward": False,
            "ConsistentRead": True,
            "Limit": limit + 1,
        }
        if cursor is not None:
            params["ExclusiveStartKey"] = schedule_key(decode_cursor(cursor))
        items = transaction.call(self._client, "query", **params).get("Items", [])
        page = [ScheduledChange.from_item(item) for item in items[:limit]]
        return page, (encode_cursor(page[-1].id) if len(items) > limit else None)


OVERDUE_ATTR = "overdue_reported_at"  # when the reconciler found the item's time passed unapplied


def mark_overdue_item(client: Any, table: str, key: dict[str, Any], state: str, open_state: str, now: float) -> bool:
    """Set ``OVERDUE_ATTR`` on an item still in ``open_state`` that has none; False when it was not written."""
    try:
        transaction.call(
            client,
            "update_item",
            conditional=True,
            TableName=table,
            Key=key,
            UpdateExpression="SET #overdue = :now",
            ConditionExpression="#state = :open AND attribute_not_exists(#overdue)",
            ExpressionAttributeNames={"#overdue": OVERDUE_ATTR, "#state": state},
            ExpressionAttributeValues={":now": {"S": iso_time(now)}, ":open": {"S": open_state}},
        )
    except transaction.Conflict:
        return False
    return True


def encode_cursor(schedule_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"id": schedule_id}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        schedule_id = payload["id"]
        if not isinstance(schedule_id, str) or not ID_PATTERN.fullmatch(schedule_id):
            raise ValueError(schedule_id)
        return schedule_id
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidRequest("'cursor' is not a cursor this API gave out", rule="cursor") from exc


class ScheduledChanges:
    """What the write API does with scheduled changes: create, list, cancel."""

    def __init__(
        self,
        items: ScheduleItems,
        schedules: OneTimeSchedules,
        *,
        landing: Callable[[Mapping[str, Any], str], None],
        clock: Callable[[], float] = time.time,
        make_id: Callable[[float], str] = new_id,
    ) -> None:
        """``landing`` refuses, for its creator, changes whose write could not land as the flags stand now (the
        store's ``check_landing``): a scheduled change is checked against the shape its write will land in when it
        is created, and again by that write when it is delivered."""
        self._items = items
        self._schedules = schedules
        self._landing = landing
        self._clock = clock
        self._make_id = make_id

    def create(
        self,
        changes: Mapping[str, Any],
        reason: str,
        when: ScheduleTime,
        if_version: int | None,
        actor: str,
        idempotency: Idempotency | None = None,
    ) -> tuple[ScheduledChange, bool]:
        """``changes`` and ``reason`` already validated (as PATCH validates them); ``when`` parsed. Returns the
        pending change and whether it is the answer of an earlier request with the same Idempotency-Key."""
        if idempotency is not None:
            replayed = self._replay(idempotency)
            if replayed is not None:
                return replayed, True
        now = self._clock()
        check_lead(when, now)
        self._landing(changes, actor)
        schedule_id = self._make_id(now)
        try:
            item = self._items.put_pending(schedule_id, changes, reason, when, if_version, actor, now, idempotency)
        except transaction.Conflict:
            replayed = self._replay(idempotency) if idempotency is not None else None
            if replayed is not None:  # a concurrent duplicate with the same key was first
                return replayed, True
            raise StoreUnavailable("a scheduled change with the same id was created at this moment; retry") from None
        change = ScheduledChange.from_item(item)
        try:
            self._schedule(change)
        except (SchedulerUnavailable, SchedulerFault) as exc:
            self._discard(schedule_id, schedule_name(schedule_id), exc, idempotency)
            raise
        logger.info("scheduled change created", schedule=schedule_id, at=when.iso, flags=sorted(changes), actor=actor)
        return change, False

    def _schedule(self, change: ScheduledChange) -> None:
        create_schedule(self._schedules, change)

    def _replay(self, idempotency: Idempotency) -> ScheduledChange | None:
        """The change an earlier request with this key created, as it is now (None: the key is new). A pending
        change still due later gets its schedule created again (the same name: no second schedule), in case
        that request stopped before creating it."""
        answer = idempotency.remembered(self._items.get_key(idempotency), self._clock())
        if answer is None:
            return None
        change = self._items.get(str(answer["schedule"]))
        if change is None:  # expired from the table with its key still remembered: nothing to answer with
            return None
        if change.status == PENDING and datetime.fromisoformat(change.at).timestamp() > self._clock() + 60:
            self._schedule(change)
        return change

    def _discard(
        self,
        schedule_id: str,
        name: str,
        cause: SchedulerUnavailable | SchedulerFault,
        idempotency: Idempotency | None = None,
    ) -> None:
        """The schedule could not be created: the item is marked failed, so nothing can apply it (and its key, if
        any, released: a retry is a new attempt); a schedule that may exist despite the error (a lost answer) is
        deleted, best effort."""
        try:
            self._schedules.delete(name)
        except (SchedulerUnavailable, SchedulerFault):
            logger.warning("a schedule that may exist could not be deleted; it would find a failed item", schedule=name)
        detail = f"its schedule could not be created: {cause.message}"
        if idempotency is None:
            marked = self._items.finish(schedule_id, FAILED, self._clock(), detail=detail)
        else:
            marked = self._items.fail_and_release(schedule_id, idempotency, self._clock(), detail)
        logger.error(
            "scheduled change not created: Scheduler failed", schedule=schedule_id, error=cause.message, marked=marked
        )

    def list(
        self, limit: int = DEFAULT_LIST_LIMIT, cursor: str | None = None
    ) -> tuple[list[ScheduledChange], str | None]:
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise InvalidRequest(f"'limit' must be between 1 and {MAX_LIST_LIMIT}", rule="limit")
        return self._items.page(limit, cursor)

    def cancel(self, schedule_id: str, actor: str) -> tuple[ScheduledChange, bool]:
        """Cancel a pending change: its item marked cancelled (who, when), then its schedule deleted. Returns the
        item and whether the schedule was deleted (False: already gone, or Scheduler failed: it will find a
        cancelled item and do nothing)."""
        found = self._items.get(schedule_id) if ID_PATTERN.fullmatch(schedule_id) else None
        if found is None:
            raise ScheduleNotFound(f"no scheduled change {schedule_id!r}", id=schedule_id)
        now = self._clock()
        if found.status != PENDING or not self._items.finish(
            schedule_id, CANCELLED, now, cancelled_by=actor, cancelled_at=iso_time(now)
        ):
            current = self._items.get(schedule_id) or found
            raise ScheduleNotPending(
                f"scheduled change {schedule_id} is {current.status}: only a pending change can be cancelled",
                id=schedule_id,
                status=current.status,
            )
        try:
            deleted = self._schedules.delete(schedule_name(schedule_id))
        except (SchedulerUnavailable, SchedulerFault) as exc:
            logger.warning(
                "cancelled; its schedule could not be deleted (it will find a cancelled item and do nothing)",
                schedule=schedule_id,
                error=exc.message,
            )
            deleted = False
        logger.info("scheduled change cancelled", schedule=schedule_id, actor=actor, schedule_deleted=deleted)
        cancelled = self._items.get(schedule_id)
        return (cancelled or found), deleted
