"""A migration's mapping and the new declarations it joins the service's declarations to, for the migration tests
(the mapping's checks and ``flagctl migrate``)."""

from __future__ import annotations

from typing import Any

from singleton_flags.declarations import Declarations, parse_declarations

GOOD: dict[str, Any] = {
    "mapping_version": 1,
    "from": "FLAGS#V1",
    "to": "FLAGS#V2",
    "flags": {
        "search_ranking": {"rename": "ranking_strategy"},
        "api_rate_limit_per_minute": {"convert": "int_to_float"},
        "ai_search_enabled": {"remove": True},
    },
    "add": {"assistant_enabled": {"initial": True}},
}


def new_declarations(declarations: Declarations, **changes: Any) -> Declarations:
    """The service's declarations in the new shape GOOD maps them to."""
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
