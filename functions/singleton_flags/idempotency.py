"""Idempotency-Key: a client's key, scoped to its caller, remembered with the request it named for 24 hours.

The key's item (``IDEMPOTENCY#<sha256(caller, key)>``) is put in the same transaction as the write it names,
with the request's fingerprint and the resulting version. The same key with the same request answers the
original result; with another request it is ``IdempotencyKeyReused``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from singleton_flags.errors import IdempotencyKeyReused, InvalidRequest
from singleton_flags.keys import PARTITION_KEY, TTL_ATTR, idempotency_key

IDEMPOTENCY_TTL_SECONDS = 24 * 3600
MAX_KEY_LENGTH = 255


@dataclass(frozen=True, slots=True)
class Idempotency:
    """A client's ``Idempotency-Key``, scoped to its caller, and the fingerprint of the request it named."""

    digest: str
    fingerprint: str

    @classmethod
    def of(cls, actor: str, key: str, request: Mapping[str, Any]) -> Idempotency:
        digest = hashlib.sha256(json.dumps([actor, key]).encode()).hexdigest()
        canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return cls(digest=digest, fingerprint=hashlib.sha256(canonical.encode()).hexdigest())

    @property
    def key(self) -> dict[str, dict[str, str]]:
        return idempotency_key(self.digest)

    def put(self, table_name: str, version: int, now: float) -> dict[str, Any]:
        """The transaction's Put of this key's item; an expired item TTL has not deleted yet no longer counts."""
        return {
            "TableName": table_name,
            "Item": {
                **self.key,
                "fingerprint": {"S": self.fingerprint},
                "version": {"N": str(version)},
                TTL_ATTR: {"N": str(int(now) + IDEMPOTENCY_TTL_SECONDS)},
            },
            "ConditionExpression": "attribute_not_exists(#pk) OR #ttl < :now",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#ttl": TTL_ATTR},
            "ExpressionAttributeValues": {":now": {"N": str(int(now))}},
        }

    def remembered_version(self, item: Mapping[str, Any] | None, now: float) -> int | None:
        """The version an earlier request with this key wrote (None: the key is new or expired)."""
        if item is None or int(item.get(TTL_ATTR, {}).get("N", "0")) < int(now):
            return None
        if item.get("fingerprint", {}).get("S") != self.fingerprint:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used for a different request in the last 24 hours; use a new key",
                rule="idempotency_key",
            )
        return int(item["version"]["N"])


def parse_key(value: str | None) -> str | None:
    """The header's value if it is 1-255 visible ASCII characters (None: no header); else InvalidRequest."""
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_KEY_LENGTH or not all("!" <= char <= "~" for char in value):
        raise InvalidRequest(
            f"Idempotency-Key must be 1-{MAX_KEY_LENGTH} visible ASCII characters (e.g. a UUID)",
            rule="idempotency_key",
        )
    return value
