"""The migration seam, as writers see it: two flags items joined by a mapping while a migration expands.

A migration (``FlagStore.migrate``) writes the later item (``FLAGS#V2``) at version L+1, sets the pointer on the
earlier one (``FLAGS#V1``: ``migrated_to`` and the mapping, what readers follow) and ``migrated_from`` on the later
one, and records the migration in its own partition (``keys.migration_key``: the mapping and both declarations,
for writers only). Until it is finalised, every write of the service lands in the later item and is mirrored into
the earlier one in the same transaction, at the same version, for each flag the earlier item can still hold:

- a writer configured for the earlier item (its deployed declarations are the earlier shape) decides on the later
  item's values seen through the mapping (``Seam.view``: what its readers serve), and its changes are carried
  forward (``Seam.forward``): a renamed flag is written under its new name, a converted one converted, a flag the
  migration removed is refused (``FlagsMigrated``);
- a writer configured for the later item decides on it as on any item.

Either way the mirror (``Seam.mirror``) rewrites the earlier item from the later one's new state: every flag it can
express, its value converted back; every flag it cannot (removed, or a value its declaration refuses), removed from
it, so a reader that ignores the pointer serves that flag's fallback rather than a value no longer written. Both
items are conditioned on the versions read: a writer that raced the pointer conflicts, re-reads and writes through
the seam. Finalising marks the earlier item superseded (the marker every reader honours) and ends the mirror.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from singleton_flags.codec import encode
from singleton_flags.declarations import Declarations, parse_declarations
from singleton_flags.errors import DeclarationError, FlagsError
from singleton_flags.keys import (
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_OWNER_ATTR,
    MIGRATED_FROM_ATTR,
    MIGRATED_TO_ATTR,
    MIGRATION_MAPPING_ATTR,
    SUPERSEDED_BY_ATTR,
    UPDATED_AT_ATTR,
    UPDATED_BY_ATTR,
    VERSION_ATTR,
    migration_key,
    singleton_key,
)
from singleton_flags.migration import (
    ITEM_KEY,
    Mapping as MigrationMapping,
    MappingError,
    NotConvertible,
    parse_mapping_text,
)
from singleton_flags_service.errors import FlagsMigrated, InvalidValue, StoreFault

__all__ = [
    "EXPANDING",
    "FINALISED",
    "ROLLED_BACK",
    "Seam",
    "declarations_text",
    "seam_record",
    "set_remove",
]

EXPANDING = "expanding"  # writes land in the later item and are mirrored into the earlier one
FINALISED = "finalised"  # the earlier item is superseded; the later one is written alone
ROLLED_BACK = "rolled_back"  # the later item is superseded; the earlier one is written alone again
# What the earlier item takes from the later one besides the flags (the key, the markers and pointers are its own).
_CARRIED = (VERSION_ATTR, UPDATED_AT_ATTR, UPDATED_BY_ATTR, MAINTENANCE_OWNER_ATTR, MAINTENANCE_DEADLINE_ATTR)


def declarations_text(declarations: Declarations) -> str:
    """Declarations as the migration's record stores them: the documents ``parse_declarations`` reads back."""
    return json.dumps(declarations.document(), separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True, slots=True)
class Seam:
    """A migration that expands: the earlier item (``source``), the later one (``target``), the mapping between
    them, both declarations, the version the migration wrote, and which side this writer is configured for."""

    source: str
    target: str
    mapping: MigrationMapping
    source_declarations: Declarations
    target_declarations: Declarations
    migrated_at: int
    for_source: bool  # this writer's deployed declarations are the earlier shape
    # True while the migration expands (the earlier item mirrored); False once finalised: the earlier item is
    # superseded and a safety write of a writer still configured for it lands in the later item alone.
    mirrored: bool = True

    @classmethod
    def of(cls, configured: str, item: Mapping[str, Any], declarations: Declarations, record: Any) -> Seam | None:
        """The seam ``item`` (the configured item, as read) takes part in, from the migration's ``record`` (its
        item, or None); None when no migration expands through it, or finalised it away from it. A record that
        contradicts the item is our fault (500), never guessed around."""
        state = record.get("state", {}).get("S") if record is not None else None
        if SUPERSEDED_BY_ATTR in item:  # finalised: the earlier item's writer lands in the later one, unmirrored
            if record is None or state != FINALISED or record["source"].get("S") != configured:
                return None
            return cls.from_record(configured, declarations, record, mirrored=False)
        if MIGRATED_TO_ATTR not in item and MIGRATED_FROM_ATTR not in item:
            return None
        if state != EXPANDING:
            if record is not None:
                return None
            raise _broken(configured, "it has no migration record")
        return cls.from_record(configured, declarations, record)

    @classmethod
    def from_record(
        cls, configured: str, declarations: Declarations, record: Mapping[str, Any], *, mirrored: bool = True
    ) -> Seam:
        """The seam a migration's ``record`` describes, for a writer of ``configured`` deployed with
        ``declarations`` (the other side's come from the record), whatever the record's state."""
        try:
            mapping = parse_mapping_text(record["mapping"]["S"])
            stored = "target_declarations" if configured == mapping.source else "source_declarations"
            other = parse_declarations(json.loads(record[stored]["S"]))
            migrated_at = int(record["migrated_at"]["N"])
        except (KeyError, TypeError, ValueError, MappingError, DeclarationError) as exc:
            raise _broken(configured, f"its migration record cannot be read: {exc}") from exc
        if configured not in (mapping.source, mapping.target):
            raise _broken(configured, f"its migration record joins {mapping.source} -> {mapping.target}")
        for_source = configured == mapping.source
        return cls(
            source=mapping.source,
            target=mapping.target,
            mapping=mapping,
            source_declarations=declarations if for_source else other,
            target_declarations=other if for_source else declarations,
            migrated_at=migrated_at,
            for_source=for_source,
            mirrored=mirrored,
        )

    @staticmethod
    def record_key(configured: str, item: Mapping[str, Any]) -> dict[str, Any] | None:
        """The key of the migration record a configured item's pointer names (None: it names none); for an item
        superseded by another flags item (a finalised migration), that item's."""
        if SUPERSEDED_BY_ATTR in item:
            successor = item[SUPERSEDED_BY_ATTR].get("S") if isinstance(item[SUPERSEDED_BY_ATTR], dict) else None
            return migration_key(successor) if isinstance(successor, str) and ITEM_KEY.match(successor) else None
        if MIGRATED_TO_ATTR in item:
            target = item[MIGRATED_TO_ATTR].get("S") if isinstance(item[MIGRATED_TO_ATTR], dict) else None
            if not isinstance(target, str):
                raise _broken(configured, "its pointer is unreadable")
            return migration_key(target)
        return migration_key(configured) if MIGRATED_FROM_ATTR in item else None

    @property
    def configured(self) -> str:
        return self.source if self.for_source else self.target

    @property
    def other(self) -> str:
        """The item this writer is not configured for (read beside its own on every attempt)."""
        return self.target if self.for_source else self.source

    def refused(self, message: str) -> FlagsMigrated:
        return FlagsMigrated(message, migrated_to=self.target, migrated_at=self.migrated_at)

    def view(self, target_raw: Mapping[str, Any]) -> dict[str, Any]:
        """The later item's state in the earlier shape, as the earlier item's readers serve it: each flag it can
        express, converted back; a flag it cannot is absent (its fallback)."""
        values, causes = self.mapping.backward_item(self.source_declarations, target_raw)
        raw: dict[str, Any] = {**singleton_key(self.source)}
        raw.update({attr: target_raw[attr] for attr in _CARRIED if attr in target_raw})
        for name, value in values.items():
            if name not in causes:
                raw[name] = encode(self.source_declarations[name], value)
        return raw

    def forward(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Changes named and typed in the earlier shape, carried into the later one. A flag the migration removed,
        or a value that does not convert, is refused (nothing written)."""
        carried: dict[str, Any] = {}
        for name, value in changes.items():
            move = self.mapping.move(name)
            if move.new is None or move.new not in self.target_declarations:
                why = "was removed by the migration" if move.new is None else "is not declared in the later item"
                raise self.refused(
                    f"'{name}' {why} of {self.source} -> {self.target} (version {self.migrated_at}): it is not "
                    f"written there; switch this writer to {self.target}"
                )
            try:
                carried[move.new] = self.target_declarations[move.new].validate(move.forward(value))
            except NotConvertible as exc:
                raise InvalidValue(
                    f"'{name}' = {value!r} cannot be carried into {self.target}'s '{move.new}': {exc}",
                    flag=name,
                    rule="migration",
                ) from exc
            except FlagsError as exc:
                raise InvalidValue(
                    f"'{name}' = {value!r} becomes {self.target}'s '{move.new}', which refuses it: {exc.message}",
                    flag=name,
                    rule="migration",
                ) from exc
        return carried

    def target_name(self, name: str) -> str | None:
        return self.mapping.move(name).new

    def mirror(self, source_item: Mapping[str, Any] | None, target_raw: Mapping[str, Any]) -> dict[str, Any]:
        """The transaction item that makes the earlier item say what the later one now holds (``target_raw``): an
        ``Update`` conditioned on the earlier item being as read (at its version, still pointing, not superseded),
        or, when it was missing, a ``Put`` of it with its pointer, conditioned on its absence. Table filled in by
        the caller."""
        view = self.view(target_raw)
        if source_item is None:
            item = {**view, MIGRATED_TO_ATTR: {"S": self.target}, MIGRATION_MAPPING_ATTR: {"S": self.mapping.text}}
            return {
                "Put": {
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(#pk)",
                    "ExpressionAttributeNames": {"#pk": "PK"},
                }
            }
        sets = {attr: value for attr, value in view.items() if attr not in singleton_key(self.source)}
        removes = [
            attr
            for attr in (*self.source_declarations, MAINTENANCE_OWNER_ATTR, MAINTENANCE_DEADLINE_ATTR)
            if attr in source_item and attr not in sets
        ]
        return {"Update": conditioned_update(self.source, sets, removes, source_item, pointer=MIGRATED_TO_ATTR)}

    def still_live(self, target_raw: Mapping[str, Any]) -> dict[str, Any]:
        """A ``ConditionCheck`` (table filled in by the caller) that the later item is still as read: at its version,
        still naming the earlier item while the migration expands, not superseded."""
        return as_read(self.target, target_raw, pointer=MIGRATED_FROM_ATTR if self.mirrored else None)

    def pointer_update(self, source_item: Mapping[str, Any], target_raw: Mapping[str, Any]) -> dict[str, Any]:
        """The migration's ``Update`` of the earlier item: the mirror of the later item's first state, and the
        pointer (what readers follow), conditioned on the earlier item being as read and pointing nowhere yet."""
        update: dict[str, Any] = self.mirror(source_item, target_raw)["Update"]
        names, values = update["ExpressionAttributeNames"], update["ExpressionAttributeValues"]
        names.update({"#to": MIGRATED_TO_ATTR, "#map": MIGRATION_MAPPING_ATTR})
        values.update({":to": {"S": self.target}, ":map": {"S": self.mapping.text}})
        update["UpdateExpression"] = update["UpdateExpression"].replace("SET ", "SET #to = :to, #map = :map, ", 1)
        update["ConditionExpression"] = update["ConditionExpression"].replace(
            "attribute_exists(#p)", "attribute_not_exists(#p)"
        )
        return update


def conditioned_update(
    sort_key: str,
    sets: Mapping[str, Any],
    removes: list[str],
    read: Mapping[str, Any],
    *,
    pointer: str | None,
) -> dict[str, Any]:
    """An ``Update`` of the flags item ``sort_key`` (table filled in by the caller) that SETs ``sets`` and REMOVEs
    ``removes``, conditioned on it being as it was ``read`` (``as_read``)."""
    expression, names, values = set_remove(sets, removes)
    check = as_read(sort_key, read, pointer=pointer)
    return {
        **check,
        "UpdateExpression": expression,
        "ExpressionAttributeNames": {**names, **check["ExpressionAttributeNames"]},
        "ExpressionAttributeValues": {**values, **check["ExpressionAttributeValues"]},
    }


def as_read(sort_key: str, read: Mapping[str, Any], *, pointer: str | None) -> dict[str, Any]:
    """The key of the flags item ``sort_key`` and the condition that it is as it was ``read``: at that version,
    carrying ``pointer`` (None: a finalised migration's later item, which names nothing any more) and not
    superseded; a ``ConditionCheck``'s body, table filled in by the caller."""
    names = {"#v": VERSION_ATTR, "#s": SUPERSEDED_BY_ATTR}
    condition = "#v = :v AND attribute_not_exists(#s)"
    if pointer is not None:
        names["#p"] = pointer
        condition = "#v = :v AND attribute_exists(#p) AND attribute_not_exists(#s)"
    return {
        "Key": singleton_key(sort_key),
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {":v": read[VERSION_ATTR]},
    }


def set_remove(sets: Mapping[str, Any], removes: list[str]) -> tuple[str, dict[str, str], dict[str, Any]]:
    """An ``UpdateExpression`` that SETs ``sets`` and REMOVEs ``removes``, with its placeholders' names and
    values (``#a0``/``:a0``..., ``#r0``...: never a condition's)."""
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    clauses = []
    for index, (attr, value) in enumerate(sets.items()):
        names[f"#a{index}"] = attr
        values[f":a{index}"] = value
        clauses.append(f"#a{index} = :a{index}")
    expression = "SET " + ", ".join(clauses)
    if removes:
        names.update({f"#r{index}": attr for index, attr in enumerate(removes)})
        expression += " REMOVE " + ", ".join(f"#r{index}" for index in range(len(removes)))
    return expression, names, values


def seam_record(
    *,
    mapping: MigrationMapping,
    source_declarations: Declarations,
    target_declarations: Declarations,
    migrated_at: int,
    at: str,
    actor: str,
    reason: str,
    token: str,
) -> dict[str, Any]:
    """The migration's own record (its key, the mapping, both declarations, who, when, why, its state)."""
    return {
        **migration_key(mapping.target),
        "source": {"S": mapping.source},
        "target": {"S": mapping.target},
        "mapping": {"S": mapping.text},
        "source_declarations": {"S": declarations_text(source_declarations)},
        "target_declarations": {"S": declarations_text(target_declarations)},
        "migrated_at": {"N": str(migrated_at)},
        "at": {"S": at},
        "actor": {"S": actor},
        "reason": {"S": reason},
        "state": {"S": EXPANDING},
        "token": {"S": token},
    }


def _broken(configured: str, why: str) -> StoreFault:
    return StoreFault(
        f"the flags item {configured} takes part in a migration, but {why}: writes are refused until it is repaired"
    )
