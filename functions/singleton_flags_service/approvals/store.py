"""Change requests in the table: created, approved, rejected, withdrawn; the last approval applies the change.

Each request is one item ``CHANGE_REQUEST#APP / CHANGE_REQUEST#<id>`` (``singleton_flags_service.approvals.models``).

- An approval that is not the last appends the approver to the item, conditioned on the request still pending
  with the approvals it was decided on (``size(approvals) = :count``): two approvals racing are serialised, and the
  loser decides again on what the winner wrote, so neither is lost and the last one is always the one that applies.
  It is also conditioned on the flags item still being at the version whose values it found bound: an approval
  never lands on a request whose values moved (it marks the request stale instead, 412).
- Marking a request stale is conditioned on the approvals it was decided on, as approvals are: the mark and an
  approval exclude each other, and whichever loses decides again on what the other wrote.
- The last required approval applies the change in the transaction that records it: the flags' conditioned
  update and its audit record (kind ``change_request_applied``, naming the author and every approver), and the
  request's move to ``applied`` with the same conditions. The flags store re-checks on every attempt, on a fresh
  read, that the request is still pending with that count and that every flag the request touches and every
  protected flag still holds its base value; an unrelated flag moving is only a retry. A moved flag marks the
  request ``stale`` (412): it was approved against values that no longer hold. Of concurrent final approvals
  exactly one commits; every other one finds the request applied on its retry and is told so (409).
- A request with a time (``at``) is scheduled, not applied, by its last approval: the request's move to
  ``scheduled`` (naming the schedule), the scheduled change's pending item (``singleton_flags_service.schedules``,
  naming the request, its approvals and its base values) and a check that the flags item is still at the version
  whose values were found bound commit in one transaction; then its one-time schedule is created (the reconciler
  creates it again if that failed). Such a request expires when its time is too near to schedule it.
- Break-glass applies a new request at once, alone (kind ``break_glass``), with the same base-value condition.
- ``Idempotency-Key`` on create and approve: the key's item is written in the same transaction as what it names
  (``singleton_flags_service.writes.idempotency``), so a duplicate replays the original answer.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from singleton_flags.codec import encode_plain, iso_time
from singleton_flags.declarations import Declarations
from singleton_flags.keys import CHANGE_REQUEST_PK, CHANGE_REQUEST_SK_PREFIX, PARTITION_KEY, SORT_KEY
from singleton_flags.snapshot import Snapshot
from singleton_flags_service import work
from singleton_flags_service.approvals.models import (
    APPLIED,
    APPLIED_VERSION_ATTR,
    APPROVALS_ATTR,
    DECIDED_ATTR,
    EXPIRED,
    ID_LENGTH,
    KIND_BREAK_GLASS,
    KIND_CHANGE,
    KIND_REVERT,
    PENDING,
    REJECTED,
    SCHEDULE_ATTR,
    SCHEDULED,
    STALE,
    STATE_ATTR,
    STATES,
    WITHDRAWN,
    Approval,
    ChangeRequest,
)
from singleton_flags_service.approvals.principals import same
from singleton_flags_service.approvals.rules import check_approver, check_break_glass, requirement
from singleton_flags_service.contract import Settings
from singleton_flags_service.errors import (
    AlreadyApproved,
    ChangeRequestNotFound,
    FlagsSuperseded,
    InvalidRequest,
    NotTheAuthor,
    PreconditionFailed,
    RequestAltered,
    RequestClosed,
    RequestStale,
    SchedulerFault,
    SchedulerUnavailable,
    SelfApproval,
    StoreUnavailable,
    WriteConflict,
)
from singleton_flags_service.observability import logger
from singleton_flags_service.schedules.changes import ScheduledChange, ScheduleItems, create_schedule, new_id
from singleton_flags_service.schedules.one_time import OneTimeSchedules
from singleton_flags_service.schedules.timing import MIN_LEAD, ScheduleTime, check_lead
from singleton_flags_service.values import moved
from singleton_flags_service.vocabulary import KIND_BREAK_GLASS as VERSION_BREAK_GLASS, KIND_CHANGE_REQUEST
from singleton_flags_service.writes import transaction
from singleton_flags_service.writes.idempotency import Idempotency
from singleton_flags_service.writes.store import FlagStore

DEFAULT_EXPIRY_SECONDS = 72 * 3600  # a request not approved within 3 days expires
MAX_LIST_LIMIT = 100
DEFAULT_LIST_LIMIT = 20
MAX_ATTEMPTS = 8  # an approval decided again after another approval of the same request won a race
SYSTEM = "singleton-flags"  # who marks a request expired or stale


@dataclass(frozen=True, slots=True)
class Created:
    request: ChangeRequest
    replayed: bool = False


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        created, request_id = payload["c"], payload["i"]
        if not isinstance(created, str) or not isinstance(request_id, str):
            raise ValueError(payload)
        return created, request_id
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidRequest("'cursor' is not a cursor this API gave out", rule="cursor") from exc


def _encode_cursor(request: ChangeRequest) -> str:
    text = json.dumps({"c": request.content["created_at"], "i": request.id})
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


class ChangeRequests:
    def __init__(
        self,
        client: Any,
        table_name: str,
        flags: FlagStore,
        *,
        retention_seconds: int = 365 * 86400,
        expiry_seconds: int = DEFAULT_EXPIRY_SECONDS,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        call_seconds: float = 6.0,
        scheduler: OneTimeSchedules | None = None,
    ) -> None:
        """``scheduler`` creates the one-time schedules of requests with a time (None: their items are written and
        the reconciler creates their schedules)."""
        self._client = client
        self._table = table_name
        self._flags = flags
        self._retention_seconds = retention_seconds
        self._expiry_seconds = expiry_seconds
        self._clock = clock
        self._monotonic = monotonic
        self._call_seconds = call_seconds
        self._scheduler = scheduler
        self._schedule_items = ScheduleItems(client, table_name, retention_seconds=retention_seconds)

    @classmethod
    def for_function(
        cls, client: Any, settings: Settings, flags: FlagStore, scheduler: OneTimeSchedules | None = None
    ) -> ChangeRequests:
        """The change requests a writing function builds at cold start, on its flags store, table and scheduled
        changes' schedule group."""
        return cls(
            client,
            settings.table_name,
            flags,
            retention_seconds=settings.audit_retention_days * 86400,
            scheduler=scheduler,
        )

    @property
    def declarations(self) -> Declarations:
        return self._flags.declarations

    def now(self) -> float:
        return self._clock()

    # -- reads ------------------------------------------------------------------------------------------

    def get(self, request_id: str) -> ChangeRequest:
        """The request (404 for an id that names none); ``RequestAltered`` for an item edited around the API."""
        if len(request_id) != ID_LENGTH or any(char not in "0123456789abcdef" for char in request_id):
            raise ChangeRequestNotFound(f"no change request {request_id!r}", id=request_id)
        item = self._get_item(self._key(request_id))
        if item is None:
            raise ChangeRequestNotFound(f"no change request {request_id!r}", id=request_id)
        return ChangeRequest.from_item(item)

    def page(
        self, *, state: str | None = None, limit: int = DEFAULT_LIST_LIMIT, cursor: str | None = None
    ) -> tuple[list[ChangeRequest], str | None]:
        """Requests newest first (``state``: only those in it, an expired pending one counted as expired)."""
        if state is not None and state not in STATES:
            raise InvalidRequest(f"'state' must be one of {list(STATES)}", rule="state")
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise InvalidRequest(f"'limit' must be between 1 and {MAX_LIST_LIMIT}", rule="limit")
        after = decode_cursor(cursor) if cursor is not None else None
        params = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": CHANGE_REQUEST_PK}, ":prefix": {"S": CHANGE_REQUEST_SK_PREFIX}},
        }
        now = self._clock()
        found = [request for request in transaction.query_all(self._client, params, self._lenient) if request]
        found = [request for request in found if state is None or request.effective_state(now) == state]
        found.sort(key=lambda request: (request.content["created_at"], request.id), reverse=True)
        if after is not None:
            found = [request for request in found if (request.content["created_at"], request.id) < after]
        page = found[:limit]
        return page, _encode_cursor(page[-1]) if len(found) > limit else None

    @staticmethod
    def _lenient(item: dict[str, Any]) -> ChangeRequest | None:
        try:
            return ChangeRequest.from_item(item)
        except RequestAltered as altered:
            logger.error("a change request was altered outside the API", id=altered.details.get("id"))
            return None

    # -- create -------------------------------------------------------------------------------------------

    def create(
        self,
        author: str,
        *,
        reason: str,
        flags: Mapping[str, Any] | None = None,
        revert_to: int | None = None,
        if_version: int | None = None,
        break_glass: bool = False,
        at: ScheduleTime | None = None,
        idempotency: Idempotency | None = None,
    ) -> Created:
        """A pending request bound to today's values (or, with ``break_glass``, the change applied at once);
        ``at``: its last approval schedules the change for then instead of applying it."""
        if at is not None and break_glass:
            raise InvalidRequest(
                "break-glass applies the change now: give 'at' or 'break_glass', not both", rule="at", field="at"
            )
        if idempotency is not None:
            answer = idempotency.remembered(self._get_item(idempotency.key), self._clock())
            if answer is not None:
                return Created(self.get(str(answer["id"])), replayed=True)
        snapshot = self._flags.current()
        version = snapshot.version or 0
        if if_version is not None and if_version != version:
            raise PreconditionFailed(
                f"the flags are at version {version}, not {if_version}: re-read and create the request again",
                current_version=version,
                flags=dict(snapshot.values),
            )
        if revert_to is not None:
            target = self._flags.values_at(revert_to)
            patch = {name: value for name, value in target.items() if moved({name: value}, snapshot.values)}
        else:
            patch = dict(flags or {})
        # judged where its version would land: not on a superseded item's fallbacks, not with a flag a migration
        # removed (the refusal its write would meet)
        self._flags.check_landing(patch, kind=VERSION_BREAK_GLASS if break_glass else KIND_CHANGE_REQUEST, actor=author)
        if not moved(patch, snapshot.values):
            raise InvalidRequest("the flags already hold these values: there is nothing to approve", rule="no_change")
        declarations = self.declarations
        needed = requirement(declarations, patch)
        if not needed.protected:
            raise InvalidRequest(
                "none of these flags is protected: change them directly (PATCH /flags)", rule="unprotected"
            )
        now = self._clock()
        expires = now + self._expiry_seconds
        timed: dict[str, Any] = {}
        if at is not None:  # bound too; it expires when its time is too near to schedule it
            check_lead(at, now)
            timed = {"at": at.iso, "timezone": at.timezone, "local_time": at.local}
            expires = min(expires, at.utc.timestamp() - MIN_LEAD.total_seconds())
        kept = set(patch) | set(declarations.protected)
        kind = KIND_BREAK_GLASS if break_glass else KIND_REVERT if revert_to is not None else KIND_CHANGE
        request = ChangeRequest.bind(
            {
                "kind": kind,
                "flags": patch,
                "revert_to": revert_to,
                "base_version": version,
                "base_values": {name: snapshot.values[name] for name in declarations if name in kept},
                "protected_flags": list(needed.flags),
                "required_approvals": 0 if break_glass else needed.approvals,
                "author": author,
                "reason": reason,
                "created_at": iso_time(now),
                "expires_at": iso_time(expires),
                **timed,
            }
        )
        if break_glass:
            check_break_glass(needed, author)
            approval = self._apply(request, (), author, VERSION_BREAK_GLASS, idempotency, existing=False)
            if approval is None:  # cannot happen for a new request: no count to race on
                raise WriteConflict("the break-glass change could not be applied; retry", attempts=1)
            return Created(approval.request)
        items = [{"Put": self._put(request)}]
        if idempotency is not None:
            items.append({"Put": idempotency.put(self._table, now, {"id": request.id})})
        try:
            self._send(items)
        except transaction.Conflict:
            if idempotency is not None:
                answer = idempotency.remembered(self._get_item(idempotency.key), self._clock())
                if answer is not None:
                    return Created(self.get(str(answer["id"])), replayed=True)
            return Created(self.get(request.id), replayed=True)  # the same request, made in the same millisecond
        logger.info("change request created", id=request.id, author=author, flags=sorted(patch))
        return Created(request)

    # -- approve ----------------------------------------------------------------------------------------------

    def approve(
        self, request_id: str, principal: str, *, reason: str | None = None, idempotency: Idempotency | None = None
    ) -> Approval:
        """Record ``principal``'s approval; the last required one applies the change in the same transaction."""
        if idempotency is not None:
            replayed = self._replayed(idempotency)
            if replayed is not None:
                return replayed
        for _ in range(MAX_ATTEMPTS):
            request = self._pending(request_id)
            if same(principal, request.author):
                raise SelfApproval(
                    f"{principal} created change request {request.id}: its author never approves it",
                    id=request.id,
                    principal=principal,
                )
            if any(same(principal, approver) for approver in request.approvers):
                raise AlreadyApproved(
                    f"{principal} already approved change request {request.id}: one principal counts once",
                    id=request.id,
                    principal=principal,
                )
            needed = requirement(self.declarations, request.flags)  # today's rules, the strictest with the request's
            check_approver(needed, principal, request.id)
            try:  # where its version would land: on a superseded item it can never apply, so it moves no more
                self._flags.check_landing(request.flags, kind=KIND_CHANGE_REQUEST, actor=principal)
            except FlagsSuperseded as superseded:
                self._close(request, STALE, SYSTEM, superseded.message)
                raise
            required = max(request.required_approvals, needed.approvals)
            approval = {"principal": principal, "at": iso_time(self._clock())}
            if reason:
                approval["reason"] = reason
            approvals = (*request.approvals, approval)
            if len(approvals) < required:
                snapshot = self._flags.current()  # an approval is of the bound values: refused once one moved
                moved_flags = moved(request.base_values, snapshot.values)
                if moved_flags:
                    self._refuse_stale(request, moved_flags, snapshot.version)
                    continue  # an approval was recorded first: decide again on what it wrote
                try:
                    return self._record_approval(request, approvals, idempotency, snapshot.version)
                except transaction.Conflict:
                    if idempotency is not None and (replayed := self._replayed(idempotency)) is not None:
                        return replayed
                    continue  # another approval (or a decision) won: decide again on what it wrote
            if request.at is not None:
                applied = self._schedule(request, approvals, principal, idempotency)
            else:
                applied = self._apply(request, approvals, principal, KIND_CHANGE_REQUEST, idempotency, existing=True)
            if applied is not None:
                return applied
        raise WriteConflict(
            f"change request {request_id} kept changing under this approval; gave up after {MAX_ATTEMPTS} attempts",
            attempts=MAX_ATTEMPTS,
        )

    def _replayed(self, idempotency: Idempotency) -> Approval | None:
        answer = idempotency.remembered(self._get_item(idempotency.key), self._clock())
        if answer is None:
            return None
        version = answer.get("version")
        request = self.get(str(answer["id"]))
        return Approval(request, applied=bool(answer.get("applied")), version=version, replayed=True)

    def _record_approval(
        self,
        request: ChangeRequest,
        approvals: tuple[Mapping[str, str], ...],
        idempotency: Idempotency | None,
        version: int | None,
    ) -> Approval:
        """Append an approval, conditioned on the request (pending, the approvals it was decided on) and on the
        flags item (still at ``version``, whose values were found bound): an approval never lands on a request
        whose values moved meanwhile (``transaction.Conflict``: decide again)."""
        update = self._conditioned(request)
        update["UpdateExpression"] = "SET #approvals = :approvals"
        update["ExpressionAttributeValues"][":approvals"] = encode_plain([dict(approval) for approval in approvals])
        items: list[dict[str, Any]] = [{"Update": update}, {"ConditionCheck": self._flags.still_at(version)}]
        if idempotency is not None:
            items.append({"Put": idempotency.put(self._table, self._clock(), {"id": request.id, "applied": False})})
        self._send(items)
        logger.info("change request approved", id=request.id, approvals=len(approvals))
        return Approval(replace(request, approvals=approvals), applied=False, version=None)

    def _apply(
        self,
        request: ChangeRequest,
        approvals: tuple[Mapping[str, str], ...],
        principal: str,
        kind: str,
        idempotency: Idempotency | None,
        *,
        existing: bool,
    ) -> Approval | None:
        """Write the request's patch as a version of ``kind`` with the request's move to applied (or, for a new
        break-glass request, its item, applied), in one transaction; None when its approvals changed meanwhile
        (decide again). ``RequestClosed`` when it was applied or closed meanwhile, ``RequestStale`` (and the
        request marked stale) when a flag it is bound to moved."""
        seen: dict[str, Any] = {}

        def still_bound(snapshot: Snapshot) -> bool:
            seen.clear()
            if existing:
                fresh = self.get(request.id)
                if fresh.state != PENDING or len(fresh.approvals) != len(request.approvals):
                    seen["request"] = fresh
                    return False
            moved_flags = moved(request.base_values, snapshot.values)
            if moved_flags:
                seen["moved"] = moved_flags
                seen["version"] = snapshot.version
                return False
            return True

        # who applied it and why: the last approval's reason ("approved" without one), or break-glass's own reason
        said = approvals[-1].get("reason") if approvals else None
        why = said or ("approved" if existing else f"break-glass: {request.reason}")
        decided = {"by": principal, "at": iso_time(self._clock()), "reason": why}

        def companions(version: int, now: float) -> list[dict[str, Any]]:
            applied = replace(request, state=APPLIED, approvals=approvals, decided=decided, applied_version=version)
            if existing:
                update = self._decided(request, APPLIED, approvals, decided, APPLIED_VERSION_ATTR, {"N": str(version)})
                items: list[dict[str, Any]] = [{"Update": update}]
            else:
                items = [{"Put": self._put(applied)}]
            if idempotency is not None:
                answer = {"id": request.id, "applied": True, "version": version}
                items.append({"Put": idempotency.put(self._table, now, answer)})
            return items

        extra = {
            "change_request": request.id,
            "requested_by": request.author,
            "approved_by": [dict(approval) for approval in approvals],
        }
        result = self._flags.change(
            request.flags,
            actor=principal if kind == VERSION_BREAK_GLASS else request.author,
            reason=request.reason,
            kind=kind,
            condition=still_bound,
            extra_audit=extra,
            companions=companions,
        )
        if result.applied:
            version = result.snapshot.version
            logger.info("change request applied", id=request.id, version=version, kind=kind)
            done = replace(request, state=APPLIED, approvals=approvals, decided=decided, applied_version=version)
            return Approval(done, applied=True, version=version)
        fresh = seen.get("request")
        if fresh is not None:
            if fresh.state == PENDING:
                return None  # another approval was recorded first: decide again
            raise self._closed(fresh)
        if "moved" in seen:
            if not existing:
                raise self._stale(request, seen["moved"], seen.get("version"))
            stale = self._mark_stale(request, seen["moved"], seen.get("version"))
            if stale is None:
                return None  # an approval was recorded before the mark: decide again on what it wrote
            raise stale
        raise RequestStale(  # the values already hold: nothing left to apply
            f"the flags already hold change request {request.id}'s values", id=request.id, moved=[]
        )

    def _schedule(
        self,
        request: ChangeRequest,
        approvals: tuple[Mapping[str, str], ...],
        principal: str,
        idempotency: Idempotency | None,
    ) -> Approval | None:
        """The last approval of a request with a time: the request's move to scheduled, the scheduled change's
        pending item and the check that the bound values still hold, in one transaction; then its schedule. None
        when the request or the flags moved meanwhile (decide again); ``RequestStale`` when a bound flag moved."""
        snapshot = self._flags.current()
        moved_flags = moved(request.base_values, snapshot.values)
        if moved_flags:
            self._refuse_stale(request, moved_flags, snapshot.version)
            return None  # an approval was recorded first: decide again on what it wrote
        now = self._clock()
        content = request.content
        when = ScheduleTime(
            utc=datetime.fromisoformat(str(content["at"])),
            local=str(content["local_time"]),
            timezone=str(content["timezone"]),
        )
        check_lead(when, now)
        schedule_id = new_id(now)
        said = approvals[-1].get("reason") if approvals else None
        decided = {"by": principal, "at": iso_time(now), "reason": said or "approved"}
        update = self._decided(request, SCHEDULED, approvals, decided, SCHEDULE_ATTR, {"S": schedule_id})
        from_request = {
            "change_request": request.id,
            "approved_by": [dict(approval) for approval in approvals],
            "base_values": request.base_values,
        }
        put = self._schedule_items.pending_put(
            schedule_id, request.flags, request.reason, when, None, request.author, now, from_request
        )
        items: list[dict[str, Any]] = [
            {"Update": update},
            {"Put": put},
            work.created(self._table),  # pending work: counted for the migration (work.py)
            {"ConditionCheck": self._flags.still_at(snapshot.version)},
        ]
        if idempotency is not None:
            answer = {"id": request.id, "applied": False, "schedule": schedule_id}
            items.append({"Put": idempotency.put(self._table, now, answer)})
        try:
            self._send(items)
        except transaction.Conflict:
            return None
        logger.info("change request scheduled", id=request.id, schedule=schedule_id, at=when.iso)
        if self._scheduler is not None:
            try:
                create_schedule(self._scheduler, ScheduledChange.from_item(put["Item"]))
            except (SchedulerUnavailable, SchedulerFault) as exc:
                logger.warning(
                    "scheduled; its schedule could not be created now (the reconciler creates it)",
                    schedule=schedule_id,
                    error=exc.message,
                )
        done = replace(request, state=SCHEDULED, approvals=approvals, decided=decided, schedule=schedule_id)
        return Approval(done, applied=False, version=None)

    def _refuse_stale(self, request: ChangeRequest, moved_flags: list[str], version: int | None) -> None:
        """Mark the request stale and raise the refusal; returns (None: decide again) when an approval came first."""
        stale = self._mark_stale(request, moved_flags, version)
        if stale is not None:
            raise stale

    def _mark_stale(self, request: ChangeRequest, moved_flags: list[str], version: int | None) -> RequestStale | None:
        """Mark the request stale, conditioned on it being pending with exactly the approvals it was decided on,
        so the mark and an approval exclude each other: the refusal to answer, or None when an approval was
        recorded in between (decide again on what it wrote). ``RequestClosed`` when it was decided otherwise."""
        marked = self._close(
            request, STALE, SYSTEM, f"flags moved since version {request.base_version}", count=len(request.approvals)
        )
        if marked.state == PENDING:
            return None
        if marked.state != STALE:
            raise self._closed(marked)
        return self._stale(request, moved_flags, version)

    @staticmethod
    def _stale(request: ChangeRequest, moved_flags: list[str], version: int | None) -> RequestStale:
        return RequestStale(
            f"{', '.join(moved_flags)} no longer hold{'s' if len(moved_flags) == 1 else ''} the value the "
            f"request was made against (version {request.base_version}); the request is stale: create a new one",
            id=request.id,
            moved=moved_flags,
            current_version=version,
        )

    # -- reject, withdraw -------------------------------------------------------------------------------------

    def reject(self, request_id: str, principal: str, reason: str) -> ChangeRequest:
        """An approver closes the request without applying it."""
        request = self._pending(request_id)
        if same(principal, request.author):
            raise SelfApproval(
                f"{principal} created change request {request.id}: its author withdraws it, never decides it",
                id=request.id,
                principal=principal,
            )
        check_approver(requirement(self.declarations, request.flags), principal, request.id)
        return self._close(request, REJECTED, principal, reason, must=True)

    def withdraw(self, request_id: str, principal: str, reason: str | None) -> ChangeRequest:
        """The author closes their own request."""
        request = self._pending(request_id)
        if not same(principal, request.author):
            raise NotTheAuthor(
                f"only the author ({request.author}) withdraws change request {request.id}",
                id=request.id,
                principal=principal,
            )
        return self._close(request, WITHDRAWN, principal, reason or "withdrawn by its author", must=True)

    # -- the item -----------------------------------------------------------------------------------------------

    def _pending(self, request_id: str) -> ChangeRequest:
        """The request, still pending (an expired one is marked expired first), or ``RequestClosed``."""
        request = self.get(request_id)
        if request.effective_state(self._clock()) == EXPIRED and request.state == PENDING:
            request = self._close(request, EXPIRED, SYSTEM, "not approved before it expired")
        if request.state != PENDING:
            raise self._closed(request)
        return request

    def _closed(self, request: ChangeRequest) -> RequestClosed:
        state = request.effective_state(self._clock())
        return RequestClosed(
            f"change request {request.id} is {state}: it can no longer move", id=request.id, state=state
        )

    def _close(
        self, request: ChangeRequest, state: str, by: str, reason: str, *, must: bool = False, count: int | None = None
    ) -> ChangeRequest:
        """Move a pending request (with ``count`` approvals, when given) to ``state``; when it already moved, the
        request as it is now (``must``: refused)."""
        decided = {"by": by, "at": iso_time(self._clock()), "reason": reason}
        update: dict[str, Any] = {
            "TableName": self._table,
            "Key": self._key(request.id),
            "UpdateExpression": "SET #state = :state, #decided = :decided",
            "ConditionExpression": "#state = :pending",
            "ExpressionAttributeNames": {"#state": STATE_ATTR, "#decided": DECIDED_ATTR},
            "ExpressionAttributeValues": {
                ":state": {"S": state},
                ":decided": encode_plain(decided),
                ":pending": {"S": PENDING},
            },
        }
        if count is not None:
            update["ConditionExpression"] += " AND size(#approvals) = :count"
            update["ExpressionAttributeNames"]["#approvals"] = APPROVALS_ATTR
            update["ExpressionAttributeValues"][":count"] = {"N": str(count)}
        try:
            transaction.call(self._client, "update_item", conditional=True, **update)
        except transaction.Conflict:
            fresh = self.get(request.id)
            if must:
                raise self._closed(fresh) from None
            return fresh
        logger.info("change request closed", id=request.id, state=state, by=by)
        return replace(request, state=state, decided=decided)

    def _decided(
        self,
        request: ChangeRequest,
        state: str,
        approvals: tuple[Mapping[str, str], ...],
        decided: Mapping[str, Any],
        outcome_attr: str,
        outcome: dict[str, str],
    ) -> dict[str, Any]:
        """The ``Update`` that records a last approval's decision on a still-pending request: its new ``state``, the
        approvals, who decided, and what came of it (``outcome_attr``: the version applied, or the schedule made)."""
        update = self._conditioned(request)
        update["UpdateExpression"] = (
            "SET #state = :state, #approvals = :approvals, #decided = :decided, #outcome = :outcome"
        )
        update["ExpressionAttributeNames"].update({"#decided": DECIDED_ATTR, "#outcome": outcome_attr})
        update["ExpressionAttributeValues"].update(
            {
                ":state": {"S": state},
                ":approvals": encode_plain([dict(approval) for approval in approvals]),
                ":decided": encode_plain(decided),
                ":outcome": outcome,
            }
        )
        return update

    def _conditioned(self, request: ChangeRequest) -> dict[str, Any]:
        """An Update of the request's item conditioned on it being pending with the approvals it was read with."""
        return {
            "TableName": self._table,
            "Key": self._key(request.id),
            "ConditionExpression": "#state = :pending AND size(#approvals) = :count",
            "ExpressionAttributeNames": {"#state": STATE_ATTR, "#approvals": APPROVALS_ATTR},
            "ExpressionAttributeValues": {":pending": {"S": PENDING}, ":count": {"N": str(len(request.approvals))}},
        }

    def _put(self, request: ChangeRequest) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "Item": request.item(self._retention_seconds),
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
        }

    @staticmethod
    def _key(request_id: str) -> dict[str, Any]:
        return {PARTITION_KEY: {"S": CHANGE_REQUEST_PK}, SORT_KEY: {"S": CHANGE_REQUEST_SK_PREFIX + request_id}}

    def _get_item(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = transaction.call(
            self._client, "get_item", TableName=self._table, Key=dict(key), ConsistentRead=True
        ).get("Item")
        return item

    def _send(self, items: list[dict[str, Any]]) -> None:
        budget = transaction.Budget(None, self._monotonic, self._call_seconds)
        try:
            transaction.send(self._client, {"TransactItems": items}, budget)
        except transaction.Lost as lost:
            raise StoreUnavailable(
                f"the change request could not be written ({lost.cause}); a retry with the same Idempotency-Key is safe"
            ) from lost
