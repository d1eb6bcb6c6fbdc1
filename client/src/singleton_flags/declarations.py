"""Typed loader for declarations.json, the single source of truth for every flag.

Each flag may carry its lifecycle: ``owner``, ``state`` (``active``, the default; ``deprecated`` with its
``deprecated_on`` date; ``removed``), a ``note``, and ``permanent``. A flag is permanent by default when it is an
operational control rather than a release toggle: ``maintenance_mode`` (always), and every flag whose fallback
differs from its initial value (a deliberate degraded position: a kill switch on normally and off on failure, a
conservative limit); ``"permanent": false`` or ``true`` overrides the rule for any other flag.

The seed, the API validation, the read fallbacks and the docs all come from ``load_declarations(path)``.
A broken file raises ``DeclarationError`` naming the flag, at import time of whoever loads it (a
function's cold start, ``cdk synth``, the test session), so a bad declaration never deploys.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from singleton_flags.errors import DeclarationError, InvalidRequest, InvalidValue, UnknownFlag
from singleton_flags.keys import BOOKKEEPING_ATTRS, MAINTENANCE_FLAG

__all__ = [
    "DEFAULT_STRING_MAX_LENGTH",
    "LIFECYCLE_STATES",
    "NAME_PATTERN",
    "NUMBER_MAX_MAGNITUDE_EXCLUSIVE",
    "NUMBER_MAX_SIGNIFICANT_DIGITS",
    "NUMBER_MIN_MAGNITUDE",
    "PRINCIPAL_PATTERN",
    "RESERVED_FLAG_NAMES",
    "TYPES",
    "Declarations",
    "FlagSpec",
    "FlagValue",
    "Protection",
    "UnstorableNumber",
    "load_declarations",
    "number_violation",
    "parse_declarations",
    "type_matches",
]

FlagValue = bool | int | float | str

_INTEGER_LITERAL = re.compile(r"-?[0-9]+")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
# Names no flag may take: the HTTP API's static children of /flags (a flag so named would be shadowed by the route
# in GET /flags/{name}; the service's route table checks its own against this set) and the runner's local routes.
RESERVED_FLAG_NAMES = frozenset(
    {
        "history",
        "revert",
        "restore",
        "declarations",
        "windows",
        "schedules",
        "guards",
        "change-requests",
        "migration",
        "openapi",
        "schema",
        "_scheduler",
    }
)
DEFAULT_STRING_MAX_LENGTH = 256
TYPES: dict[str, tuple[type, ...]] = {"bool": (bool,), "int": (int,), "float": (float, int), "string": (str,)}
_FIELDS = {"name", "type", "initial", "fallback", "description", "min", "max", "enum", "max_length", "protection"}
_LIFECYCLE_FIELDS = {"owner", "state", "deprecated_on", "note", "permanent"}
ACTIVE, DEPRECATED, REMOVED = "active", "deprecated", "removed"
LIFECYCLE_STATES = (ACTIVE, DEPRECATED, REMOVED)
MAX_OWNER_LENGTH = 128
MAX_NOTE_LENGTH = 1024
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# The flag the maintenance windows switch: an operational control, always permanent.
_ALWAYS_PERMANENT = frozenset({MAINTENANCE_FLAG})
_PROTECTION_FIELDS = {"approvals", "approvers", "break_glass"}
MAX_APPROVALS = 10
MAX_PRINCIPAL_PATTERNS = 20
# An IAM principal's ARN (a user, a role, an assumed-role session) with `*` wildcards: what the approval rules
# match against the normalised caller (singleton_flags_service.approvals.principals).
PRINCIPAL_PATTERN = re.compile(r"^arn:aws[a-z-]*:(iam|sts)::(\*|[0-9]{12}):[A-Za-z0-9+=,.@_/*-]{1,512}$")

# What a DynamoDB Number can hold (docs/decisions.md): 0, or a magnitude from 1E-130 to below 1E+126, with at
# most 38 significant digits.
NUMBER_MIN_MAGNITUDE = 1e-130
NUMBER_MAX_MAGNITUDE_EXCLUSIVE = 10**126
NUMBER_MAX_SIGNIFICANT_DIGITS = 38


class UnstorableNumber:
    """A JSON number too large or too small for DynamoDB (or for a float), kept as its text, never converted."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        shown = self.text if len(self.text) <= 40 else f"{self.text[:20]}...({len(self.text)} characters)"
        return shown


def number_violation(value: int | float | UnstorableNumber) -> str | None:
    """Why DynamoDB could not store ``value`` as a Number, or None when it can. No int-to-str conversion of a
    number before its magnitude is known to be small (Python refuses ints over 4,300 digits)."""
    if isinstance(value, UnstorableNumber):
        return f"{value!r} is outside what DynamoDB can store (magnitude 1E-130 to 9.99E+125)"
    if isinstance(value, int):
        if abs(value) >= NUMBER_MAX_MAGNITUDE_EXCLUSIVE:
            return "the magnitude must be below 1E+126, what DynamoDB can store"
        if len(str(abs(value)).rstrip("0")) > NUMBER_MAX_SIGNIFICANT_DIGITS:
            return f"DynamoDB stores at most {NUMBER_MAX_SIGNIFICANT_DIGITS} significant digits, got {value!r}"
        return None
    if not math.isfinite(value):
        return None  # the type rule refuses it
    # compared as floats: what is stored is repr(value), and repr(1e126) is "1e+126", which DynamoDB refuses
    if value != 0 and not NUMBER_MIN_MAGNITUDE <= abs(value) < float(NUMBER_MAX_MAGNITUDE_EXCLUSIVE):
        return f"the magnitude must be 0 or between 1E-130 and 9.99E+125, what DynamoDB can store; got {value!r}"
    return None


def type_matches(flag_type: str, value: Any) -> bool:
    """JSON types are strict: the string "true" is not a bool, and a bool is never a number."""
    if isinstance(value, bool):
        return flag_type == "bool"
    if isinstance(value, UnstorableNumber):
        return flag_type == "float" or (flag_type == "int" and _INTEGER_LITERAL.fullmatch(value.text) is not None)
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, TYPES[flag_type])


@dataclass(frozen=True, slots=True)
class Protection:
    """What a change of a flag needs: ``approvals`` other principals' approvals (0: none, a direct write), who may
    approve (``approvers``: ARN patterns; empty: any caller of the approve route) and who may break glass
    (``break_glass``: ARN patterns; empty: nobody)."""

    approvals: int = 0
    approvers: tuple[str, ...] = ()
    break_glass: tuple[str, ...] = ()

    @property
    def protected(self) -> bool:
        return self.approvals > 0

    def as_doc(self) -> dict[str, Any]:
        return {"approvals": self.approvals, "approvers": list(self.approvers), "break_glass": list(self.break_glass)}


@dataclass(frozen=True, slots=True)
class FlagSpec:
    name: str
    type: str
    initial: FlagValue
    fallback: FlagValue
    description: str = ""
    minimum: int | float | None = None
    maximum: int | float | None = None
    choices: tuple[str | int | float, ...] | None = None
    max_length: int | None = None
    protection: Protection | None = None  # None: declared without one (approvals 0)
    owner: str = ""
    state: str = ACTIVE
    deprecated_on: str | None = None  # an ISO date (YYYY-MM-DD), set when deprecated (or removed after it)
    note: str = ""
    permanent: bool | None = None  # None: the default rule (``is_permanent``)

    @property
    def is_permanent(self) -> bool:
        """Never a stale candidate: declared so, or by default an operational control (``maintenance_mode``, or a
        flag whose fallback differs from its initial value: a kill switch, a conservative limit)."""
        if self.name in _ALWAYS_PERMANENT:
            return True
        if self.permanent is not None:
            return self.permanent
        return self.fallback != self.initial

    @property
    def protected(self) -> bool:
        """A change of this flag needs approvals: never a direct write."""
        return self.protection is not None and self.protection.protected

    def violation(self, value: Any) -> tuple[str, str] | None:
        """The rule ``value`` breaks and why, or None when it is a valid value of this flag."""
        if not type_matches(self.type, value):
            return "type", f"expected a JSON {_JSON_TYPE_NAMES[self.type]}, got {_json_type_name(value)}"
        if self.type in ("int", "float"):
            unstorable = number_violation(value)
            if unstorable is not None:
                return "range", unstorable
        if self.minimum is not None and value < self.minimum:
            return "min", f"must be >= {self.minimum}, got {value!r}"
        if self.maximum is not None and value > self.maximum:
            return "max", f"must be <= {self.maximum}, got {value!r}"
        if self.choices is not None and value not in self.choices:
            return "enum", f"must be one of {list(self.choices)}, got {value!r}"
        if self.type == "string" and len(value) > (self.max_length or DEFAULT_STRING_MAX_LENGTH):
            return "max_length", f"must be at most {self.max_length or DEFAULT_STRING_MAX_LENGTH} characters"
        return None

    def validate(self, value: Any) -> FlagValue:
        """Return ``value`` normalised to the flag's type, or raise InvalidValue naming the flag and rule."""
        broken = self.violation(value)
        if broken is not None:
            rule, why = broken
            raise InvalidValue(f"flag '{self.name}': {why}", flag=self.name, rule=rule)
        return float(value) if self.type == "float" else value

    def as_doc(self) -> dict[str, Any]:
        """The declaration as JSON (for docs and the OpenAPI schema)."""
        doc: dict[str, Any] = {"type": self.type, "initial": self.initial, "fallback": self.fallback}
        limits = (("min", self.minimum), ("max", self.maximum), ("max_length", self.max_length))
        doc.update({key: value for key, value in limits if value is not None})
        if self.choices is not None:
            doc["enum"] = list(self.choices)
        doc["description"] = self.description
        if self.protection is not None:
            doc["protection"] = self.protection.as_doc()
        lifecycle: dict[str, str | bool | None] = {
            "owner": self.owner or None,
            "state": None if self.state == ACTIVE else self.state,
            "deprecated_on": self.deprecated_on,
            "note": self.note or None,
            "permanent": self.permanent,
        }
        doc.update({key: value for key, value in lifecycle.items() if value is not None})
        return doc

    def lifecycle_doc(self) -> dict[str, Any]:
        """The flag's lifecycle: ``state`` and ``permanent`` (as the rule resolves it) always, the owner, the date
        and the note when declared (never a null)."""
        doc: dict[str, Any] = {"state": self.state, "permanent": self.is_permanent}
        given = (("owner", self.owner), ("deprecated_on", self.deprecated_on), ("note", self.note))
        doc.update({key: value for key, value in given if value})
        return doc


_JSON_TYPE_NAMES = {"bool": "boolean", "int": "integer", "float": "number", "string": "string"}


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, UnstorableNumber):
        return "number"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "a non-finite number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


class Declarations(Mapping[str, FlagSpec]):
    """The declared flags by name, in file order."""

    def __init__(self, specs: list[FlagSpec], trusted_session_roles: tuple[str, ...] = ()) -> None:
        self._specs = {spec.name: spec for spec in specs}
        # Roles whose trust policy makes the session name the person (sts:RoleSessionName or sts:SourceIdentity
        # enforced): their sessions count as distinct principals; every other role's sessions are the role.
        self.trusted_session_roles = trusted_session_roles

    @property
    def protected(self) -> frozenset[str]:
        """The flags a change of which needs approvals."""
        return frozenset(name for name, spec in self._specs.items() if spec.protected)

    def __getitem__(self, name: str) -> FlagSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def fallbacks(self) -> dict[str, FlagValue]:
        return {name: spec.fallback for name, spec in self._specs.items()}

    def as_documents(self) -> list[dict[str, Any]]:
        """Every declaration as JSON, its name first, in file order, with its lifecycle (``state`` and ``permanent``
        always given, resolved): GET /flags/declarations."""
        return [{"name": name, **spec.as_doc(), **spec.lifecycle_doc()} for name, spec in self._specs.items()]

    def deprecated(self) -> dict[str, FlagSpec]:
        """The flags declared deprecated, by name."""
        return {name: spec for name, spec in self._specs.items() if spec.state == DEPRECATED}

    def initials(self) -> dict[str, FlagValue]:
        return {name: spec.initial for name, spec in self._specs.items()}

    def document(self) -> dict[str, Any]:
        """The declarations file these declarations parse from (``parse_declarations(d.document())`` equals d)."""
        document: dict[str, Any] = {"flags": [{"name": spec.name, **spec.as_doc()} for spec in self._specs.values()]}
        if self.trusted_session_roles:
            document["trusted_session_roles"] = list(self.trusted_session_roles)
        return document

    def validate_changes(self, changes: Any) -> dict[str, FlagValue]:
        """A requested change checked against the declarations (declared, typed, within its rules); nothing is
        read or written here. Raises the precise refusal: which flag, which rule."""
        if not isinstance(changes, dict) or not changes:
            raise InvalidRequest("'flags' must be a non-empty object of flag name -> value", rule="empty_change")
        normalized: dict[str, FlagValue] = {}
        for name, value in changes.items():
            spec = self._specs.get(name)
            if spec is None:
                raise UnknownFlag(f"flag '{name}' is not declared", flag=name, rule="declared")
            normalized[name] = spec.validate(value)
        return normalized


def _spec_from(raw: Any, position: int) -> FlagSpec:
    if not isinstance(raw, dict):
        raise DeclarationError(f"flag #{position}: a declaration must be an object")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise DeclarationError(f"flag #{position} ({name!r}): name must match {NAME_PATTERN.pattern}")
    if name in RESERVED_FLAG_NAMES or name in BOOKKEEPING_ATTRS:
        raise DeclarationError(f"flag '{name}': the name is reserved (an API path or a bookkeeping attribute)")
    unknown = set(raw) - _FIELDS - _LIFECYCLE_FIELDS
    if unknown:
        raise DeclarationError(f"flag '{name}': unknown field(s) {sorted(unknown)}")
    flag_type = raw.get("type")
    if flag_type not in TYPES:
        raise DeclarationError(f"flag '{name}': unknown type {flag_type!r}; use one of {sorted(TYPES)}")
    for field in ("initial", "fallback"):
        if field not in raw:
            raise DeclarationError(f"flag '{name}': '{field}' is required")
    for field in ("min", "max"):
        if field in raw and (flag_type not in ("int", "float") or not type_matches(flag_type, raw[field])):
            raise DeclarationError(f"flag '{name}': '{field}' must be a {flag_type} and only numbers take it")
        if field in raw and (unstorable := number_violation(raw[field])) is not None:
            raise DeclarationError(f"flag '{name}': '{field}' breaks rule 'range': {unstorable}")
    if "enum" in raw:
        choices = raw["enum"]
        if not isinstance(choices, list) or not choices or not all(type_matches(flag_type, c) for c in choices):
            raise DeclarationError(f"flag '{name}': 'enum' must be a non-empty list of {flag_type} values")
        for choice in choices if flag_type in ("int", "float") else ():
            if (unstorable := number_violation(choice)) is not None:
                raise DeclarationError(f"flag '{name}': an 'enum' value breaks rule 'range': {unstorable}")
    if "max_length" in raw and (flag_type != "string" or not type_matches("int", raw["max_length"])):
        raise DeclarationError(f"flag '{name}': 'max_length' is an int and only strings take it")
    if not isinstance(raw.get("description", ""), str):
        raise DeclarationError(f"flag '{name}': 'description' must be a string")
    spec = FlagSpec(
        **_lifecycle_from(name, raw),
        protection=_protection_from(name, raw["protection"]) if "protection" in raw else None,
        name=name,
        type=flag_type,
        initial=raw["initial"],
        fallback=raw["fallback"],
        description=raw.get("description", ""),
        minimum=raw.get("min"),
        maximum=raw.get("max"),
        choices=tuple(raw["enum"]) if "enum" in raw else None,
        max_length=raw.get("max_length"),
    )
    if spec.minimum is not None and spec.maximum is not None and spec.minimum > spec.maximum:
        raise DeclarationError(f"flag '{name}': min {spec.minimum} is greater than max {spec.maximum}")
    for field in ("initial", "fallback"):
        broken = spec.violation(raw[field])
        if broken is not None:
            raise DeclarationError(f"flag '{name}': {field} breaks rule '{broken[0]}': {broken[1]}")
    if flag_type == "float":  # 1 in a float flag's file means 1.0
        spec = replace(spec, initial=float(spec.initial), fallback=float(spec.fallback))
    return spec


def _lifecycle_from(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The lifecycle fields of a declaration, checked: FlagSpec's keyword arguments."""
    where = f"flag '{name}'"
    owner, note, state = raw.get("owner", ""), raw.get("note", ""), raw.get("state", ACTIVE)
    if not isinstance(owner, str) or len(owner) > MAX_OWNER_LENGTH:
        raise DeclarationError(f"{where}: 'owner' must be a string of at most {MAX_OWNER_LENGTH} characters")
    if not isinstance(note, str) or len(note) > MAX_NOTE_LENGTH:
        raise DeclarationError(f"{where}: 'note' must be a string of at most {MAX_NOTE_LENGTH} characters")
    if state not in LIFECYCLE_STATES:
        raise DeclarationError(f"{where}: 'state' must be one of {list(LIFECYCLE_STATES)}, got {state!r}")
    deprecated_on = raw.get("deprecated_on")
    if deprecated_on is None and state == DEPRECATED:
        raise DeclarationError(f"{where}: a deprecated flag needs 'deprecated_on' (YYYY-MM-DD): when it was")
    if deprecated_on is not None:
        if state == ACTIVE:
            raise DeclarationError(f"{where}: 'deprecated_on' is only for a deprecated or removed flag")
        if not isinstance(deprecated_on, str) or not _DATE.fullmatch(deprecated_on) or not _is_date(deprecated_on):
            raise DeclarationError(f"{where}: 'deprecated_on' must be a date YYYY-MM-DD, got {deprecated_on!r}")
    permanent = raw.get("permanent")
    if permanent is not None and not isinstance(permanent, bool):
        raise DeclarationError(f"{where}: 'permanent' must be true or false")
    if permanent is False and name in _ALWAYS_PERMANENT:
        raise DeclarationError(f"{where}: the maintenance windows' flag is always permanent")
    return {"owner": owner, "state": state, "deprecated_on": deprecated_on, "note": note, "permanent": permanent}


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _patterns(where: str, raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) > MAX_PRINCIPAL_PATTERNS:
        raise DeclarationError(f"{where} must be a list of at most {MAX_PRINCIPAL_PATTERNS} ARN patterns")
    for pattern in raw:
        if not isinstance(pattern, str) or not PRINCIPAL_PATTERN.match(pattern):
            raise DeclarationError(
                f"{where}: {pattern!r} is not an IAM principal ARN pattern (arn:aws:iam::<account>:role/<name>, "
                "arn:aws:iam::<account>:user/<name>, '*' as a wildcard)"
            )
        if ":role/" in pattern and "/" in pattern.split(":role/", 1)[1]:
            raise DeclarationError(
                f"{where}: {pattern!r} has a role path; a caller's ARN never carries it: write "
                "arn:aws:iam::<account>:role/<name>"
            )
    if len(set(raw)) != len(raw):
        raise DeclarationError(f"{where} lists a pattern twice")
    return tuple(raw)


def _protection_from(name: str, raw: Any) -> Protection:
    where = f"flag '{name}': 'protection'"
    if not isinstance(raw, dict):
        raise DeclarationError(f"{where} must be an object")
    unknown = set(raw) - _PROTECTION_FIELDS
    if unknown:
        raise DeclarationError(f"{where}: unknown field(s) {sorted(unknown)}")
    approvals = raw.get("approvals")
    if not isinstance(approvals, int) or isinstance(approvals, bool) or not 0 <= approvals <= MAX_APPROVALS:
        raise DeclarationError(f"{where}: 'approvals' must be an int from 0 to {MAX_APPROVALS}")
    return Protection(
        approvals=approvals,
        approvers=_patterns(f"{where}: 'approvers'", raw.get("approvers", [])),
        break_glass=_patterns(f"{where}: 'break_glass'", raw.get("break_glass", [])),
    )


def parse_declarations(document: Any) -> Declarations:
    if not isinstance(document, dict) or not isinstance(document.get("flags"), list):
        raise DeclarationError('the declarations file must be an object with a "flags" list')
    unknown = set(document) - {"flags", "trusted_session_roles"}
    if unknown:
        raise DeclarationError(f"the declarations file has unknown field(s) {sorted(unknown)}")
    specs = [_spec_from(raw, position) for position, raw in enumerate(document["flags"], start=1)]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise DeclarationError(f"flag '{spec.name}': declared twice")
        seen.add(spec.name)
    if not specs:
        raise DeclarationError("the declarations file declares no flag")
    trusted = _patterns("'trusted_session_roles'", document.get("trusted_session_roles", []))
    for pattern in trusted:
        if ":role/" not in pattern:
            raise DeclarationError(
                f"'trusted_session_roles': {pattern!r} is not a role ARN (arn:aws:iam::<account>:role/<name>)"
            )
    return Declarations(specs, trusted)


def load_declarations(path: Path) -> Declarations:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DeclarationError(f"cannot read declarations from {path}: {exc}") from exc
    return parse_declarations(document)
