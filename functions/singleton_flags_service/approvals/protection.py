"""Protection lowered by a deploy, recorded: the seed compares the protection the declarations deploy with the one
deployed before, and a lowering is written as its own audit kind (``protection_lowered``), never silently.

The item ``PROTECTION#APP / PROTECTION#CURRENT`` holds the protection deployed last (flag -> approvals, approvers,
break_glass). A flag's protection is lowered when it needs fewer approvals, when its approvers widen (a pattern
added to a list that named some, or the list emptied: anyone may approve), when its break-glass widens (a pattern
added), or when a protected flag is no longer declared. Each lowering is a record ``PROTECTION#APP /
PROTECTION#LOWERED#<time>`` (kind, actor, reason, time, each flag's old and new protection), committed in one
transaction with the new current item, conditioned on the current item being the one compared. A record names the
flags' version at the deploy: ``GET /flags/history`` returns it among the audit records, right after (newer than)
that version (``with_lowered``), with no version of its own (nothing in the flags changed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from singleton_flags.codec import decode_plain, encode_plain, iso_time
from singleton_flags.declarations import Declarations
from singleton_flags.keys import PARTITION_KEY, PROTECTION_PK, SORT_KEY, TTL_ATTR
from singleton_flags_service.observability import logger
from singleton_flags_service.vocabulary import KIND_PROTECTION_LOWERED
from singleton_flags_service.writes import transaction
from singleton_flags_service.writes.audit import decode_cursor

CURRENT_SK = "PROTECTION#CURRENT"
LOWERED_SK_PREFIX = "PROTECTION#LOWERED#"
_NONE: dict[str, Any] = {"approvals": 0, "approvers": [], "break_glass": []}


def deployed(declarations: Declarations) -> dict[str, dict[str, Any]]:
    """Every declared flag's protection (none: 0 approvals, no patterns)."""
    return {
        name: spec.protection.as_doc() if spec.protection is not None else dict(_NONE)
        for name, spec in declarations.items()
    }


def lowered(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """flag -> {"old", "new"} for each flag whose protection ``after`` lowers."""
    found: dict[str, dict[str, Any]] = {}
    for name, old in before.items():
        new = after.get(name)
        if new is None:
            if old["approvals"] > 0:
                found[name] = {"old": old, "new": None}
            continue
        old_approvers, new_approvers = set(old["approvers"]), set(new["approvers"])
        widened = bool(old_approvers) and (not new_approvers or bool(new_approvers - old_approvers))
        if (
            new["approvals"] < old["approvals"]
            or (old["approvals"] > 0 and widened)
            or bool(set(new["break_glass"]) - set(old["break_glass"]))
        ):
            found[name] = {"old": old, "new": new}
    return found


def record_protection(
    client: Any,
    table: str,
    declarations: Declarations,
    *,
    actor: str,
    reason: str,
    now: float,
    retention_seconds: int,
    version: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Store the deployed protection; record what it lowers (returned), at the flags' ``version``. A first deploy
    records nothing."""
    key = {PARTITION_KEY: {"S": PROTECTION_PK}, SORT_KEY: {"S": CURRENT_SK}}
    item = transaction.call(client, "get_item", TableName=table, Key=key, ConsistentRead=True).get("Item")
    after = deployed(declarations)
    text = json.dumps(after, sort_keys=True)
    if item is not None and item["protection"]["S"] == text:
        return {}
    before = json.loads(item["protection"]["S"]) if item is not None else {}
    drops = lowered(before, after)
    put: dict[str, Any] = {"TableName": table, "Item": {**key, "protection": {"S": text}, "at": {"S": iso_time(now)}}}
    if item is None:
        put["ConditionExpression"] = "attribute_not_exists(#pk)"
        put["ExpressionAttributeNames"] = {"#pk": PARTITION_KEY}
    else:
        put["ConditionExpression"] = "#protection = :before"
        put["ExpressionAttributeNames"] = {"#protection": "protection"}
        put["ExpressionAttributeValues"] = {":before": item["protection"]}
    items: list[dict[str, Any]] = [{"Put": put}]
    if drops:
        record = {
            PARTITION_KEY: {"S": PROTECTION_PK},
            SORT_KEY: {"S": LOWERED_SK_PREFIX + iso_time(now)},
            "kind": {"S": KIND_PROTECTION_LOWERED},
            "actor": {"S": actor},
            "reason": {"S": reason},
            "at": {"S": iso_time(now)},
            "changes": encode_plain(drops),
            TTL_ATTR: {"N": str(int(now) + retention_seconds)},
        }
        if version is not None:
            record["version"] = {"N": str(version)}
        items.append({"Put": {"TableName": table, "Item": record}})
        logger.warning("a deploy lowered flags' protection", flags=sorted(drops), actor=actor)
    transaction.send(client, {"TransactItems": items}, transaction.Budget(None, lambda: 0.0, 0.0))
    return drops


def history_page(store: Any, limit: int, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``GET /flags/history``: the store's audit records, with each deploy's lowered protection among
    the versions (no version of its own: nothing in the flags changed)."""
    records, next_cursor = store.history(limit=limit, cursor=cursor)
    before = decode_cursor(cursor) if cursor is not None else None
    lowered = lowered_records(store.client, store.table_name)
    return with_lowered(records, lowered, before=before, last_page=next_cursor is None), next_cursor


def lowered_records(client: Any, table: str) -> list[dict[str, Any]]:
    """Every ``protection_lowered`` record still kept (TTL), as the history answers records: the flags' version at
    the deploy, kind, actor, reason, time, each flag's old and new protection (``changes``), no ``state``."""
    params = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
        "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
        "ExpressionAttributeValues": {":pk": {"S": PROTECTION_PK}, ":prefix": {"S": LOWERED_SK_PREFIX}},
        "ConsistentRead": True,
    }
    return transaction.query_all(client, params, _history_record)


def _history_record(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": int(item["version"]["N"]) if "version" in item else 0,
        "kind": item["kind"]["S"],
        "actor": item["actor"]["S"],
        "reason": item["reason"]["S"],
        "at": item["at"]["S"],
        "changes": decode_plain(item["changes"]),
        "state": {},
    }


def with_lowered(
    records: list[dict[str, Any]], lowered: list[dict[str, Any]], *, before: int | None, last_page: bool
) -> list[dict[str, Any]]:
    """A page of history ``records`` (newest first) with the lowered records that fall in it, each right after
    (newer than) the version it names: those below ``before`` (the cursor's version: this page holds older
    versions only; None on the first page) and at or above the page's oldest version (any older one on the last
    page). So each lowered record is on exactly one page."""
    oldest = records[-1]["version"] if records and not last_page else None
    joined = [
        record
        for record in lowered
        if (before is None or record["version"] < before) and (oldest is None or record["version"] >= oldest)
    ]
    return sorted(
        [*records, *joined],
        key=lambda record: (record["version"], record["kind"] == KIND_PROTECTION_LOWERED, record["at"]),
        reverse=True,
    )
