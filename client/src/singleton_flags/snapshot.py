"""The singleton as read (``Snapshot``: declared values, fallbacks where a stored value is unusable, and its
bookkeeping) and as served to a reader (``FlagState``: a snapshot's values with why they are served).

Shared by the read side (the provider decodes each fetched item into one) and the write side (the store reads
and writes items through it), so neither imports the other. ``effective_values`` is the one place the
maintenance deadline is honoured for every answer.

What a cached read of a snapshot serves is built once, with the snapshot (``Snapshot.as_cached``), unless a
window's deadline makes it depend on the time of the read: the snapshot lives in the provider's cache, and so
does everything a cached read answers with.

An item carrying the migration pointer (``keys.MIGRATED_TO_ATTR``) is read through it: ``Snapshot.from_successor``
holds the later item's values expressed under the reader's own declarations by the mapping stored beside the
pointer (each flag they cannot express is its fallback, with the cause in ``migration_causes``), and its version.
A pointer that cannot be followed (``Snapshot.unfollowed``: unreadable, the later item missing, superseded or
pointing further) holds the declared fallbacks, served with reason DEFAULT, and why (``migration_problem``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from singleton_flags.codec import decode, iso_time
from singleton_flags.declarations import Declarations, FlagValue
from singleton_flags.keys import (
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_FLAG,
    MAINTENANCE_OWNER_ATTR,
    SUPERSEDED_AT_ATTR,
    SUPERSEDED_BY_ATTR,
    UPDATED_AT_ATTR,
    UPDATED_BY_ATTR,
    VERSION_ATTR,
)
from singleton_flags.vocabulary import (
    CACHED,
    DEADLINE_ENDED_VARIANT,
    DEFAULT,
    FALLBACK_VARIANT,
    STORED_VARIANT,
    Reason,
)

if TYPE_CHECKING:  # a type only: the mapping's module loads when an item carries the pointer, never at cold start
    from singleton_flags.migration import Mapping as MigrationMapping

__all__ = ["FlagState", "Snapshot", "flag_metadata", "flag_reason", "flag_variant"]

logger = logging.getLogger(__name__)  # the library's logger (stdlib); the functions attach Powertools' handler


@dataclass(frozen=True, slots=True)
class FlagState:
    """One read of every declared flag: the values served, why (``reason``), and the item they come from.

    ``version`` and ``fetched_at`` (epoch seconds) are those of the item read, None when the values are the
    declared fallbacks because nothing was read. ``fallen_back`` names the flags served as their fallback although
    the item was read (missing or unusable in it): their own reason is DEFAULT (``flag_reason``).
    """

    values: Mapping[str, FlagValue]
    version: int | None
    reason: Reason
    fetched_at: float | None
    maintenance_deadline_passed: bool = False
    fallen_back: tuple[str, ...] = ()  # flags served as their fallback although the item was read (missing, wrong type)
    maintenance_owner: str | None = None  # the window the item says switched maintenance on
    maintenance_deadline: float | None = None  # epoch seconds: when that window's hold ends

    def maintenance(self) -> dict[str, bool | str | None]:
        """Who holds maintenance: ``held_by`` "window" (the item names a window whose deadline has not passed),
        "manual" (on otherwise: by hand, or as the fail-closed fallback) or None (off), with that window and its
        deadline (RFC 3339, UTC) when a window holds it."""
        on = self.values.get(MAINTENANCE_FLAG) is True
        held_by_window = on and self.maintenance_owner is not None
        deadline = self.maintenance_deadline if held_by_window else None
        return {
            "on": on,
            "held_by": ("window" if held_by_window else "manual") if on else None,
            "window": self.maintenance_owner if held_by_window else None,
            "deadline": iso_time(deadline) if deadline is not None else None,
        }


def flag_reason(state: FlagState, name: str) -> Reason:
    """The reason of one flag: DEFAULT when that flag fell back, whatever the reason of the others."""
    return DEFAULT if name in state.fallen_back else state.reason


def flag_variant(state: FlagState, name: str) -> str:
    """Which value of one flag is served: ``fallback`` (its declared fallback), ``deadline_ended`` (maintenance
    switched off by its window's stored deadline) or ``stored`` (the item's value)."""
    if state.reason == DEFAULT or name in state.fallen_back:
        return FALLBACK_VARIANT
    if name == MAINTENANCE_FLAG and state.maintenance_deadline_passed:
        return DEADLINE_ENDED_VARIANT
    return STORED_VARIANT


def flag_metadata(state: FlagState, flag_type: str, flag_set_id: str) -> dict[str, bool | int | str]:
    """One evaluation's flag metadata, the same in the OpenFeature provider and OFREP: OpenFeature's well-known
    keys (``flagSetId``; ``version``, the item's version as a number), then camelCase extras (``fetchedAt``, RFC
    3339 UTC; ``type``, the declared type; ``contextIgnored``). A key without a value is absent, never null:
    ``version`` for the declared fallbacks, ``fetchedAt`` when nothing was read."""
    metadata: dict[str, bool | int | str] = {"flagSetId": flag_set_id}
    if state.version is not None:
        metadata["version"] = state.version
    if state.fetched_at is not None:
        metadata["fetchedAt"] = iso_time(state.fetched_at)
    metadata["type"] = flag_type
    metadata["contextIgnored"] = True
    return metadata


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
    # The item carries the superseded marker: what replaces it, and when. Its values are never served: a
    # superseded snapshot holds the declared fallbacks and every read of it is DEFAULT (fail closed).
    superseded_by: str | None = None
    superseded_at: str | None = None
    # Read through the migration pointer: the item read for the values, the flags the mapping cannot express and
    # why (name, cause), or why the pointer could not be followed (then every read of it is DEFAULT, fail closed).
    migrated_to: str | None = None
    migration_causes: tuple[tuple[str, str], ...] = ()
    migration_problem: str | None = None
    # What a cached read of this snapshot serves, when that does not depend on the time of the read (a window's
    # deadline could pass between two reads): None then, and ``state`` builds it per read.
    as_cached: FlagState | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        cached = None if self._has_window_deadline() else self.state(CACHED if self.found else DEFAULT, 0.0)
        object.__setattr__(self, "as_cached", cached)  # frozen: set once, here

    def _has_window_deadline(self) -> bool:
        """Maintenance is on with an owner and a deadline: ``window_ended`` may turn true between two reads."""
        return (
            self.values.get(MAINTENANCE_FLAG) is True
            and self.maintenance_owner is not None
            and self.maintenance_deadline is not None
        )

    def state(self, reason: Reason, now: float) -> FlagState:
        """What a read at ``now`` serves from this snapshot with ``reason`` (DEFAULT for an item not found or
        superseded)."""
        values = self.effective_values(now)
        if not self.found or reason == DEFAULT or self.superseded_by is not None or self.migration_problem is not None:
            return FlagState(values=values, version=None, reason=DEFAULT, fetched_at=self.fetched_at)
        return FlagState(
            values=values,
            version=self.version,
            reason=reason,
            fetched_at=self.fetched_at,
            maintenance_deadline_passed=self.window_ended(now),
            fallen_back=self.fallen_back,
            maintenance_owner=self.maintenance_owner,  # FlagState.maintenance reads them against the values
            maintenance_deadline=self.maintenance_deadline,
        )

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
    def unfollowed(
        cls, declarations: Declarations, fetched_at: float, migrated_to: str | None, problem: str
    ) -> Snapshot:
        """An item whose migration pointer cannot be followed: the declared fallbacks, and why."""
        return cls(
            found=True,
            values=declarations.fallbacks(),
            version=None,
            fetched_at=fetched_at,
            migrated_to=migrated_to,
            migration_problem=problem,
        )

    @classmethod
    def from_successor(
        cls, item: Mapping[str, Any], mapping: MigrationMapping, declarations: Declarations, fetched_at: float
    ) -> Snapshot:
        """The later item ``item`` (the pointer's target) read under ``declarations`` through ``mapping``."""
        values, causes = mapping.backward_item(declarations, item)
        return cls(
            found=True,
            values=values,
            fetched_at=fetched_at,
            fallen_back=tuple(causes),
            migrated_to=mapping.target,
            migration_causes=tuple(causes.items()),
            **_bookkeeping(item),
        )

    @classmethod
    def from_item(cls, item: Mapping[str, Any] | None, declarations: Declarations, fetched_at: float) -> Snapshot:
        if item is None:
            return cls.missing(declarations, fetched_at)
        successor = item.get(SUPERSEDED_BY_ATTR, {}).get("S")
        if successor is not None:  # the marker wins over every value: nothing of a replaced item is served
            return cls(
                found=True,
                values=declarations.fallbacks(),
                version=_int_or_none(item.get(VERSION_ATTR, {}).get("N")),
                fetched_at=fetched_at,
                superseded_by=successor,
                superseded_at=item.get(SUPERSEDED_AT_ATTR, {}).get("S"),
            )
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
        return cls(
            found=True, values=values, fetched_at=fetched_at, fallen_back=tuple(fallen_back), **_bookkeeping(item)
        )


def _bookkeeping(item: Mapping[str, Any]) -> dict[str, Any]:
    """What a live item says beside its flags: its version, who wrote it and when, maintenance's holder."""
    return {
        "version": _int_or_none(item.get(VERSION_ATTR, {}).get("N")),
        "updated_at": item.get(UPDATED_AT_ATTR, {}).get("S"),
        "updated_by": item.get(UPDATED_BY_ATTR, {}).get("S"),
        "maintenance_owner": item.get(MAINTENANCE_OWNER_ATTR, {}).get("S"),
        "maintenance_deadline": _number_or_none(item.get(MAINTENANCE_DEADLINE_ATTR)),
    }


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
