"""A migration's mapping: its format checked alone, then against the current and the new declarations; its named
conversions in both directions. Every bad mapping is refused with an error naming the field and the flag."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from singleton_flags.declarations import Declarations, load_declarations
from singleton_flags.migration import FlagMove, MappingError, NotConvertible, parse_mapping, parse_mapping_text
from singleton_flags_service.contract import DECLARATIONS_FILE
from tests.support.migration import EXAMPLES, GOOD, new_declarations


def with_(path: str, value: Any) -> dict[str, Any]:
    document = copy.deepcopy(GOOD)
    *parents, last = path.split(".")
    node = document
    for part in parents:
        node = node[part]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return document


def test_a_good_mapping_parses_and_checks_against_both_declarations(declarations: Declarations) -> None:
    mapping = parse_mapping(GOOD)
    mapping.check(declarations, new_declarations(declarations))
    assert mapping.move("search_ranking").new == "ranking_strategy"
    assert mapping.move("signup_enabled") == FlagMove("signup_enabled", "signup_enabled")
    assert mapping.move("ai_search_enabled").new is None


@pytest.mark.parametrize(
    ("document", "error"),
    [
        ([], "a mapping must be a JSON object"),
        (with_("mapping_version", 2), "'mapping_version' must be 1"),
        (with_("mapping_version", True), "'mapping_version' must be 1"),
        (with_("extra", 1), "unknown field(s) ['extra']"),
        (with_("from", "V1"), "'from' must be a flags item's sort key"),
        (with_("to", "FLAGS#V1"), "'to' (FLAGS#V1) must be a later item than 'from' (FLAGS#V1)"),
        (with_("flags", []), "'flags' must be an object"),
        (with_("flags.search_ranking", {}), "flags.search_ranking must be a non-empty object"),
        (with_("flags.search_ranking", {"renam": "x"}), "flags.search_ranking: unknown field(s) ['renam']"),
        (with_("flags.search_ranking", {"rename": "Bad Name"}), "flags.search_ranking.rename must be a flag name"),
        (with_("flags.search_ranking", {"rename": "search_ranking"}), "names the flag itself"),
        (with_("flags.ai_search_enabled", {"remove": False}), "flags.ai_search_enabled.remove must be true"),
        (with_("flags.ai_search_enabled", {"remove": True, "rename": "x"}), "a removed flag takes nothing else"),
        (
            with_("flags.api_rate_limit_per_minute", {"convert": "eval('1')"}),
            "flags.api_rate_limit_per_minute.convert: unknown conversion",
        ),
        (
            with_("flags.api_rate_limit_per_minute", {"convert": "int_to_float", "rounding": "up"}),
            "flags.api_rate_limit_per_minute.rounding: unknown rule 'up'",
        ),
        (
            with_("flags.search_ranking", {"rename": "x", "rounding": "floor"}),
            "flags.search_ranking.rounding is only for int_to_float or float_to_int",
        ),
        (
            with_("flags.signup_enabled", {"convert": "bool_to_string", "true": "on", "false": "on"}),
            "'true' and 'false' must be two different strings",
        ),
        (with_("add", {"x": {"initial": None}}), "add.x.initial must be a bool, a number or a string"),
        (with_("add", {"x": {"value": 1}}), 'add.x must be an object with at most "initial"'),
        ({"mapping_version": 1, "from": "FLAGS#V1", "to": "FLAGS#V2"}, "the mapping changes nothing"),
    ],
)
def test_a_malformed_mapping_is_refused_naming_the_field(document: Any, error: str) -> None:
    with pytest.raises(MappingError) as refused:
        parse_mapping(document)
    assert error in str(refused.value)


def test_a_mapping_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(MappingError, match="not JSON"):
        parse_mapping_text("{")


@pytest.mark.parametrize(
    ("document", "new_changes", "error"),
    [
        (with_("flags.nope", {"remove": True}), {}, "flags.nope: no flag 'nope' is declared in the current"),
        (
            with_("flags.search_ranking", {"rename": "ranking"}),
            {},
            "'search_ranking' is renamed to 'ranking', which is not declared in the new declarations",
        ),
        (with_("flags.ai_search_enabled", ...), {}, "'ai_search_enabled' is kept, but it is not declared"),
        (
            with_("flags.api_rate_limit_per_minute", ...),
            {},
            "'api_rate_limit_per_minute' is an int and 'api_rate_limit_per_minute' a float: give a conversion",
        ),
        (
            with_("flags.api_rate_limit_per_minute", {"convert": "bool_to_string"}),
            {},
            "'bool_to_string' turns a bool into a string, but 'api_rate_limit_per_minute' is an int",
        ),
        (
            with_("flags.signup_enabled", {"rename": "ranking_strategy", "convert": "bool_to_string"}),
            {},
            "'ranking_strategy' is already the new name of",
        ),
        (with_("add", {}), {}, "'assistant_enabled' is declared in the new declarations but no current flag"),
        (with_("add.ghost", {}), {}, "add.ghost: no flag 'ghost' is declared in the new declarations"),
        (with_("add.assistant_enabled.initial", "yes"), {}, "add.assistant_enabled.initial breaks rule 'type'"),
        (with_("add.signup_enabled", {}), {}, "add.signup_enabled: 'signup_enabled' already comes from"),
    ],
)
def test_a_mapping_that_does_not_join_the_declarations_is_refused(
    declarations: Declarations, document: dict[str, Any], new_changes: dict[str, Any], error: str
) -> None:
    with pytest.raises(MappingError) as refused:
        parse_mapping(document).check(declarations, new_declarations(declarations, **new_changes))
    assert error in str(refused.value)


@pytest.mark.parametrize(
    ("move", "old", "new"),
    [
        (FlagMove("a", "a", "int_to_float"), 3, 3.0),
        (FlagMove("a", "a", "float_to_int", rounding="half_even"), 2.5, 2),
        (FlagMove("a", "a", "float_to_int", rounding="half_away_from_zero"), 2.5, 3),
        (FlagMove("a", "a", "float_to_int", rounding="floor"), -2.5, -3),
        (FlagMove("a", "a", "float_to_int", rounding="ceil"), 2.1, 3),
        (FlagMove("a", "a", "float_to_int", rounding="toward_zero"), -2.9, -2),
        (FlagMove("a", "a", "float_to_int"), 4.0, 4),
        (FlagMove("a", "a", "bool_to_string"), True, "true"),
        (FlagMove("a", "a", "bool_to_string", true_text="on", false_text="off"), False, "off"),
        (FlagMove("a", "a", "string_to_bool", true_text="on", false_text="off"), "on", True),
    ],
)
def test_each_named_conversion_carries_a_value_forward(move: FlagMove, old: Any, new: Any) -> None:
    converted = move.forward(old)
    assert converted == new and type(converted) is type(new)


@pytest.mark.parametrize(
    ("move", "value"),
    [
        (FlagMove("a", "a", "float_to_int"), 2.5),  # exact: a fraction is refused
        (FlagMove("a", "a", "int_to_float"), 2**60),  # beyond a float's exact ints
        (FlagMove("a", "a", "string_to_bool"), "maybe"),
    ],
)
def test_a_value_a_conversion_cannot_carry_is_refused(move: FlagMove, value: Any) -> None:
    with pytest.raises(NotConvertible):
        move.forward(value)


def test_the_reverse_direction_is_the_conversion_the_other_way() -> None:
    move = FlagMove("a", "a", "int_to_float", rounding="floor")
    assert move.backward(7.0) == 7 and move.backward(7.9) == 7
    with pytest.raises(NotConvertible):
        FlagMove("a", "a", "int_to_float").backward(7.5)
    assert FlagMove("a", "a", "bool_to_string").backward("false") is False


def test_the_example_pair_is_the_service_declarations_in_the_shape_the_example_mapping_gives() -> None:
    # The example files docs/lifecycle.md runs: V2's declarations are exactly what the mapping makes of the service's
    service = load_declarations(DECLARATIONS_FILE)
    example = load_declarations(EXAMPLES / "flags-v2.json")
    assert example.document() == new_declarations(service).document()
    parse_mapping(GOOD).check(service, example)  # raises on any disagreement
