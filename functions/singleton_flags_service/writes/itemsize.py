"""DynamoDB's item-size arithmetic, so a write that would take the singleton over 4 KB is refused.

Rules (DynamoDB developer guide, "Item sizes and formats"): an attribute costs its UTF-8 name plus its
value; strings are UTF-8 bytes; numbers ~1 byte per 2 significant digits + 1; BOOL and NULL 1 byte;
lists and maps 3 bytes + 1 per element + the elements (a map's keys count as names); sets sum members.
"""

from __future__ import annotations

import math
from typing import Any

READ_BLOCK_BYTES = 4096  # one strongly consistent read unit; the singleton must fit in it


def number_size(text: str) -> int:
    digits = text.lower().split("e")[0].lstrip("+-").replace(".", "")
    significant = digits.strip("0") or "0"
    return math.ceil(len(significant) / 2) + 1


def value_size(attribute: dict[str, Any]) -> int:
    ((kind, raw),) = attribute.items()
    if kind == "S":
        return len(raw.encode("utf-8"))
    if kind == "N":
        return number_size(raw)
    if kind == "B":
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(member.encode("utf-8")) for member in raw)
    if kind == "NS":
        return sum(number_size(member) for member in raw)
    if kind == "BS":
        return sum(len(member) for member in raw)
    if kind == "L":
        return 3 + sum(1 + value_size(element) for element in raw)
    if kind == "M":
        return 3 + sum(1 + len(key.encode("utf-8")) + value_size(element) for key, element in raw.items())
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: dict[str, dict[str, Any]]) -> int:
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())
