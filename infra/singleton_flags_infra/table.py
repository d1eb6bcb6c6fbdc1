"""The flags table's definition: its keys, billing mode, time-to-live attribute and stream.

The stack declares its table from it (storage.py), and every table made outside AWS (DynamoDB Local for
the runner and the benches, moto for the tests) is created from it, so all of them have the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from singleton_flags.keys import PARTITION_KEY, SORT_KEY, TTL_ATTR


@dataclass(frozen=True, slots=True)
class TableDefinition:
    partition_key: str
    sort_key: str
    key_type: str  # DynamoDB's attribute type of both keys ("S": string)
    ttl_attribute: str
    billing_mode: str
    stream_view_type: str  # the table's stream: what each record carries (change events read NEW_IMAGE)

    def create_table_params(self, name: str) -> dict[str, Any]:
        """The arguments of DynamoDB's CreateTable for a table of this definition named ``name``."""
        return {
            "TableName": name,
            "AttributeDefinitions": [
                {"AttributeName": self.partition_key, "AttributeType": self.key_type},
                {"AttributeName": self.sort_key, "AttributeType": self.key_type},
            ],
            "KeySchema": [
                {"AttributeName": self.partition_key, "KeyType": "HASH"},
                {"AttributeName": self.sort_key, "KeyType": "RANGE"},
            ],
            "BillingMode": self.billing_mode,
            "StreamSpecification": {"StreamEnabled": True, "StreamViewType": self.stream_view_type},
        }

    def time_to_live_specification(self) -> dict[str, Any]:
        """The argument of DynamoDB's UpdateTimeToLive that turns on expiry by ``ttl_attribute``."""
        return {"Enabled": True, "AttributeName": self.ttl_attribute}


def table_definition() -> TableDefinition:
    """PK/SK strings, on demand, items expiring at ``expires_at``, a stream of new images."""
    return TableDefinition(
        partition_key=PARTITION_KEY,
        sort_key=SORT_KEY,
        key_type="S",
        ttl_attribute=TTL_ATTR,
        billing_mode="PAY_PER_REQUEST",
        stream_view_type="NEW_IMAGE",
    )
