"""Guards of guarded changes: the request's ``guard``, the ``GUARD#`` items, their states and their listing.

A PATCH or revert may carry ``guard: {"alarms": [names], "bake_minutes": N}``. The change's version V is then
watched for N minutes: its guard item (``GUARD#APP / GUARD#<V, 12 digits>``) is put in the SAME transaction as
the change and its audit record (``FlagStore``'s companions), so a guard exists exactly when its version does
(a resend with the same ClientRequestToken, or a replay of the same Idempotency-Key, writes it once).

States: ``baking`` -> ``closed`` (the bake ended with no alarm) | ``reverted`` (an alarm fired while the flags
were still at V: the guard function wrote version V-1's state again, kind ``guard-revert``) | ``skipped`` (an
alarm fired after a newer change, or the revert could not be made: nothing undone, the reason recorded). Every
transition is an ``UpdateItem`` conditioned on ``state = baking``, so two deliveries of one alarm, or an alarm
racing the bake's end, change a guard once. A guard still ``baking`` after its bake end (its close schedule not
yet delivered, or never made) is served as ``closed``: its bake is over whatever its item says.

Guards never touch the read path: GET /flags stays one GetItem on the flags item.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from singleton_flags.codec import iso_time
from singleton_flags.keys import (
    GUARD_PK,
    GUARD_SK_PREFIX,
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTR,
    guard_key,
    guard_version,
)
from singleton_flags_service.errors import InvalidRequest
from singleton_flags_service.schedules.changes import mark_overdue_item
from singleton_flags_service.writes import transaction
from singleton_flags_service.writes.audit import decode_cursor, encode_cursor

GUARD_FIELDS = frozenset({"alarms", "bake_minutes"})
MIN_BAKE_MINUTES = 1
MAX_BAKE_MINUTES = 1440
MAX_ALARMS = 5
MAX_ALARM_NAME_LENGTH = 255  # CloudWatch's limit on an alarm name

BAKING = "baking"
CLOSED = "closed"
REVERTED = "reverted"
SKIPPED = "skipped"
STATES = (BAKING, CLOSED, REVERTED, SKIPPED)

MAX_GUARDS_LIMIT = 100
DEFAULT_GUARDS_LIMIT = 20


@dataclass(frozen=True, slots=True)
class GuardSpec:
    """What a request asks for: the alarms to watch and for how long."""

    alarms: tuple[str, ...]
    bake_minutes: int

    def as_json(self) -> dict[str, Any]:
        return {"alarms": list(self.alarms), "bake_minutes": self.bake_minutes}


def validate_guard(payload: Any, prefix: str) -> GuardSpec:
    """A request's ``guard``, every rule checked before anything is written; else InvalidRequest naming the rule.

    ``prefix`` is the deployment's ``guard_alarm_prefix``: the stack's EventBridge rule hears only alarms whose
    names start with it, so a guard on any other alarm could never fire.
    """
    if not prefix:
        raise InvalidRequest("guarded changes are not configured in this deployment (no alarm prefix)", rule="guard")
    if not isinstance(payload, dict):
        raise InvalidRequest('\'guard\' must be an object {"alarms": [names], "bake_minutes": N}', rule="guard")
    unknown, missing = set(payload) - GUARD_FIELDS, GUARD_FIELDS - set(payload)
    if unknown or missing:
        raise InvalidRequest(
            f"'guard' has exactly the fields {sorted(GUARD_FIELDS)}"
            + (f"; unknown: {sorted(map(str, unknown))}" if unknown else "")
            + (f"; missing: {sorted(missing)}" if missing else ""),
            rule="guard",
        )
    alarms = payload["alarms"]
    if not isinstance(alarms, list) or not 1 <= len(alarms) <= MAX_ALARMS:
        raise InvalidRequest(f"'guard.alarms' must be a list of 1-{MAX_ALARMS} alarm names", rule="guard_alarms")
    for name in alarms:
        _check_alarm_name(name, prefix)
    if len(set(alarms)) != len(alarms):
        raise InvalidRequest("'guard.alarms' names an alarm twice; give each once", rule="guard_alarms")
    minutes = payload["bake_minutes"]
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not MIN_BAKE_MINUTES <= minutes <= MAX_BAKE_MINUTES:
        raise InvalidRequest(
            f"'guard.bake_minutes' must be an integer {MIN_BAKE_MINUTES}-{MAX_BAKE_MINUTES}", rule="guard_bake_minutes"
        )
    return GuardSpec(alarms=tuple(alarms), bake_minutes=minutes)


def _check_alarm_name(name: Any, prefix: str) -> None:
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_ALARM_NAME_LENGTH:
        raise InvalidRequest(
            f"each alarm name in 'guard.alarms' is a string of 1-{MAX_ALARM_NAME_LENGTH} characters",
            rule="guard_alarms",
        )
    if any(unicodedata.category(char)[0] in "CZ" and char != " " for char in name):
        raise InvalidRequest(
            f"alarm name {name!r} holds a control or separator character", rule="guard_alarms", alarm=name
        )
    if not name.startswith(prefix) or name == prefix:
        raise InvalidRequest(
            f"alarm {name!r} does not start with this deployment's guard alarm prefix {prefix!r} (and name more "
            "than it): only such alarms reach the guard function",
            rule="guard_alarm_prefix",
            alarm=name,
        )


# ---------------------------------------------------------------------------------------------- items


@dataclass(frozen=True, slots=True)
class Guard:
    """A guard item, decoded."""

    version: int
    alarms: tuple[str, ...]
    bake_minutes: int
    created_at: float
    bake_ends_at: float
    state: str
    actor: str
    outcome: str | None = None
    alarm: str | None = None  # the alarm that fired (reverted or skipped because of it)
    reverted_by: int | None = None  # the guard-revert's version
    ended_at: float | None = None

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Guard:
        def number(name: str) -> float | None:
            return float(item[name]["N"]) if name in item else None

        return cls(
            version=guard_version(item[SORT_KEY]["S"]),
            alarms=tuple(value["S"] for value in item["alarms"]["L"]),
            bake_minutes=int(item["bake_minutes"]["N"]),
            created_at=float(item["created_at"]["N"]),
            bake_ends_at=float(item["bake_ends_at"]["N"]),
            state=item["state"]["S"],
            actor=item["actor"]["S"],
            outcome=item.get("outcome", {}).get("S"),
            alarm=item.get("alarm", {}).get("S"),
            reverted_by=int(item["reverted_by"]["N"]) if "reverted_by" in item else None,
            ended_at=number("ended_at"),
        )

    def baking_at(self, moment: float) -> bool:
        """Still baking at ``moment``: its item says so and its bake had not ended by then."""
        return self.state == BAKING and moment < self.bake_ends_at

    def effective_state(self, now: float) -> str:
        return CLOSED if self.state == BAKING and now >= self.bake_ends_at else self.state

    def as_json(self, now: float) -> dict[str, Any]:
        state = self.effective_state(now)
        outcome = self.outcome
        if state != self.state:
            outcome = "the bake ended with no alarm heard (its close is still to be recorded)"
        body: dict[str, Any] = {
            "version": self.version,
            "state": state,
            "alarms": list(self.alarms),
            "bake_minutes": self.bake_minutes,
            "created_at": iso_time(self.created_at),
            "bake_ends_at": iso_time(self.bake_ends_at),
            "actor": self.actor,
            "outcome": outcome,
        }
        if self.alarm is not None:
            body["alarm"] = self.alarm
        if self.reverted_by is not None:
            body["reverted_by"] = self.reverted_by
        if self.ended_at is not None:
            body["ended_at"] = iso_time(self.ended_at)
        return body


def guard_put(
    table: str, version: int, spec: GuardSpec, *, actor: str, created_at: float, retention_seconds: int
) -> dict[str, Any]:
    """The transaction item that writes version ``version``'s guard (once: ``attribute_not_exists``)."""
    ends_at = bake_end(spec, created_at)
    return {
        "Put": {
            "TableName": table,
            "Item": {
                **guard_key(version),
                "version": {"N": str(version)},
                "alarms": {"L": [{"S": name} for name in spec.alarms]},
                "bake_minutes": {"N": str(spec.bake_minutes)},
                "created_at": {"N": str(int(created_at))},
                "bake_ends_at": {"N": str(ends_at)},
                "state": {"S": BAKING},
                "actor": {"S": actor},
                TTL_ATTR: {"N": str(ends_at + retention_seconds)},
            },
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
        }
    }


def bake_end(spec: GuardSpec, created_at: float) -> int:
    """Epoch seconds at which the bake of a guard created at ``created_at`` ends."""
    return int(created_at) + spec.bake_minutes * 60


def guard_transition(
    table: str,
    version: int,
    state: str,
    outcome: str,
    now: float,
    *,
    alarm: str | None = None,
    reverted_by: int | None = None,
) -> dict[str, Any]:
    """The ``UpdateItem`` (parameters, also a transaction's ``Update``) that ends a baking guard, once."""
    sets = {"state": {"S": state}, "outcome": {"S": outcome}, "ended_at": {"N": str(int(now))}}
    if alarm is not None:
        sets["alarm"] = {"S": alarm}
    if reverted_by is not None:
        sets["reverted_by"] = {"N": str(reverted_by)}
    names = {f"#a{index}": name for index, name in enumerate(sets)}
    values = {f":a{index}": value for index, value in enumerate(sets.values())}
    return {
        "TableName": table,
        "Key": guard_key(version),
        "UpdateExpression": "SET " + ", ".join(f"#a{index} = :a{index}" for index in range(len(sets))),
        "ConditionExpression": "#state = :baking",
        "ExpressionAttributeNames": {**names, "#state": "state"},
        "ExpressionAttributeValues": {**values, ":baking": {"S": BAKING}},
    }


class GuardBook:
    """The ``GUARD#APP`` partition: one guard by version, the baking guards of an alarm, pages of guards."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self.table = table_name

    def get(self, version: int) -> Guard | None:
        item = transaction.call(
            self._client, "get_item", TableName=self.table, Key=guard_key(version), ConsistentRead=True
        ).get("Item")
        return Guard.from_item(item) if item is not None else None

    def baking(self, alarm: str) -> list[Guard]:
        """The guards whose item says ``baking`` and that watch ``alarm``, newest first (a Query on the guards'
        partition with a filter: guards expire by TTL after their retention, so the partition stays small)."""
        params: dict[str, Any] = {
            **self._query(),
            "FilterExpression": "#state = :baking AND contains(#alarms, :alarm)",
            "ConsistentRead": True,
        }
        params["ExpressionAttributeNames"].update({"#state": "state", "#alarms": "alarms"})
        params["ExpressionAttributeValues"].update({":baking": {"S": BAKING}, ":alarm": {"S": alarm}})
        return transaction.query_all(self._client, params, Guard.from_item)

    def all_baking(self) -> list[Guard]:
        """Every guard whose item says ``baking``, newest first (its close not yet recorded)."""
        params: dict[str, Any] = {**self._query(), "FilterExpression": "#state = :baking", "ConsistentRead": True}
        params["ExpressionAttributeNames"]["#state"] = "state"
        params["ExpressionAttributeValues"][":baking"] = {"S": BAKING}
        return transaction.query_all(self._client, params, Guard.from_item)

    def mark_overdue(self, version: int, now: float) -> bool:
        """Record, once, that a baking guard's close is overdue; False when it ended or was already recorded."""
        return mark_overdue_item(self._client, self.table, guard_key(version), "state", BAKING, now)

    def page(self, limit: int = DEFAULT_GUARDS_LIMIT, cursor: str | None = None) -> tuple[list[Guard], str | None]:
        """Guards newest first, ``limit`` at a time (one more read, so the last page hands out no cursor)."""
        if not 1 <= limit <= MAX_GUARDS_LIMIT:
            raise InvalidRequest(f"'limit' must be between 1 and {MAX_GUARDS_LIMIT}", rule="limit")
        params = {**self._query(), "Limit": limit + 1}
        if cursor is not None:
            params["ExclusiveStartKey"] = guard_key(decode_cursor(cursor))
        items = transaction.call(self._client, "query", **params).get("Items", [])
        guards = [Guard.from_item(item) for item in items[:limit]]
        next_cursor = encode_cursor(guards[-1].version) if len(items) > limit else None
        return guards, next_cursor

    def end(self, update: Mapping[str, Any]) -> bool:
        """Apply a ``guard_transition``; False when the guard was no longer baking (someone ended it first)."""
        try:
            transaction.call(self._client, "update_item", conditional=True, **update)
        except transaction.Conflict:
            return False
        return True

    def _query(self) -> dict[str, Any]:
        return {
            "TableName": self.table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": GUARD_PK}, ":prefix": {"S": GUARD_SK_PREFIX}},
            "ScanIndexForward": False,
        }


def guards_page_json(guards: Sequence[Guard], next_cursor: str | None, now: float) -> dict[str, Any]:
    return {"guards": [guard.as_json(now) for guard in guards], "next_cursor": next_cursor}
