"""Audit records: one per version, in their own partition (``AUDIT#APP``), and the history cursor.

A record holds the version, kind, actor, reason, time, the old and new values of what changed, the
full ``state`` after the change (every declared flag plus the maintenance bookkeeping, so any restore or
revert can re-apply it exactly), the transaction's ``ClientRequestToken`` (so a writer that lost the
answer can learn whether its own transaction committed) and ``expires_at`` for DynamoDB's TTL.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from singleton_flags.codec import decode_plain, encode_plain, iso_time
from singleton_flags.keys import (
    AUDIT_PK,
    AUDIT_SK_PREFIX,
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_OWNER_ATTR,
    PARTITION_KEY,
    SORT_KEY,
    TTL_ATTR,
    audit_key,
    audit_version,
)
from singleton_flags_service.errors import InvalidRequest
from singleton_flags_service.writes import transaction


def validate_version(version: Any) -> int:
    """A version to revert to: 0 (the seeded state) or any later version."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise InvalidRequest("'version' must be an integer >= 0 (0: the seeded state)", rule="version")
    return version


TOKEN_ATTR = "token"  # noqa: S105 - an attribute's name (the transaction token), not a secret
STATE_ATTR = "state"
BOOKKEEPING_IN_STATE = (MAINTENANCE_OWNER_ATTR, MAINTENANCE_DEADLINE_ATTR)
RECORD_EXTRAS = (
    "reverted_to",
    "window",
    "maintenance_owner",
    "restored_from",
    "schedule",
    "requested_by",
    "guard",
    "change_request",
    "approved_by",
    "item",  # the flags item whose state the record holds, when not FLAGS#V1 (a migration and every version after)
    "migrated_from",
)


def audit_item(
    *,
    version: int,
    now: float,
    actor: str,
    reason: str,
    kind: str,
    diff: Mapping[str, Mapping[str, Any]],
    state: Mapping[str, Any],
    token: str,
    retention_seconds: int,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of ``version`` in DynamoDB's attribute-value form; ``state`` is already encoded."""
    item = {
        **audit_key(version),
        "version": {"N": str(version)},
        "kind": {"S": kind},
        "actor": {"S": actor},
        "reason": {"S": reason},
        "at": {"S": iso_time(now)},
        "old": {"M": {name: encode_plain(change["old"]) for name, change in diff.items()}},
        "new": {"M": {name: encode_plain(change["new"]) for name, change in diff.items()}},
        STATE_ATTR: {"M": dict(state)},
        TOKEN_ATTR: {"S": token},
        TTL_ATTR: {"N": str(int(now) + retention_seconds)},
    }
    for key, value in (extra or {}).items():
        item[key] = encode_plain(value)
    return item


def audit_record(item: Mapping[str, Any]) -> dict[str, Any]:
    """A record as the history API answers it: plain JSON, newest state included."""
    state = item.get(STATE_ATTR, {}).get("M", {})
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
        "state": {name: decode_plain(value) for name, value in state.items()},
    }
    for key in RECORD_EXTRAS:
        if key in item:
            record[key] = decode_plain(item[key])
    return record


def audit_query(table_name: str, **options: Any) -> dict[str, Any]:
    """Query parameters for the audit partition, newest first (a Query on one partition: never a Scan)."""
    return {
        "TableName": table_name,
        "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
        "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
        "ExpressionAttributeValues": {":pk": {"S": AUDIT_PK}, ":prefix": {"S": AUDIT_SK_PREFIX}},
        "ScanIndexForward": False,
        **options,
    }


def newest_record(client: Any, table_name: str) -> dict[str, Any] | None:
    """The newest audit record, read consistently (None: the trail is empty)."""
    items: list[dict[str, Any]] = transaction.call(
        client, "query", **audit_query(table_name, Limit=1, ConsistentRead=True)
    ).get("Items", [])
    return items[0] if items else None


def record_version(item: Mapping[str, Any]) -> int:
    return audit_version(item[SORT_KEY]["S"])


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
