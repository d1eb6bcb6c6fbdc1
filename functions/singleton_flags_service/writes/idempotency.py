"""Idempotency-Key: a client's key, scoped to its caller, remembered with the answer it got for 24 hours.

The key's item (``IDEMPOTENCY#<sha256(caller, key)>``) holds the request's fingerprint and the answer: for a
change, the version it answered with and whether it wrote (a no-op is remembered too, at the version it found);
for a scheduled change, the change's id. It is put in the same transaction as what it names, conditioned on the
key not existing, so of concurrent senders of one key exactly one is answered first and every other one reads
the stored answer. The same key with another request is ``IdempotencyKeyReused``. Refusals and outages are not
remembered: a retry after one is a new attempt.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from singleton_flags.codec import decode_plain, encode_plain
from singleton_flags.keys import PARTITION_KEY, TTL_ATTR, idempotency_key
from singleton_flags_service.errors import IdempotencyKeyReused, InvalidRequest

IDEMPOTENCY_TTL_SECONDS = 24 * 3600
MAX_KEY_LENGTH = 255
ANSWER_ATTR = "answer"
REPLAYED_HEADER = "Idempotent-Replayed"  # "true" on an answer given before to the same key and request


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

    def put(self, table_name: str, now: float, answer: Mapping[str, Any]) -> dict[str, Any]:
        """The transaction's Put of this key's item with its ``answer`` (plain JSON values), conditioned on the
        key not being remembered already; an expired item TTL has not deleted yet no longer counts."""
        return {
            "TableName": table_name,
            "Item": {
                **self.key,
                "fingerprint": {"S": self.fingerprint},
                ANSWER_ATTR: encode_plain(dict(answer)),
                TTL_ATTR: {"N": str(int(now) + IDEMPOTENCY_TTL_SECONDS)},
            },
            "ConditionExpression": "attribute_not_exists(#pk) OR #ttl < :now",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#ttl": TTL_ATTR},
            "ExpressionAttributeValues": {":now": {"N": str(int(now))}},
        }

    def release(self, table_name: str) -> dict[str, Any]:
        """The transaction's Update that forgets this key's answer (its item expires now), conditioned on the item
        being this request's: for an answer that turned out to be a failure, so a retry is a new attempt."""
        return {
            "TableName": table_name,
            "Key": self.key,
            "UpdateExpression": "SET #ttl = :expired",
            "ConditionExpression": "#fingerprint = :fingerprint",
            "ExpressionAttributeNames": {"#ttl": TTL_ATTR, "#fingerprint": "fingerprint"},
            "ExpressionAttributeValues": {":expired": {"N": "0"}, ":fingerprint": {"S": self.fingerprint}},
        }

    def remembered(self, item: Mapping[str, Any] | None, now: float) -> dict[str, Any] | None:
        """The answer an earlier request with this key got (None: the key is new or expired)."""
        if item is None or int(item.get(TTL_ATTR, {}).get("N", "0")) < int(now):
            return None
        if item.get("fingerprint", {}).get("S") != self.fingerprint:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used for a different request in the last 24 hours; use a new key",
                rule="idempotency_key",
            )
        if ANSWER_ATTR in item:
            answer: dict[str, Any] = decode_plain(item[ANSWER_ATTR])
            return answer
        return {"version": int(item["version"]["N"]), "applied": True}  # kept before answers were stored whole


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
