"""A change request as stored and as answered: its bound content (immutable, hashed into its id) and its state.

The bound content is one canonical JSON text: the exact patch (a revert is resolved to the patch it makes, and
names its target), the base version and the base values of the flags it touches and of every protected flag, its
author (normalised), reason, creation time and expiry, and the rule it was created under (the protected flags it
touches, the approvals they need). Its id is the SHA-256 of that text: nothing of it can change without changing
the id, and an item whose text no longer hashes to its id (edited around the API) is refused, never approved.
Only the state moves: ``pending`` to ``applied``, ``scheduled``, ``rejected``, ``withdrawn``, ``expired`` or
``stale``, each move conditioned on ``pending``; approvals are appended while pending, each conditioned on the count
read. A request with a time (``at``, bound too) is not applied by its last approval but ``scheduled``: the approval
creates the scheduled change (named on the request as ``schedule``) that applies it then.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from singleton_flags.codec import decode_plain, encode_plain
from singleton_flags.keys import TTL_ATTR, change_request_key
from singleton_flags_service.errors import RequestAltered

PENDING = "pending"
APPLIED = "applied"
REJECTED = "rejected"
WITHDRAWN = "withdrawn"
EXPIRED = "expired"
STALE = "stale"
SCHEDULED = "scheduled"
STATES = (PENDING, APPLIED, SCHEDULED, REJECTED, WITHDRAWN, EXPIRED, STALE)

KIND_CHANGE = "change"
KIND_REVERT = "revert"
KIND_BREAK_GLASS = "break_glass"
KINDS = (KIND_CHANGE, KIND_REVERT, KIND_BREAK_GLASS)

ID_LENGTH = 32  # hex digits of the content's SHA-256 (128 bits)

# Item attributes (low-level names: the item is built and read here only)
CONTENT_ATTR = "content"  # the canonical JSON text of the bound content
STATE_ATTR = "state"
APPROVALS_ATTR = "approvals"
DECIDED_ATTR = "decided"
APPLIED_VERSION_ATTR = "applied_version"
SCHEDULE_ATTR = "schedule"  # the scheduled change a request with a time created


def canonical(content: Mapping[str, Any]) -> str:
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def content_id(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:ID_LENGTH]


@dataclass(frozen=True, slots=True)
class ChangeRequest:
    id: str
    content: Mapping[str, Any]  # the bound content (see the module's docstring)
    state: str
    approvals: tuple[Mapping[str, str], ...] = ()
    decided: Mapping[str, str] | None = None
    applied_version: int | None = None
    schedule: str | None = None

    @classmethod
    def bind(cls, content: Mapping[str, Any]) -> ChangeRequest:
        """A new pending request of ``content`` (plain JSON values), its id the hash of its canonical text."""
        text = canonical(content)
        return cls(id=content_id(text), content=json.loads(text), state=PENDING)

    # -- the bound content --------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        return str(self.content["kind"])

    @property
    def flags(self) -> dict[str, Any]:
        return dict(self.content["flags"])

    @property
    def author(self) -> str:
        return str(self.content["author"])

    @property
    def reason(self) -> str:
        return str(self.content["reason"])

    @property
    def base_version(self) -> int:
        return int(self.content["base_version"])

    @property
    def base_values(self) -> dict[str, Any]:
        return dict(self.content["base_values"])

    @property
    def required_approvals(self) -> int:
        return int(self.content["required_approvals"])

    @property
    def at(self) -> str | None:
        """When the change applies (UTC, RFC 3339), for a request with a time; None: by its last approval."""
        at = self.content.get("at")
        return str(at) if at is not None else None

    @property
    def expires_at(self) -> float:
        return datetime.fromisoformat(self.content["expires_at"]).timestamp()

    @property
    def approvers(self) -> list[str]:
        return [approval["principal"] for approval in self.approvals]

    def effective_state(self, now: float) -> str:
        """A pending request past its expiry is expired, whether or not that was written yet."""
        return EXPIRED if self.state == PENDING and now >= self.expires_at else self.state

    # -- the item ---------------------------------------------------------------------------------------

    def item(self, retention_seconds: int) -> dict[str, Any]:
        """The request's item: kept (TTL) for the audit retention after its expiry."""
        item: dict[str, Any] = {
            **change_request_key(self.id),
            "id": {"S": self.id},
            CONTENT_ATTR: {"S": canonical(self.content)},
            STATE_ATTR: {"S": self.state},
            APPROVALS_ATTR: encode_plain([dict(approval) for approval in self.approvals]),
            "created_at": {"S": str(self.content["created_at"])},
            TTL_ATTR: {"N": str(int(self.expires_at) + retention_seconds)},
        }
        if self.decided is not None:
            item[DECIDED_ATTR] = encode_plain(dict(self.decided))
        if self.applied_version is not None:
            item[APPLIED_VERSION_ATTR] = {"N": str(self.applied_version)}
        if self.schedule is not None:
            item[SCHEDULE_ATTR] = {"S": self.schedule}
        return item

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> ChangeRequest:
        """The request an item holds; ``RequestAltered`` when its content no longer hashes to its id."""
        request_id = item["id"]["S"]
        text = item[CONTENT_ATTR]["S"]
        if content_id(text) != request_id:
            raise RequestAltered(
                f"change request {request_id} was altered outside the API (its content no longer hashes to its "
                "id): it can be neither approved nor applied; create a new one",
                id=request_id,
            )
        decided = decode_plain(item[DECIDED_ATTR]) if DECIDED_ATTR in item else None
        version = item.get(APPLIED_VERSION_ATTR)
        return cls(
            id=request_id,
            content=json.loads(text),
            state=item[STATE_ATTR]["S"],
            approvals=tuple(decode_plain(item.get(APPROVALS_ATTR, {"L": []}))),
            decided=decided,
            applied_version=int(version["N"]) if version is not None else None,
            schedule=item[SCHEDULE_ATTR]["S"] if SCHEDULE_ATTR in item else None,
        )

    def as_json(self, now: float) -> dict[str, Any]:
        """What the API answers."""
        content = self.content
        return {
            "id": self.id,
            "state": self.effective_state(now),
            "kind": content["kind"],
            "flags": content["flags"],
            "revert_to": content.get("revert_to"),
            "base_version": content["base_version"],
            "base_values": content["base_values"],
            "protected_flags": content["protected_flags"],
            "required_approvals": content["required_approvals"],
            "approvals": [dict(approval) for approval in self.approvals],
            "author": content["author"],
            "reason": content["reason"],
            "created_at": content["created_at"],
            "expires_at": content["expires_at"],
            "decided": dict(self.decided) if self.decided is not None else None,
            "applied_version": self.applied_version,
            "at": content.get("at"),
            "timezone": content.get("timezone"),
            "schedule": self.schedule,
        }


@dataclass(frozen=True, slots=True)
class Approval:
    """What an approval answered: the request after it, whether it applied the change, and the version written."""

    request: ChangeRequest
    applied: bool
    version: int | None
    replayed: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
