"""Text fit for a terminal, JSON fit for a pipe: nothing flagctl prints carries a raw control or format character.

Unsafe are the characters of Unicode categories Cc (C0 controls, DEL, C1 controls), Cf (bidirectional embeddings,
overrides and isolates, marks, zero-width and other format characters), Cs (lone surrogates), Zl and Zp (line and
paragraph separators): text from a server or from the audit trail could otherwise clear, recolour or reorder an
operator's screen.

- ``safe(text)``: each one shown as a visible escape (``\\x1b``, ``\\n``, ``\\u202e``, ``\\U000e0001``);
- ``layout(text)``: ``safe`` on each line, flagctl's own newlines kept: the gate of everything it prints;
- ``safe_json(value)``: JSON text in which each one is a ``\\uXXXX`` escape (a surrogate pair beyond U+FFFF), so
  the output is valid JSON that decodes to the same data;
- ``excerpt(text)``: the start of a long text, marked as cut;
- ``table(headers, rows)``: aligned columns of ``safe`` cells; ``shown(value)``: a value as JSON on one line.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
EXCERPT_CHARS = 300
# Printable ASCII is always safe: only the other characters are looked up.
_CANDIDATE = re.compile(r"[^\x20-\x7e]")
_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def unsafe(char: str) -> bool:
    return unicodedata.category(char) in UNSAFE_CATEGORIES


def safe(text: Any) -> str:
    """``text`` on one line, every unsafe character (newlines included) shown as an escape."""
    return _CANDIDATE.sub(_visible, str(text))


def layout(text: str) -> str:
    """``text`` as flagctl lays it out: its newlines kept, every other unsafe character shown as an escape."""
    return "\n".join(safe(line) for line in text.split("\n"))


def safe_json(value: Any, indent: int | None = None) -> str:
    """``value`` as JSON, non-ASCII text kept readable, unsafe characters as ``\\uXXXX`` escapes (the newlines of
    its own indentation kept)."""
    return _CANDIDATE.sub(_json_escape, json.dumps(value, ensure_ascii=False, indent=indent))


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def shown(value: Any) -> str:
    """A flag's value as the API has it (JSON: true, 12, "x"), on one line."""
    return safe(json.dumps(value, ensure_ascii=False))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[safe(cell) for cell in row] for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *cells, strict=False)]
    lines = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip()
        for row in (headers, *cells)
    ]
    return "\n".join(lines)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if not unsafe(char):
        return char
    code = ord(char)
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    # json.dumps has escaped every C0 control inside strings: a raw newline is its own indentation, kept; what
    # else is left sits inside a string.
    char = match.group()
    if char == "\n" or not unsafe(char):
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
