"""A reader configured for FLAGS#V1 follows the migration pointer to FLAGS#V2.

It serves V2's values expressed under its V1 declarations through the mapping stored beside the pointer, with at
most one GetItem more per cache age; a flag V1 cannot express is its declared fallback (DEFAULT for that flag, the
cause logged once per environment); a pointer it cannot follow (unreadable, V2 missing, superseded, pointing
further) serves every declared fallback with reason DEFAULT, and says why.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from singleton_flags.client import Flags
from singleton_flags.declarations import Declarations
from singleton_flags.keys import (
    MAINTENANCE_FLAG,
    MIGRATED_TO_ATTR,
    MIGRATION_MAPPING_ATTR,
    SUPERSEDED_BY_ATTR,
    VERSION_ATTR,
    singleton_key,
)
from singleton_flags.reader import FlagReader, flag_reason
from singleton_flags.vocabulary import CACHED, DEFAULT, STATIC
from tests.support.unit import CallCount, body_of, expire, flags_item

V2 = "FLAGS#V2"
MAPPING: dict[str, Any] = {
    "mapping_version": 1,
    "from": "FLAGS#V1",
    "to": V2,
    "flags": {
        "search_ranking": {"rename": "ranking_strategy"},
        "api_rate_limit_per_minute": {"convert": "int_to_float"},
        "ai_search_enabled": {"remove": True},
    },
    "add": {"assistant_enabled": {"initial": False}},
}


def v2_item(version: int = 8, **overrides: Any) -> dict[str, Any]:
    """FLAGS#V2 as a migration writes it: the new shape, its own version."""
    item: dict[str, Any] = {
        **singleton_key(V2),
        VERSION_ATTR: {"N": str(version)},
        "signup_enabled": {"BOOL": True},
        MAINTENANCE_FLAG: {"BOOL": False},
        "api_rate_limit_per_minute": {"N": "1200.0"},
        "ranking_strategy": {"S": "hybrid"},
        "trace_sample_rate": {"N": "0.25"},
        "assistant_enabled": {"BOOL": True},
    }
    item.update(overrides)
    return {key: value for key, value in item.items() if value is not None}


def pointing_v1(declarations: Declarations, mapping: Any = MAPPING, **extra: Any) -> dict[str, Any]:
    """FLAGS#V1 at version 7 with the pointer and the mapping (its own values are V1's last ones)."""
    text = mapping if isinstance(mapping, str) else json.dumps(mapping)
    return flags_item(
        declarations,
        7,
        **{MAINTENANCE_FLAG: False},
        **{MIGRATED_TO_ATTR: {"S": V2}, MIGRATION_MAPPING_ATTR: {"S": text}},
        **extra,
    )


@pytest.fixture
def put(ddb: Any, table_name: str) -> Any:
    def put_item(item: dict[str, Any]) -> None:
        ddb.put_item(TableName=table_name, Item=item)

    return put_item


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_v1_reader_serves_v2s_values_under_its_v1_declarations_and_the_removed_flags_fallback(
    reader: FlagReader, put: Any, declarations: Declarations, caplog: pytest.LogCaptureFixture
) -> None:
    # Given V1 pointing to V2 (a rename, an int-to-float, a removal, a new flag) and V2 holding live values
    put(pointing_v1(declarations, ai_search_enabled={"BOOL": True}))
    put(v2_item(version=8))
    caplog.set_level(logging.DEBUG, logger="singleton_flags")
    # When a reader configured for V1 reads
    state = reader.read()
    # Then it serves V2's values: the renamed flag under its V1 name, the float converted back to V1's int
    assert state.reason == STATIC and state.version == 8
    assert state.values["search_ranking"] == "hybrid"
    assert state.values["api_rate_limit_per_minute"] == 1200
    assert type(state.values["api_rate_limit_per_minute"]) is int
    assert state.values["trace_sample_rate"] == 0.25 and state.values["signup_enabled"] is True
    # And the removed flag is its declared fallback (not V1's stored true), DEFAULT for that flag alone
    assert state.values["ai_search_enabled"] is declarations["ai_search_enabled"].fallback
    assert flag_reason(state, "ai_search_enabled") == DEFAULT and flag_reason(state, "search_ranking") == STATIC
    # And the log says to switch, and the removed flag's cause
    said = warnings_of(caplog)
    assert any("switch this reader to FLAGS#V2" in line for line in said)
    assert any("'ai_search_enabled'" in line and "removed by the migration" in line for line in said)


def test_the_causes_and_the_switch_are_logged_once_per_environment(
    reader: FlagReader, put: Any, declarations: Declarations, caplog: pytest.LogCaptureFixture
) -> None:
    put(pointing_v1(declarations))
    put(v2_item())
    caplog.set_level(logging.DEBUG, logger="singleton_flags")
    # When the reader fetches three times (each cache age over)
    for _ in range(3):
        reader.read()
        expire(reader.provider)
    # Then each thing was said once
    said = warnings_of(caplog)
    assert sum("switch this reader" in line for line in said) == 1
    assert sum("'ai_search_enabled'" in line for line in said) == 1


def test_following_the_pointer_costs_at_most_one_getitem_more_per_cache_age(
    reader: FlagReader, put: Any, declarations: Declarations, get_item_calls: CallCount
) -> None:
    put(pointing_v1(declarations))
    put(v2_item())
    # When the reader reads many times within one cache age
    states = [reader.read() for _ in range(50)]
    # Then two GetItems (V1, then V2) served them all, the later reads from the cache
    assert get_item_calls.calls == 2
    assert states[-1].reason == CACHED and states[-1].version == 8
    # And the next cache age costs two more
    expire(reader.provider)
    reader.read()
    assert get_item_calls.calls == 4


def test_an_int_to_float_value_with_a_fraction_is_the_v1_fallback_unless_the_mapping_rounds(
    reader: FlagReader, put: Any, declarations: Declarations, caplog: pytest.LogCaptureFixture
) -> None:
    # Given V2 holds 1200.5 where V1 declares an int, the mapping's rounding 'exact' (the default)
    put(pointing_v1(declarations))
    put(v2_item(api_rate_limit_per_minute={"N": "1200.5"}))
    caplog.set_level(logging.DEBUG, logger="singleton_flags")
    state = reader.read()
    # Then V1 cannot express it: the declared fallback, DEFAULT for that flag, the cause said
    assert state.values["api_rate_limit_per_minute"] == declarations["api_rate_limit_per_minute"].fallback
    assert flag_reason(state, "api_rate_limit_per_minute") == DEFAULT
    assert any("'api_rate_limit_per_minute'" in line and "fraction" in line for line in warnings_of(caplog))


def test_a_rounding_rule_in_the_mapping_rounds_the_v2_value_for_a_v1_reader(
    reader: FlagReader, put: Any, declarations: Declarations
) -> None:
    rounding = {
        **MAPPING,
        "flags": {
            **MAPPING["flags"],
            "api_rate_limit_per_minute": {"convert": "int_to_float", "rounding": "half_even"},
        },
    }
    put(pointing_v1(declarations, rounding))
    put(v2_item(api_rate_limit_per_minute={"N": "1200.5"}))
    state = reader.read()
    assert (
        state.values["api_rate_limit_per_minute"] == 1200 and flag_reason(state, "api_rate_limit_per_minute") == STATIC
    )


@pytest.mark.parametrize(
    ("v1_extra", "v2", "why"),
    [
        ({MIGRATION_MAPPING_ATTR: {"S": "{not json"}}, v2_item(), "cannot be read"),
        ({MIGRATION_MAPPING_ATTR: None}, v2_item(), "no 'migration_mapping'"),
        ({MIGRATED_TO_ATTR: {"N": "2"}}, v2_item(), "not a flags item's sort key"),
        ({MIGRATED_TO_ATTR: {"S": "FLAGS#V3"}}, v2_item(), "but the pointer says FLAGS#V1 -> FLAGS#V3"),
        ({}, None, "FLAGS#V2 is missing"),
        ({}, v2_item(**{SUPERSEDED_BY_ATTR: {"S": "FLAGS#V3"}}), "itself superseded"),
        ({}, v2_item(**{MIGRATED_TO_ATTR: {"S": "FLAGS#V3"}}), "points further"),
    ],
    ids=[
        "mapping-not-json",
        "no-mapping",
        "pointer-not-a-key",
        "pointer-and-mapping-disagree",
        "v2-missing",
        "v2-superseded",
        "v2-points-further",
    ],
)
def test_a_pointer_the_reader_cannot_follow_serves_the_declared_fallbacks_with_default_and_says_why(
    reader: FlagReader,
    put: Any,
    declarations: Declarations,
    caplog: pytest.LogCaptureFixture,
    v1_extra: dict[str, Any],
    v2: dict[str, Any] | None,
    why: str,
) -> None:
    item = pointing_v1(declarations)
    item.update(v1_extra)
    put({key: value for key, value in item.items() if value is not None})
    if v2 is not None:
        put(v2)
    caplog.set_level(logging.DEBUG, logger="singleton_flags")
    state = reader.read()
    again = reader.read()  # cached
    for read in (state, again):
        assert read.reason == DEFAULT and read.version is None
        assert dict(read.values) == declarations.fallbacks() and read.values[MAINTENANCE_FLAG] is True
    [warning] = [line for line in warnings_of(caplog) if "migration pointer" in line]
    assert why in warning


def test_a_superseded_v1_is_not_followed_even_with_a_pointer(
    reader: FlagReader, put: Any, declarations: Declarations, get_item_calls: CallCount
) -> None:
    put(pointing_v1(declarations, **{SUPERSEDED_BY_ATTR: {"S": V2}}))
    put(v2_item())
    state = reader.read()
    assert state.reason == DEFAULT and dict(state.values) == declarations.fallbacks()
    assert get_item_calls.calls == 1


def test_the_embedded_client_follows_the_pointer_too(
    ddb: Any, table_name: str, put: Any, declarations: Declarations
) -> None:
    put(pointing_v1(declarations))
    put(v2_item())
    flags = Flags(table_name=table_name, declarations=declarations, client=ddb)
    assert flags.get("search_ranking") == "hybrid"
    assert flags.details("ai_search_enabled").reason == DEFAULT
    assert flags.details("api_rate_limit_per_minute").value == 1200


def test_the_read_function_and_ofrep_follow_the_pointer(read_api: Any, put: Any, declarations: Declarations) -> None:
    # Given V1 pointing to V2
    put(pointing_v1(declarations))
    put(v2_item(version=8))
    # When the read function answers GET /flags and an OFREP evaluation
    flags = body_of(read_api.get("/flags"))
    ofrep = body_of(
        read_api(
            "POST",
            "/ofrep/v1/evaluate/flags/ai_search_enabled",
            resource="/ofrep/v1/evaluate/flags/{key}",
            path_parameters={"key": "ai_search_enabled"},
            body={},
        )
    )
    # Then both serve V2's values under V1's names, and the removed flag's fallback with DEFAULT
    assert flags["version"] == 8 and flags["flags"]["search_ranking"] == "hybrid"
    assert flags["fallen_back"] == ["ai_search_enabled"]
    assert (ofrep["value"], ofrep["reason"], ofrep["variant"]) == (False, DEFAULT, "fallback")


def test_the_openfeature_provider_follows_the_pointer(
    ddb: Any, table_name: str, put: Any, declarations: Declarations
) -> None:
    from openfeature import api

    from singleton_flags.openfeature import register

    put(pointing_v1(declarations))
    put(v2_item())
    api.clear_providers()
    try:
        register(Flags(table_name=table_name, declarations=declarations, client=ddb))
        client = api.get_client()
        ranking = client.get_string_details("search_ranking", "classic")
        removed = client.get_boolean_details("ai_search_enabled", True)
    finally:
        api.clear_providers()
    assert (ranking.value, ranking.flag_metadata["version"]) == ("hybrid", 8)
    assert (removed.value, removed.reason) == (False, "DEFAULT")
