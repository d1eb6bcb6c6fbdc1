"""A migration's mapping from one flags item's shape to the next (``FLAGS#V1`` -> ``FLAGS#V2``), and what a reader
configured for the old shape makes of the new item's values.

The mapping is a JSON document (docs/lifecycle.md, "Migrating V1 -> V2"):

    {"mapping_version": 1, "from": "FLAGS#V1", "to": "FLAGS#V2",
     "flags": {"old_name": {"rename": "new_name"},
               "rate": {"convert": "int_to_float", "rounding": "half_even"},
               "retired": {"remove": true}},
     "add": {"new_flag": {"initial": 0.5}}}

Every old flag not named under ``flags`` is kept under its name, its type unchanged; every new flag is the target
of exactly one old flag, or listed under ``add``. Conversions are a closed set of names, each with both directions
(``CONVERSIONS``); nothing in a mapping is evaluated. ``rounding`` applies to whichever direction turns a float into
an int: ``exact`` (the default) refuses a value with a fraction, the others round it.

``parse_mapping`` checks a document alone; ``Mapping.check`` checks it against both declarations. Every error is a
``MappingError`` naming the field and the flag. ``Mapping.backward`` expresses a new item's values under the old
declarations (what a reader still configured for the old item serves); ``Mapping.forward`` converts one old value
into the new shape (what a migration would write, and what its dry run checks).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass, field, replace
from typing import Any

from singleton_flags.codec import decode
from singleton_flags.declarations import Declarations, FlagSpec, FlagValue, type_matches
from singleton_flags.keys import MIGRATED_TO_ATTR, MIGRATION_MAPPING_ATTR

__all__ = [
    "CONVERSIONS",
    "MAPPING_VERSION",
    "MAX_MAPPING_BYTES",
    "ROUNDINGS",
    "Conversion",
    "FlagMove",
    "Mapping",
    "MappingError",
    "NotConvertible",
    "parse_mapping",
    "parse_mapping_text",
    "read_pointer",
]

MAPPING_VERSION = 1
MAX_MAPPING_BYTES = 64 * 1024  # stored on the old item with its pointer: small beside DynamoDB's 400 KB per item
ITEM_KEY = re.compile(r"^FLAGS#V([1-9][0-9]{0,5})$")
_TOP_FIELDS = {"mapping_version", "from", "to", "flags", "add"}
_FLAG_FIELDS = {"rename", "convert", "rounding", "remove", "true", "false"}
# How a float becomes an int: ``exact`` refuses a fraction; the others round it as ``decimal``'s rule of that name
# (imported when a value is converted: a reader that never follows a pointer never loads it).
ROUNDINGS = {
    "exact": None,
    "half_even": "ROUND_HALF_EVEN",
    "half_away_from_zero": "ROUND_HALF_UP",
    "floor": "ROUND_FLOOR",
    "ceil": "ROUND_CEILING",
    "toward_zero": "ROUND_DOWN",
}
_MAX_EXACT_INT = 2**53  # an int a float holds exactly


class MappingError(ValueError):
    """A mapping that cannot be used: the message names the field and the flag."""


class NotConvertible(ValueError):
    """One value that a conversion cannot carry into the other type (a fraction under ``exact``, a string that is
    neither of a bool's two strings): the flag is refused by a migration, served as its fallback by a reader."""


@dataclass(frozen=True, slots=True)
class Conversion:
    """A named conversion between two declared types, in both directions."""

    name: str
    source: str  # the old flag's type
    target: str  # the new flag's type


CONVERSIONS = {
    conversion.name: conversion
    for conversion in (
        Conversion("int_to_float", "int", "float"),
        Conversion("float_to_int", "float", "int"),
        Conversion("bool_to_string", "bool", "string"),
        Conversion("string_to_bool", "string", "bool"),
    )
}


@dataclass(frozen=True, slots=True)
class FlagMove:
    """What becomes of one old flag: its new name (None: removed), and the conversion of its value, if any."""

    old: str
    new: str | None
    conversion: str | None = None
    rounding: str = "exact"
    true_text: str = "true"
    false_text: str = "false"

    def forward(self, value: FlagValue) -> FlagValue:
        """The old value in the new type; ``NotConvertible`` when it cannot be carried."""
        return self._convert(value, self.conversion, to_new=True)

    def backward(self, value: FlagValue) -> FlagValue:
        """The new value in the old type; ``NotConvertible`` when the old type cannot express it."""
        return self._convert(value, self.conversion, to_new=False)

    def _convert(self, value: FlagValue, conversion: str | None, *, to_new: bool) -> FlagValue:
        if conversion is None:
            return value
        direction = conversion if to_new else _REVERSE[conversion]
        if direction == "int_to_float":
            if isinstance(value, bool) or not isinstance(value, int):
                raise NotConvertible(f"{value!r} is not an int")
            if abs(value) > _MAX_EXACT_INT:
                raise NotConvertible(f"{value} is beyond what a float holds exactly (2**53)")
            return float(value)
        if direction == "float_to_int":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise NotConvertible(f"{value!r} is not a finite number")
            from decimal import Decimal  # only where a value is converted

            number = Decimal(repr(float(value)))
            if number == number.to_integral_value():
                return int(number)
            rounding = ROUNDINGS[self.rounding]
            if rounding is None:
                raise NotConvertible(f"{value!r} has a fraction and the rounding is 'exact'")
            return int(number.to_integral_value(rounding=rounding))
        if direction == "bool_to_string":
            if not isinstance(value, bool):
                raise NotConvertible(f"{value!r} is not a bool")
            return self.true_text if value else self.false_text
        # string_to_bool
        if value == self.true_text and isinstance(value, str):
            return True
        if value == self.false_text and isinstance(value, str):
            return False
        raise NotConvertible(f"{value!r} is neither {self.true_text!r} nor {self.false_text!r}")


_REVERSE = {
    "int_to_float": "float_to_int",
    "float_to_int": "int_to_float",
    "bool_to_string": "string_to_bool",
    "string_to_bool": "bool_to_string",
}


@dataclass(frozen=True, slots=True)
class Mapping:
    """A parsed mapping: the items it joins, what becomes of each old flag it names, the flags it adds."""

    source: str  # the old item's sort key (FLAGS#V1)
    target: str  # the new item's sort key (FLAGS#V2)
    moves: dict[str, FlagMove] = field(default_factory=dict)  # by old name; an old flag not named is kept as is
    added: dict[str, Any] = field(default_factory=dict)  # new flag -> its initial ({} entry: the declared one)
    text: str = ""  # the document as given: what a migration stores beside its pointer

    def move(self, old: str) -> FlagMove:
        """What becomes of old flag ``old``: its move, or kept under its name, unconverted."""
        return self.moves.get(old) or FlagMove(old, old)

    def check(self, old: Declarations, new: Declarations) -> None:
        """The mapping against both declarations: every flag it names exists, every conversion joins the declared
        types, every new flag has exactly one origin, every added initial is valid. Raises ``MappingError``."""
        for name in self.moves:
            if name not in old:
                raise MappingError(f"flags.{name}: no flag '{name}' is declared in the current declarations")
        origins: dict[str, str] = {}
        for name, spec in old.items():
            move = self.move(name)
            if move.new is None:
                continue
            target = new.get(move.new)
            if target is None:
                how = f"is renamed to '{move.new}', which" if move.new != name else "is kept, but it"
                raise MappingError(
                    f"flags.{name}: '{name}' {how} is not declared in the new declarations "
                    f'(rename it to a declared flag, or give {{"remove": true}})'
                )
            if move.new in origins:
                raise MappingError(f"flags.{name}: '{move.new}' is already the new name of '{origins[move.new]}'")
            origins[move.new] = name
            _check_types(move, spec, target)
        for name in self.added:
            if name in origins:
                raise MappingError(f"add.{name}: '{name}' already comes from the current flag '{origins[name]}'")
            added = new.get(name)
            if added is None:
                raise MappingError(f"add.{name}: no flag '{name}' is declared in the new declarations")
            if "initial" in self.added[name]:
                broken = added.violation(self.added[name]["initial"])
                if broken is not None:
                    raise MappingError(f"add.{name}.initial breaks rule '{broken[0]}': {broken[1]}")
        for name in new:
            if name not in origins and name not in self.added:
                raise MappingError(
                    f"'{name}' is declared in the new declarations but no current flag becomes it: rename one to it, "
                    f'or list it under "add" with its initial'
                )

    def initial(self, name: str, spec: FlagSpec) -> FlagValue:
        """The value an added flag starts with: the mapping's, else its declared initial."""
        given = self.added.get(name, {})
        return spec.validate(given["initial"]) if "initial" in given else spec.initial

    def backward_item(
        self, old: Declarations, item: AbcMapping[str, Any]
    ) -> tuple[dict[str, FlagValue], dict[str, str]]:
        """``backward`` over the new item as stored: each attribute an old flag becomes is decoded as the type the
        mapping gives it (its conversion's target, else the old flag's own), then converted back."""
        decoded: dict[str, FlagValue] = {}
        for name, spec in old.items():
            move = self.move(name)
            if move.new is None or move.new not in item:
                continue
            kind = CONVERSIONS[move.conversion].target if move.conversion else spec.type
            try:
                decoded[move.new] = decode(replace(spec, type=kind), item[move.new])
            except (ValueError, TypeError, AttributeError):
                continue  # unusable in the new item: served as the old flag's fallback, with that cause
        return self.backward(old, decoded)

    def backward(
        self, old: Declarations, new_values: AbcMapping[str, FlagValue]
    ) -> tuple[dict[str, FlagValue], dict[str, str]]:
        """The new item's values expressed under the old declarations: (values, causes) where ``causes`` names each
        old flag served as its fallback and why (removed, not convertible, not valid under its old declaration,
        missing or unusable in the new item)."""
        values: dict[str, FlagValue] = {}
        causes: dict[str, str] = {}
        for name, spec in old.items():
            move = self.move(name)
            try:
                if move.new is None:
                    raise NotConvertible(f"removed by the migration to {self.target}")
                if move.new not in new_values:
                    raise NotConvertible(f"'{move.new}' is missing or unusable in {self.target}")
                value = move.backward(new_values[move.new])
                broken = spec.violation(value)
                if broken is not None:
                    raise NotConvertible(f"{value!r} (from '{move.new}') breaks its rule '{broken[0]}': {broken[1]}")
            except NotConvertible as exc:
                causes[name] = str(exc)
                value = spec.fallback
            values[name] = float(value) if spec.type == "float" else value
        return values, causes


def _check_types(move: FlagMove, old: FlagSpec, new: FlagSpec) -> None:
    where = f"flags.{move.old}"
    if move.conversion is None:
        if old.type != new.type:
            raise MappingError(
                f"{where}: '{move.old}' is {_a(old.type)} and '{new.name}' {_a(new.type)}: give a conversion "
                f"(one of {sorted(CONVERSIONS)})"
            )
        return
    conversion = CONVERSIONS[move.conversion]
    if (conversion.source, conversion.target) != (old.type, new.type):
        raise MappingError(
            f"{where}.convert: '{move.conversion}' turns {_a(conversion.source)} into {_a(conversion.target)}, but "
            f"'{move.old}' is {_a(old.type)} and '{new.name}' {_a(new.type)}"
        )


def _a(flag_type: str) -> str:
    return f"an {flag_type}" if flag_type == "int" else f"a {flag_type}"


def _item_key(document: dict[str, Any], name: str) -> str:
    value = document.get(name)
    if not isinstance(value, str) or not ITEM_KEY.fullmatch(value):
        raise MappingError(f"'{name}' must be a flags item's sort key, FLAGS#V<n>, got {value!r}")
    return value


def _move(old: str, raw: Any) -> FlagMove:
    where = f"flags.{old}"
    if not isinstance(raw, dict) or not raw:
        raise MappingError(
            f'{where} must be a non-empty object: {{"rename": ...}}, {{"convert": ...}} or {{"remove": true}}'
        )
    unknown = set(raw) - _FLAG_FIELDS
    if unknown:
        raise MappingError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_FLAG_FIELDS)}")
    if "remove" in raw:
        if raw["remove"] is not True:
            raise MappingError(f"{where}.remove must be true")
        if len(raw) > 1:
            raise MappingError(f"{where}: a removed flag takes nothing else, got {sorted(set(raw) - {'remove'})}")
        return FlagMove(old, None)
    new = raw.get("rename", old)
    if not isinstance(new, str) or not re.fullmatch(r"[a-z][a-z0-9_]{0,62}", new):
        raise MappingError(f"{where}.rename must be a flag name, got {new!r}")
    if "rename" in raw and new == old:
        raise MappingError(f"{where}.rename names the flag itself: leave 'rename' out")
    conversion = raw.get("convert")
    if conversion is not None and conversion not in CONVERSIONS:
        raise MappingError(f"{where}.convert: unknown conversion {conversion!r}; use one of {sorted(CONVERSIONS)}")
    rounding = raw.get("rounding", "exact")
    if "rounding" in raw and conversion not in ("int_to_float", "float_to_int"):
        raise MappingError(f"{where}.rounding is only for int_to_float or float_to_int")
    if rounding not in ROUNDINGS:
        raise MappingError(f"{where}.rounding: unknown rule {rounding!r}; use one of {list(ROUNDINGS)}")
    texts = {key: raw[key] for key in ("true", "false") if key in raw}
    if texts and conversion not in ("bool_to_string", "string_to_bool"):
        raise MappingError(f"{where}: 'true' and 'false' are only for bool_to_string or string_to_bool")
    for key, text in texts.items():
        if not isinstance(text, str) or not text:
            raise MappingError(f"{where}.{key} must be a non-empty string")
    true_text, false_text = texts.get("true", "true"), texts.get("false", "false")
    if true_text == false_text:
        raise MappingError(f"{where}: 'true' and 'false' must be two different strings")
    if new == old and conversion is None:
        raise MappingError(f"{where} changes nothing: give 'rename', 'convert' or 'remove'")
    return FlagMove(old, new, conversion, rounding, true_text, false_text)


def parse_mapping(document: Any, *, text: str | None = None) -> Mapping:
    """A mapping document checked alone (its fields, names, conversions); ``Mapping.check`` checks it against the
    declarations. Raises ``MappingError`` naming what is wrong."""
    if not isinstance(document, dict):
        raise MappingError("a mapping must be a JSON object")
    unknown = set(document) - _TOP_FIELDS
    if unknown:
        raise MappingError(f"unknown field(s) {sorted(unknown)}; allowed: {sorted(_TOP_FIELDS)}")
    version = document.get("mapping_version")
    if version != MAPPING_VERSION or isinstance(version, bool):
        raise MappingError(f"'mapping_version' must be {MAPPING_VERSION}, got {version!r}")
    source, target = _item_key(document, "from"), _item_key(document, "to")
    source_n, target_n = ITEM_KEY.fullmatch(source), ITEM_KEY.fullmatch(target)
    assert source_n is not None and target_n is not None  # noqa: S101 - checked by _item_key
    if int(target_n.group(1)) <= int(source_n.group(1)):
        raise MappingError(f"'to' ({target}) must be a later item than 'from' ({source})")
    flags = document.get("flags", {})
    if not isinstance(flags, dict):
        raise MappingError("'flags' must be an object of current flag name -> what becomes of it")
    added = document.get("add", {})
    if not isinstance(added, dict):
        raise MappingError("'add' must be an object of new flag name -> {\"initial\": value}")
    moves = {old: _move(old, raw) for old, raw in flags.items()}
    for name, raw in added.items():
        if not isinstance(raw, dict) or set(raw) - {"initial"}:
            raise MappingError(f'add.{name} must be an object with at most "initial"')
        if "initial" in raw and not any(
            type_matches(kind, raw["initial"]) for kind in ("bool", "int", "float", "string")
        ):
            raise MappingError(f"add.{name}.initial must be a bool, a number or a string")
    if not moves and not added:
        raise MappingError("the mapping changes nothing: no 'flags' entry and no 'add' entry")
    canonical = text if text is not None else json.dumps(document, sort_keys=True, separators=(",", ":"))
    return Mapping(source, target, moves, {name: dict(raw) for name, raw in added.items()}, canonical)


def parse_mapping_text(text: str) -> Mapping:
    """A mapping from its JSON text (a file, or the attribute stored beside the pointer)."""
    if len(text.encode("utf-8")) > MAX_MAPPING_BYTES:
        raise MappingError(f"a mapping is at most {MAX_MAPPING_BYTES} bytes")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise MappingError(f"not JSON: {exc}") from exc
    return parse_mapping(document, text=text)


def read_pointer(own_key: str, item: AbcMapping[str, Any]) -> Mapping:
    """The mapping an item's migration pointer carries, checked against the pointer and the item it is read from
    (``own_key``). Raises ``MappingError`` saying why a reader cannot follow it."""
    pointer = item.get(MIGRATED_TO_ATTR)
    target = pointer.get("S") if isinstance(pointer, dict) else None
    if not isinstance(target, str) or not ITEM_KEY.fullmatch(target):
        raise MappingError(f"its '{MIGRATED_TO_ATTR}' is not a flags item's sort key (FLAGS#V<n>): {pointer!r}")
    stored = item.get(MIGRATION_MAPPING_ATTR)
    text = stored.get("S") if isinstance(stored, dict) else None
    if not isinstance(text, str):
        raise MappingError(f"it has no '{MIGRATION_MAPPING_ATTR}' text beside its pointer to {target}")
    try:
        mapping = parse_mapping_text(text)
    except MappingError as exc:
        raise MappingError(f"its '{MIGRATION_MAPPING_ATTR}' cannot be read: {exc}") from exc
    if mapping.source != own_key or mapping.target != target:
        raise MappingError(
            f"its mapping joins {mapping.source} -> {mapping.target}, but the pointer says {own_key} -> {target}"
        )
    return mapping
