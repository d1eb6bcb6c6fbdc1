"""Flag values <-> DynamoDB low-level attribute values, for the four declared types.

Kept to what the declarations allow, so the read function needs neither boto3's resource layer nor
its TypeDeserializer (and no Decimal round trips).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, cast

from singleton_flags.declarations import FlagSpec, FlagValue

__all__ = [
    "decode",
    "decode_plain",
    "encode",
    "encode_plain",
    "iso_time",
]

_INTEGER = re.compile(r"-?[0-9]+")


def iso_time(epoch_seconds: float) -> str:
    """An epoch time as the ISO 8601 UTC text every response, audit record and ``updated_at`` carries."""
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).isoformat(timespec="milliseconds")


def encode(spec: FlagSpec, value: FlagValue) -> dict[str, Any]:
    if spec.type == "bool":
        return {"BOOL": value}
    if spec.type == "string":
        return {"S": value}
    if spec.type == "int":
        return {"N": str(int(value))}
    return {"N": repr(float(value))}


def decode(spec: FlagSpec, attribute: dict[str, Any]) -> FlagValue:
    """Decode an attribute stored for ``spec``; raise ValueError when it does not hold the declared type."""
    if spec.type == "bool" and "BOOL" in attribute:
        return cast(bool, attribute["BOOL"])  # DynamoDB's BOOL holds a bool
    if spec.type == "string" and "S" in attribute:
        return cast(str, attribute["S"])  # and S a string
    if spec.type in ("int", "float") and "N" in attribute:
        number = float(attribute["N"])
        if spec.type == "float":
            return number
        if number.is_integer() and "." not in attribute["N"] and "e" not in attribute["N"].lower():
            return int(attribute["N"])
    raise ValueError(f"stored {sorted(attribute)[0] if attribute else 'nothing'} is not a {spec.type}")


def encode_plain(value: Any) -> dict[str, Any]:
    """Encode an undeclared JSON-like value (audit records keep old values of flags since removed)."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, (int, float)):
        return {"N": repr(value) if isinstance(value, float) else str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, dict):
        return {"M": {key: encode_plain(item) for key, item in value.items()}}
    return {"L": [encode_plain(item) for item in value]}


def decode_plain(attribute: dict[str, Any]) -> Any:
    ((kind, raw),) = attribute.items()
    if kind == "NULL":
        return None
    if kind == "N":
        return int(raw) if _INTEGER.fullmatch(raw) else float(raw)  # DynamoDB numbers: 38 digits at most
    if kind == "M":
        return {key: decode_plain(item) for key, item in raw.items()}
    if kind == "L":
        return [decode_plain(item) for item in raw]
    return raw  # S, BOOL
