"""What the flags table holds, read raw (low-level attribute values) and consistently, on moto or DynamoDB Local."""

from __future__ import annotations

from typing import Any

from singleton_flags.keys import AUDIT_PK, AUDIT_SK_PREFIX, PARTITION_KEY, SORT_KEY, singleton_key


def read_singleton(client: Any, table: str) -> dict[str, Any] | None:
    """The singleton item (consistent GetItem), None when there is none."""
    return client.get_item(TableName=table, Key=singleton_key(), ConsistentRead=True).get("Item")


def read_trail(client: Any, table: str) -> list[dict[str, Any]]:
    """Every audit record (raw), oldest first: a consistent Query on the partition, all pages."""
    params: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
        "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
        "ExpressionAttributeValues": {":pk": {"S": AUDIT_PK}, ":prefix": {"S": AUDIT_SK_PREFIX}},
        "ConsistentRead": True,
    }
    items: list[dict[str, Any]] = []
    while True:
        page = client.query(**params)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def table_state(client: Any, table: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The singleton and the whole audit trail, raw: what a refused request must leave as it was."""
    return read_singleton(client, table), read_trail(client, table)
