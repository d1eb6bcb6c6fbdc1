"""Flag values as the service compares them: the type is part of the value (1 is not 1.0 nor True), as the
declarations' rules and the readers' decoding hold it. Pure: no imports beyond the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping


def moved(base: Mapping[str, object], current: Mapping[str, object]) -> list[str]:
    """The flags whose current value is not their base value (type included: 1 is not 1.0 nor True)."""
    return sorted(
        name
        for name, value in base.items()
        if name not in current or current[name] != value or type(current[name]) is not type(value)
    )
