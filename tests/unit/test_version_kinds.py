"""The kinds of version, said once (``singleton_flags_service.vocabulary.KINDS``): what each one is, and the
console's words for them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from singleton_flags_service.vocabulary import KINDS, SAFETY_KINDS, UNGATED_KINDS, VERSION_KINDS

CONSOLE_SCRIPT = Path(__file__).parents[2] / "flagctl" / "src" / "flagctl" / "console_pages" / "console.js"


def console_kind_labels() -> dict[str, str]:
    """The console script's ``KINDS`` object, read as JSON (its keys quoted where the script leaves them bare)."""
    block = re.search(r"^const KINDS = (\{.*?^\});", CONSOLE_SCRIPT.read_text(encoding="utf-8"), re.S | re.M)
    assert block is not None, "console.js has no KINDS object"
    quoted = re.sub(r"^(\s*)([a-z_]+):", r'\1"\2":', block.group(1), flags=re.M)
    labels: dict[str, str] = json.loads(re.sub(r",(\s*)\}$", r"\1}", quoted))
    return labels


def test_every_kind_has_one_name_and_one_label() -> None:
    assert len(set(VERSION_KINDS)) == len(KINDS)
    assert all(kind.label for kind in KINDS)


def test_an_automatic_safety_write_is_never_gated_by_protection() -> None:
    assert SAFETY_KINDS
    assert SAFETY_KINDS <= UNGATED_KINDS


def test_the_console_shows_each_kind_with_its_label() -> None:
    labels = console_kind_labels()
    assert {kind.name: labels.get(kind.name) for kind in KINDS} == {kind.name: kind.label for kind in KINDS}
    assert set(labels) - set(VERSION_KINDS) == {"seeded"}  # version 0's words, not a kind
