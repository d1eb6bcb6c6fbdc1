"""Pending work (a scheduled change, a baking guard) and a migration of the flags item exclude each other inside
their transactions, not by a check before them.

A transaction cannot be conditioned on "no item of this partition exists", so the exclusion rests on one known
item, ``WORK#APP / WORK#CREATED``: every transaction that creates pending work adds one to its ``created`` count,
and a migration reads the count before it looks for pending work, then conditions its own transaction on the
count being still the one it read. Work created before that read is found (and refuses the migration); work
created after it makes the migration's transaction fail (a conflict: it reads again, finds the work and is
refused). A stage deployed before the count existed has no such item: a migration then conditions on its
absence, and the first creation makes it.
"""

from __future__ import annotations

from typing import Any

from singleton_flags.keys import PARTITION_KEY, SORT_KEY
from singleton_flags_service.writes import transaction

WORK_KEY = {PARTITION_KEY: {"S": "WORK#APP"}, SORT_KEY: {"S": "WORK#CREATED"}}
CREATED_ATTR = "created"


def created(table: str) -> dict[str, Any]:
    """The ``Update`` (a transaction entry) that counts one more piece of pending work created."""
    return {
        "Update": {
            "TableName": table,
            "Key": dict(WORK_KEY),
            "UpdateExpression": "ADD #created :one",
            "ExpressionAttributeNames": {"#created": CREATED_ATTR},
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def created_so_far(client: Any, table: str) -> int | None:
    """How much pending work was ever created (None: none since the count existed), read consistently."""
    item = transaction.call(client, "get_item", TableName=table, Key=dict(WORK_KEY), ConsistentRead=True).get("Item")
    return None if item is None or CREATED_ATTR not in item else int(item[CREATED_ATTR]["N"])


def none_created_since(table: str, count: int | None) -> dict[str, Any]:
    """The ``ConditionCheck`` (a transaction entry) that no pending work was created since the count was read."""
    check: dict[str, Any] = {
        "TableName": table,
        "Key": dict(WORK_KEY),
        "ExpressionAttributeNames": {"#c": CREATED_ATTR},
    }
    if count is None:
        check["ConditionExpression"] = "attribute_not_exists(#c)"
    else:
        check["ConditionExpression"] = "#c = :count"
        check["ExpressionAttributeValues"] = {":count": {"N": str(count)}}
    return {"ConditionCheck": check}
