"""The Python examples of docs/reading-flags.md, by name (each block follows an ``<!-- example: NAME -->`` line)."""

from __future__ import annotations

import re
from pathlib import Path

READING_FLAGS = Path(__file__).resolve().parents[2] / "docs" / "reading-flags.md"
_EXAMPLE = re.compile(r"<!-- example: (?P<name>[a-z-]+) -->\n```python\n(?P<code>.*?)\n```", re.DOTALL)
_PYTHON_BLOCK = re.compile(r"^```python$", re.MULTILINE)


def examples(page: Path = READING_FLAGS) -> dict[str, str]:
    """Every named Python example of ``page``, in page order; raises if a Python block is not named."""
    text = page.read_text(encoding="utf-8")
    found = {match["name"]: match["code"] + "\n" for match in _EXAMPLE.finditer(text)}
    blocks = len(_PYTHON_BLOCK.findall(text))
    if blocks != len(found):
        raise AssertionError(f"{page.name}: {blocks} python blocks, {len(found)} named examples: name every one")
    return found
