"""A migration's mapping and the new declarations it joins the service's declarations to, for the migration tests
(the mapping's checks and ``flagctl migrate``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from singleton_flags.declarations import Declarations, parse_declarations

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "migration"
# The repository's example mapping (docs/lifecycle.md runs it): one rename, one int -> float, one removal, one new flag
GOOD: dict[str, Any] = json.loads((EXAMPLES / "mapping.json").read_text())


def new_declarations(declarations: Declarations, **changes: Any) -> Declarations:
    """The service's declarations in the new shape GOOD maps them to (for the service's own declarations: the
    example file ``examples/migration/flags-v2.json``, which a test holds to it)."""
    reshaped = {
        "search_ranking": {"name": "ranking_strategy"},
        "api_rate_limit_per_minute": {"type": "float", "initial": 600.0, "fallback": 60.0, "min": 1.0, "max": 100000.0},
    }
    flags = [
        {**declared, **reshaped.get(declared["name"], {})}
        for declared in declarations.document()["flags"]
        if declared["name"] != "ai_search_enabled"
    ]
    flags.append({"name": "assistant_enabled", "type": "bool", "initial": False, "fallback": False})
    for name, flag in changes.items():
        flags = [f for f in flags if f["name"] != name] + ([flag] if flag else [])
    return parse_declarations({"flags": flags})
