"""The write path: version-conditioned changes of the singleton, committed with their audit record.

A change is ONE ``TransactWriteItems``:
  (a) ``Update`` of the singleton that SETs only the changed flags, ``schema_version = :next``,
      ``updated_at``, ``updated_by``, conditioned on ``schema_version = :current``;
  (b) ``Put`` of ``AUDIT#<zero-padded next>`` (actor, reason, time, old/new values of the changed flags,
      the full state after the change for reverts, ``expires_at`` for TTL), conditioned on
      ``attribute_not_exists``.
Both commit or neither does. A cancelled transaction is a conflict: consistent re-read, jittered
back-off, retry, a bounded number of times, then ``WriteConflict``. With an expected version (HTTP
If-Match) there is one attempt and a stale version is ``PreconditionFailed``. The singleton is never
PutItem'd; when it is missing, the seed's if_not_exists UpdateItem recreates it from the declarations
first (never a partial item). Values equal to the stored ones are a no-op: no bump, no audit record.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from flags.codec import decode_plain, encode, encode_plain, iso_time
from flags.declarations import Declarations, FlagValue
from flags.errors import (
    InvalidRequest,
    ItemTooLarge,
    PreconditionFailed,
    StoreUnavailable,
    UnknownFlag,
    VersionNotFound,
    WriteConflict,
)
from flags.itemsize import READ_BLOCK_BYTES, item_size
from flags.keys import (
    AUDIT_SK_PREFIX,
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_FLAG,
    MAINTENANCE_OWNER_ATTR,
    PARTITION_KEY,
    SINGLETON_PK,
    SINGLETON_SK,
    SORT_KEY,
    TTL_ATTR,
    UPDATED_AT_ATTR,
    UPDATED_BY_ATTR,
    VERSION_ATTR,
    audit_sort_key,
    audit_version,
    singleton_key,
)
from flags.observability import logger
from flags.provider import Snapshot
from flags.seed import seed_update_params

MAX_REASON_LENGTH = 500
MAX_HISTORY_LIMIT = 100
DEFAULT_HISTORY_LIMIT = 20


@dataclass(frozen=True, slots=True)
class Ownership:
    """Who holds maintenance after a change: a window (with its deadline), or nobody (manual)."""

    owner: str | None
    deadline: float | None = None


@dataclass(frozen=True, slots=True)
class ChangeResult:
    snapshot: Snapshot
    applied: bool
    attempts: int
    changed: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # flag -> {"old", "new"}


@dataclass(frozen=True, slots=True)
class _Current:
    raw: dict[str, Any]
    snapshot: Snapshot

    @property
    def version(self) -> int:
        return self.snapshot.version or 0


class FlagStore:
    def __init__(
        self,
        client: Any,
        table_name: str,
        declarations: Declarations,
        *,
        sort_key: str = SINGLETON_SK,
        audit_retention_days: int = 365,
        max_attempts: int = 6,
        backoff_base: float = 0.025,
        backoff_max: float = 0.4,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        on_retry: Callable[[int], None] | None = None,
    ) -> None:
        self._client = client
        self._table = table_name
        self._declarations = declarations
        self._sort_key = sort_key
        self._retention_seconds = audit_retention_days * 86400
        self._max_attempts = max_attempts
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._clock = clock
        self._sleep = sleep
        self._jitter = jitter
        self._on_retry = on_retry or (lambda attempt: None)

    # -- validation ---------------------------------------------------------------------------------

    def validate_changes(self, changes: Any) -> dict[str, FlagValue]:
        """Check a requested change against the declarations; nothing is read or written here."""
        if not isinstance(changes, dict) or not changes:
            raise InvalidRequest("'flags' must be a non-empty object of flag name -> value", rule="empty_change")
        normalized: dict[str, FlagValue] = {}
        for name, value in changes.items():
            spec = self._declarations.get(name)
            if spec is None:
                raise UnknownFlag(f"flag '{name}' is not declared", flag=name, rule="declared")
            normalized[name] = spec.validate(value)
        return normalized

    @staticmethod
    def validate_reason(reason: Any) -> str:
        from flags.requests import validate_reason  # the request rules live with the request validation

        return validate_reason(reason)

    @staticmethod
    def validate_version(version: Any) -> int:
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise InvalidRequest("'version' must be an integer >= 0 (0: the seeded state)", rule="version")
        return version

    # -- reads -------------------------------------------------------------------------------------

    def current(self) -> Snapshot:
        return self._read_current().snapshot

    def _read_current(self) -> _Current:
        """Consistent read of the singleton; recreate it from the declarations if it is missing."""
        item = self._get_item(self._sort_key)
        if item is None:
            logger.warning("the flags item is missing: re-seeding it from the declarations before writing")
            # Resume the version sequence after the audit trail the item left behind: restarting at 0 would make
            # every next write's AUDIT#<version> Put collide with a kept record (409 forever) and reuse ETags.
            params = seed_update_params(
                self._table, self._declarations, self._sort_key, start_version=self._latest_audit_version()
            )
            self._call("update_item", **params)
            item = self._get_item(self._sort_key) or {}
        return _Current(raw=item, snapshot=Snapshot.from_item(item, self._declarations, fetched_at=self._clock()))

    def _audit_query(self, **options: Any) -> dict[str, Any]:
        """Query parameters for the audit records of the partition, newest first."""
        return {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": SINGLETON_PK}, ":prefix": {"S": AUDIT_SK_PREFIX}},
            "ScanIndexForward": False,
            **options,
        }

    def _latest_audit_version(self) -> int:
        items = self._call("query", **self._audit_query(Limit=1, ConsistentRead=True)).get("Items", [])
        return audit_version(items[0][SORT_KEY]["S"]) if items else 0

    def _get_item(self, sort_key: str) -> dict[str, Any] | None:
        response = self._call("get_item", TableName=self._table, Key=singleton_key(sort_key), ConsistentRead=True)
        return response.get("Item")

    def _call(self, operation: str, **params: Any) -> Any:
        try:
            return getattr(self._client, operation)(**params)
        except ClientError as exc:
            raise StoreUnavailable(f"DynamoDB {operation} failed: {exc.response['Error'].get('Code')}") from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(f"DynamoDB {operation} failed: {type(exc).__name__}") from exc

    # -- writes ------------------------------------------------------------------------------------

    def change(
        self,
        changes: Mapping[str, Any],
        *,
        actor: str,
        reason: str,
        expected_version: int | frozenset[int] | None = None,
        ownership: Ownership | None = None,
        condition: Callable[[Snapshot], bool] | None = None,
        kind: str = "change",
        extra_audit: Mapping[str, Any] | None = None,
    ) -> ChangeResult:
        """Apply ``changes`` (already validated) as one new version, retrying on conflict.

        ``ownership`` sets (window) or clears (None owner) who holds maintenance; by default a change that
        touches ``maintenance_mode`` clears it (a manual switch takes maintenance away from any window).
        ``condition`` is re-checked on every attempt against the fresh state; when it says no, nothing is
        written and the result is not applied.
        """
        if ownership is None and MAINTENANCE_FLAG in changes:
            ownership = Ownership(owner=None)
        attempts = self._max_attempts if expected_version is None else 1
        for attempt in range(1, attempts + 1):
            current = self._read_current()
            if expected_version is not None and current.version not in (
                {expected_version} if isinstance(expected_version, int) else expected_version
            ):
                raise PreconditionFailed(
                    f"the flags are at version {current.version}, not {expected_version}: re-read and retry",
                    current_version=current.version,
                )
            if condition is not None and not condition(current.snapshot):
                return ChangeResult(snapshot=current.snapshot, applied=False, attempts=attempt)
            diff = self._diff(current, changes)
            owner_sets, owner_removes = self._ownership_delta(current, ownership)
            if not diff and not owner_sets and not owner_removes:
                return ChangeResult(snapshot=current.snapshot, applied=False, attempts=attempt)
            try:
                new_raw = self._commit(current, diff, owner_sets, owner_removes, actor, reason, kind, extra_audit)
            except _Conflict:
                if attempt == attempts:
                    break
                self._on_retry(attempt)
                self._sleep(self._jitter() * min(self._backoff_max, self._backoff_base * 2 ** (attempt - 1)))
                continue
            snapshot = Snapshot.from_item(new_raw, self._declarations, fetched_at=self._clock())
            logger.info(
                "flags changed",
                actor=actor,
                version=snapshot.version,
                kind=kind,
                changed={name: change["new"] for name, change in diff.items()},
                attempts=attempt,
            )
            return ChangeResult(snapshot=snapshot, applied=True, attempts=attempt, changed=diff)
        if expected_version is not None:
            current = self._read_current()
            raise PreconditionFailed(
                f"the flags changed while writing: now at version {current.version}",
                current_version=current.version,
            )
        raise WriteConflict(
            f"the flags kept changing under this write; gave up after {attempts} attempts", attempts=attempts
        )

    def _diff(self, current: _Current, changes: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        diff: dict[str, dict[str, Any]] = {}
        for name, value in changes.items():
            stored = current.snapshot.values.get(name)
            unusable = name in current.snapshot.fallen_back  # stored value broken: rewrite it
            if unusable or stored != value or type(stored) is not type(value):
                diff[name] = {"old": None if unusable else stored, "new": value}
        return diff

    @staticmethod
    def _ownership_delta(current: _Current, ownership: Ownership | None) -> tuple[dict[str, Any], list[str]]:
        if ownership is None:
            return {}, []
        snapshot = current.snapshot
        if ownership.owner is None:
            present = [attr for attr in (MAINTENANCE_OWNER_ATTR, MAINTENANCE_DEADLINE_ATTR) if attr in current.raw]
            return {}, present
        wanted = {MAINTENANCE_OWNER_ATTR: {"S": ownership.owner}}
        if ownership.deadline is not None:
            wanted[MAINTENANCE_DEADLINE_ATTR] = {"N": str(int(ownership.deadline))}
        if snapshot.maintenance_owner == ownership.owner and (
            ownership.deadline is None or snapshot.maintenance_deadline == int(ownership.deadline)
        ):
            return {}, []
        return wanted, []

    def _commit(
        self,
        current: _Current,
        diff: dict[str, dict[str, Any]],
        owner_sets: dict[str, Any],
        owner_removes: list[str],
        actor: str,
        reason: str,
        kind: str,
        extra_audit: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        now = self._clock()
        next_version = current.version + 1
        sets: dict[str, Any] = {
            name: encode(self._declarations[name], change["new"]) for name, change in diff.items()
        }
        sets.update(owner_sets)
        sets[VERSION_ATTR] = {"N": str(next_version)}
        sets[UPDATED_AT_ATTR] = {"S": iso_time(now)}
        sets[UPDATED_BY_ATTR] = {"S": actor}

        new_raw = {k: v for k, v in current.raw.items() if k not in owner_removes}
        new_raw.update(sets)
        size = item_size(new_raw)
        if size > READ_BLOCK_BYTES:
            raise ItemTooLarge(
                f"the change would make the flags item {size} bytes; the limit is {READ_BLOCK_BYTES}",
                size=size,
                limit=READ_BLOCK_BYTES,
                rule="item_size",
            )

        names = {"#version": VERSION_ATTR}
        values: dict[str, Any] = {":current": {"N": str(current.version)}}
        clauses = []
        for index, (attr, value) in enumerate(sets.items()):
            names[f"#a{index}"] = attr
            values[f":a{index}"] = value
            clauses.append(f"#a{index} = :a{index}")
        expression = "SET " + ", ".join(clauses)
        if owner_removes:
            for index, attr in enumerate(owner_removes):
                names[f"#r{index}"] = attr
            expression += " REMOVE " + ", ".join(f"#r{index}" for index in range(len(owner_removes)))
        if owner_sets or owner_removes:  # the trail says which window gained or lost maintenance
            new_owner = owner_sets.get(MAINTENANCE_OWNER_ATTR, {}).get("S")
            ownership = {"old": current.snapshot.maintenance_owner, "new": new_owner}
            extra_audit = {**(extra_audit or {}), "maintenance_owner": ownership}
        audit = self._audit_item(next_version, now, actor, reason, kind, diff, new_raw, extra_audit)
        update = {
            "TableName": self._table,
            "Key": singleton_key(self._sort_key),
            "UpdateExpression": expression,
            "ConditionExpression": "#version = :current",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        put = {
            "TableName": self._table,
            "Item": audit,
            "ConditionExpression": "attribute_not_exists(#sk)",
            "ExpressionAttributeNames": {"#sk": SORT_KEY},
        }
        try:
            self._client.transact_write_items(TransactItems=[{"Update": update}, {"Put": put}])
        except ClientError as exc:
            code = exc.response["Error"].get("Code")
            if code == "TransactionCanceledException":
                reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
                if any(r in ("ConditionalCheckFailed", "TransactionConflict") for r in reasons) or not reasons:
                    raise _Conflict() from exc
            if code == "TransactionConflictException":
                raise _Conflict() from exc
            raise StoreUnavailable(f"DynamoDB TransactWriteItems failed: {code}") from exc
        except BotoCoreError as exc:
            raise StoreUnavailable(f"DynamoDB TransactWriteItems failed: {type(exc).__name__}") from exc
        return new_raw

    def _audit_item(
        self,
        version: int,
        now: float,
        actor: str,
        reason: str,
        kind: str,
        diff: dict[str, dict[str, Any]],
        new_raw: dict[str, Any],
        extra: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        state = {
            name: new_raw[name] for name in self._declarations if name in new_raw
        }
        item = {
            **singleton_key(audit_sort_key(version)),
            "version": {"N": str(version)},
            "kind": {"S": kind},
            "actor": {"S": actor},
            "reason": {"S": reason},
            "at": {"S": iso_time(now)},
            "old": {"M": {name: encode_plain(change["old"]) for name, change in diff.items()}},
            "new": {"M": {name: encode_plain(change["new"]) for name, change in diff.items()}},
            "state": {"M": state},
            TTL_ATTR: {"N": str(int(now) + self._retention_seconds)},
        }
        for key, value in (extra or {}).items():
            item[key] = encode_plain(value)
        return item

    # -- history and revert ------------------------------------------------------------------------

    def history(self, limit: int = DEFAULT_HISTORY_LIMIT, cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """Audit records newest first, ``limit`` at a time; ``cursor`` is the opaque token of the last page."""
        if not 1 <= limit <= MAX_HISTORY_LIMIT:
            raise InvalidRequest(f"'limit' must be between 1 and {MAX_HISTORY_LIMIT}", rule="limit")
        params = self._audit_query(Limit=limit)
        if cursor is not None:
            params["ExclusiveStartKey"] = singleton_key(audit_sort_key(decode_cursor(cursor)))
        response = self._call("query", **params)
        records = [audit_record(item) for item in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        next_cursor = encode_cursor(audit_version(last[SORT_KEY]["S"])) if last else None
        return records, next_cursor

    def state_at(self, version: int) -> dict[str, Any]:
        """The declared flags' values right after ``version`` was written, from its audit record."""
        item = self._get_item(audit_sort_key(version)) if version >= 1 else None
        if item is None or "state" not in item:
            raise VersionNotFound(
                f"version {version} has no audit record (never written, or expired from the trail)",
                version=version,
            )
        return {name: decode_plain(value) for name, value in item["state"]["M"].items() if name in self._declarations}

    def revert(
        self, version: Any, *, actor: str, reason: str, expected_version: int | frozenset[int] | None = None
    ) -> ChangeResult:
        version = self.validate_version(version)
        normalized = self.validate_changes(self.state_at(version))  # today's rules apply to old values
        return self.change(
            normalized,
            actor=actor,
            reason=reason,
            expected_version=expected_version,
            kind="revert",
            extra_audit={"reverted_to": version},
        )


class _Conflict(Exception):
    """The transaction was cancelled because the singleton moved on (or a concurrent transaction held it)."""


def audit_record(item: Mapping[str, Any]) -> dict[str, Any]:
    record = {
        "version": int(item["version"]["N"]),
        "kind": item.get("kind", {}).get("S", "change"),
        "actor": item["actor"]["S"],
        "reason": item["reason"]["S"],
        "at": item["at"]["S"],
        "changes": {
            name: {"old": decode_plain(item["old"]["M"].get(name, {"NULL": True})), "new": decode_plain(value)}
            for name, value in item["new"]["M"].items()
        },
    }
    for key in ("reverted_to", "window", "maintenance_owner"):
        if key in item:
            record[key] = decode_plain(item[key])
    return record


def encode_cursor(version: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"v": version}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        version = payload["v"]
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise ValueError(version)
        return version
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidRequest("'cursor' is not a cursor this API gave out", rule="cursor") from exc
