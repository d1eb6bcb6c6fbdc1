"""The singleton as read: declared values (fallbacks where a stored value is unusable) and its bookkeeping.

Shared by the read side (the provider decodes each fetched item into one) and the write side (the store reads
and writes items through it), so neither imports the other. ``effective_values`` is the one place the
maintenance deadline is honoured for every answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from singleton_flags.codec import decode
from singleton_flags.declarations import Declarations, FlagValue
from singleton_flags.keys import (
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_FLAG,
    MAINTENANCE_OWNER_ATTR,
    UPDATED_AT_ATTR,
    UPDATED_BY_ATTR,
    VERSION_ATTR,
)

logger = logging.getLogger(__name__)  # the library's logger (stdlib); the functions attach Powertools' handler


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The singleton as fetched: declared values (fallbacks where unusable) and bookkeeping."""

    found: bool
    values: Mapping[str, FlagValue]
    version: int | None
    fetched_at: float  # epoch seconds
    updated_at: str | None = None
    updated_by: str | None = None
    maintenance_owner: str | None = None
    maintenance_deadline: float | None = None
    fallen_back: tuple[str, ...] = field(default=())  # flags whose stored value was missing or invalid

    def window_ended(self, now: float) -> bool:
        """A window switched maintenance on and its stored deadline has passed (its end never came)."""
        return (
            self.values.get(MAINTENANCE_FLAG) is True
            and self.maintenance_owner is not None
            and self.maintenance_deadline is not None
            and now >= self.maintenance_deadline
        )

    def effective_values(self, now: float) -> Mapping[str, FlagValue]:
        """What every answer serves at ``now``: the values, with maintenance off once its window is over.

        The one place that rule lives: reads, write answers, reverts and window decisions all call it.
        """
        return {**self.values, MAINTENANCE_FLAG: False} if self.window_ended(now) else self.values

    @classmethod
    def missing(cls, declarations: Declarations, fetched_at: float) -> Snapshot:
        return cls(found=False, values=declarations.fallbacks(), version=None, fetched_at=fetched_at)

    @classmethod
    def from_item(cls, item: Mapping[str, Any] | None, declarations: Declarations, fetched_at: float) -> Snapshot:
        if item is None:
            return cls.missing(declarations, fetched_at)
        values: dict[str, FlagValue] = {}
        fallen_back: list[str] = []
        for name, spec in declarations.items():
            attribute = item.get(name)
            try:
                if attribute is None:
                    raise ValueError("attribute is missing")
                value = decode(spec, attribute)
                broken = spec.violation(value)
                if broken is not None:
                    raise ValueError(f"stored value {value!r} breaks rule '{broken[0]}'")
            except (ValueError, TypeError, AttributeError) as exc:  # any shape the declaration does not allow
                fallen_back.append(name)
                logger.warning(
                    "flag unusable in the item, serving its fallback", extra={"flag": name, "problem": str(exc)}
                )
                value = spec.fallback
            values[name] = value
        deadline = _number_or_none(item.get(MAINTENANCE_DEADLINE_ATTR))
        return cls(
            found=True,
            values=values,
            version=_int_or_none(item.get(VERSION_ATTR, {}).get("N")),
            fetched_at=fetched_at,
            updated_at=item.get(UPDATED_AT_ATTR, {}).get("S"),
            updated_by=item.get(UPDATED_BY_ATTR, {}).get("S"),
            maintenance_owner=item.get(MAINTENANCE_OWNER_ATTR, {}).get("S"),
            maintenance_deadline=deadline,
            fallen_back=tuple(fallen_back),
        )


def _number_or_none(attribute: Any) -> float | None:
    try:
        return float(attribute["N"])
    except (KeyError, TypeError, ValueError):
        return None


def _int_or_none(raw: str | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None
