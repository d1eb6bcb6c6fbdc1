"""The declarations loader: the shipped file is sound, and every broken file fails at load naming the flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from singleton_flags.declarations import FlagSpec, UnstorableNumber, load_declarations, parse_declarations
from singleton_flags_service.contract import load_service_declarations
from singleton_flags_service.errors import DeclarationError, InvalidValue

SEED_FLAGS = ("signup_enabled", "maintenance_mode", "ai_search_enabled")


def declaration(**overrides: Any) -> dict[str, Any]:
    flag = {"name": "rate_limit", "type": "int", "initial": 10, "fallback": 1, "min": 1, "max": 100}
    flag.update(overrides)
    return {key: value for key, value in flag.items() if value is not ...}


def document(*flags: dict[str, Any]) -> dict[str, Any]:
    return {"flags": list(flags)}


class TestShippedFile:
    def test_declares_the_seed_flags_and_a_tunable_of_each_other_type(self) -> None:
        # Given the declarations file bundled into every function
        # When it is loaded
        declarations = load_service_declarations()
        # Then it holds the three seed flags and exercises int, float and string
        assert set(SEED_FLAGS) <= set(declarations)
        assert {spec.type for spec in declarations.values()} == {"bool", "int", "float", "string"}

    def test_fallbacks_fail_closed(self) -> None:
        # Given the shipped declarations
        fallbacks = load_service_declarations().fallbacks()
        # Then a missing item means features off and maintenance ON
        assert fallbacks["maintenance_mode"] is True
        assert fallbacks["signup_enabled"] is False
        assert fallbacks["ai_search_enabled"] is False

    def test_every_initial_and_fallback_is_a_valid_value_of_its_flag(self) -> None:
        for spec in load_service_declarations().values():
            assert spec.violation(spec.initial) is None, spec.name
            assert spec.violation(spec.fallback) is None, spec.name


class TestBrokenFileFailsNamingTheFlag:
    @pytest.mark.parametrize(
        ("flag", "expected"),
        [
            pytest.param(declaration(type="integer"), "unknown type", id="unknown-type"),
            pytest.param(declaration(fallback="1"), "fallback", id="fallback-of-wrong-type"),
            pytest.param(declaration(fallback=None), "fallback", id="fallback-null"),
            pytest.param(declaration(initial=101), "initial breaks rule 'max'", id="initial-above-max"),
            pytest.param(declaration(initial=0), "initial breaks rule 'min'", id="initial-below-min"),
            pytest.param(declaration(initial=True), "initial breaks rule 'type'", id="bool-given-for-int"),
            pytest.param(declaration(fallback=False), "fallback breaks rule 'type'", id="bool-fallback-for-int"),
            pytest.param(declaration(initial=10.0), "initial breaks rule 'type'", id="float-given-for-int"),
            pytest.param(declaration(min=True), "'min'", id="bool-given-for-min"),
            pytest.param(declaration(min=50, max=5), "greater than max", id="min-above-max"),
            pytest.param(declaration(initial=...), "'initial' is required", id="initial-missing"),
            pytest.param(declaration(description=3), "description", id="description-not-a-string"),
            pytest.param(declaration(default=3), "unknown field", id="unknown-field"),
            pytest.param(
                declaration(type="string", initial="fast", fallback="slow", enum=["slow", "safe"], min=..., max=...),
                "initial breaks rule 'enum'",
                id="initial-outside-enum",
            ),
            pytest.param(
                declaration(type="string", initial="a", fallback="b", enum=[1, 2], min=..., max=...),
                "'enum'",
                id="enum-of-wrong-type",
            ),
            pytest.param(
                declaration(type="string", initial="abc", fallback="", max_length=2, min=..., max=...),
                "max_length",
                id="initial-longer-than-max-length",
            ),
            pytest.param(declaration(max_length=3), "max_length", id="max-length-on-an-int"),
            pytest.param(
                declaration(type="bool", initial=True, fallback=False, min=0, max=...), "'min'", id="min-on-a-bool"
            ),
        ],
    )
    def test_parse_refuses(self, flag: dict[str, Any], expected: str) -> None:
        # Given a declarations document with one broken flag
        # When it is parsed
        with pytest.raises(DeclarationError) as raised:
            parse_declarations(document(flag))
        # Then the error names the flag and says what is wrong
        assert "rate_limit" in str(raised.value)
        assert expected in str(raised.value)

    @pytest.mark.parametrize("name", ["history", "revert", "migration", "schema_version", "updated_at", "PK"])
    def test_reserved_names_are_refused(self, name: str) -> None:
        # Given a flag named like a static API path or a bookkeeping attribute
        flag = declaration(name=name)
        # When parsed
        with pytest.raises(DeclarationError, match=r"reserved|name must match") as raised:
            parse_declarations(document(flag))
        # Then the error names it
        assert name in str(raised.value)

    def test_a_flag_declared_twice_is_refused(self) -> None:
        # Given the same name declared twice
        doc = document(declaration(), declaration(initial=20))
        # When parsed, then the duplicate is named
        with pytest.raises(DeclarationError, match="flag 'rate_limit': declared twice"):
            parse_declarations(doc)

    @pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
    def test_non_finite_numbers_in_the_file_are_refused(self, tmp_path: Path, literal: str) -> None:
        # Given a file with a non-finite float (Python's json accepts these literals)
        path = tmp_path / "declarations.json"
        flag = json.dumps(declaration(name="sample_rate", type="float", initial=0.5, fallback=0.0, min=0.0, max=1.0))
        path.write_text('{"flags": [' + flag.replace('"initial": 0.5', f'"initial": {literal}') + "]}")
        # When loaded
        with pytest.raises(DeclarationError) as raised:
            load_declarations(path)
        # Then the flag is named and the number is refused as a type error
        assert "sample_rate" in str(raised.value)
        assert "non-finite" in str(raised.value)

    def test_a_name_that_is_not_an_identifier_is_refused(self) -> None:
        with pytest.raises(DeclarationError, match="'Rate-Limit'"):
            parse_declarations(document(declaration(name="Rate-Limit")))

    @pytest.mark.parametrize("doc", [[], {}, {"flags": {}}, {"flags": []}, {"flags": ["signup_enabled"]}], ids=repr)
    def test_a_file_of_the_wrong_shape_is_refused(self, doc: Any) -> None:
        with pytest.raises(DeclarationError):
            parse_declarations(doc)

    def test_unreadable_or_malformed_files_are_refused_with_the_path(self, tmp_path: Path) -> None:
        # Given a file that is not JSON, and one that does not exist
        malformed = tmp_path / "bad.json"
        malformed.write_text("{flags: [")
        # Then both fail at load with the path in the message
        for path in (malformed, tmp_path / "absent.json"):
            with pytest.raises(DeclarationError, match=str(path.name)):
                load_declarations(path)


class TestSpecBehaviour:
    def test_float_flags_take_integers_and_normalise_them(self) -> None:
        # Given a float flag declared with integer literals
        declarations = parse_declarations(
            document(declaration(name="ratio", type="float", initial=1, fallback=0, min=0, max=1))
        )
        spec = declarations["ratio"]
        # Then initial and fallback are floats, and validate() normalises a client's integer
        assert (spec.initial, spec.fallback) == (1.0, 0.0)
        assert isinstance(spec.validate(1), float)

    def test_validate_names_the_flag_and_rule(self) -> None:
        spec = FlagSpec(name="rate_limit", type="int", initial=10, fallback=1, minimum=1, maximum=100)
        with pytest.raises(InvalidValue) as raised:
            spec.validate(1000)
        assert raised.value.details == {"flag": "rate_limit", "rule": "max"}

    @pytest.mark.parametrize(
        ("flag_type", "value"),
        [("bool", "true"), ("bool", 1), ("int", True), ("int", 1.5), ("float", False), ("string", 1), ("float", None)],
    )
    def test_json_types_are_strict(self, flag_type: str, value: Any) -> None:
        spec = FlagSpec(name="x", type=flag_type, initial=None, fallback=None)  # type: ignore[arg-type]
        assert spec.violation(value)[0] == "type"

    def test_strings_have_a_default_length_limit(self) -> None:
        spec = FlagSpec(name="label", type="string", initial="a", fallback="a")
        assert spec.violation("x" * 256) is None
        assert spec.violation("x" * 257)[0] == "max_length"

    def test_file_order_is_kept(self) -> None:
        declarations = parse_declarations(document(declaration(name="b_flag"), declaration(name="a_flag")))
        assert list(declarations) == ["b_flag", "a_flag"]


class TestNumbersDynamoDBCanStore:
    """A DynamoDB Number is 0 or of magnitude 1E-130 to 9.99E+125, with at most 38 significant digits."""

    FLOAT = FlagSpec("sample_rate", "float", 0.5, 0.0, minimum=0.0, maximum=1.0)
    INT = FlagSpec("rate_limit", "int", 10, 1, minimum=1, maximum=10**120)
    UNBOUNDED_FLOAT = FlagSpec("scale", "float", 1.0, 1.0)

    @pytest.mark.parametrize(
        ("spec", "value"),
        [
            pytest.param(FLOAT, 1e-200, id="float-below-1e-130-inside-its-min-max"),
            pytest.param(FLOAT, -1e-131, id="negative-float-below-1e-130"),
            pytest.param(UNBOUNDED_FLOAT, 1e126, id="float-of-1e126"),
            pytest.param(UNBOUNDED_FLOAT, 10**400, id="huge-int-to-a-float-flag"),
            pytest.param(UNBOUNDED_FLOAT, 10**5000, id="int-beyond-the-int-string-limit-to-a-float-flag"),
            pytest.param(INT, 10**126, id="int-of-127-digits"),
            pytest.param(INT, int("1" * 39), id="int-with-39-significant-digits"),
            pytest.param(INT, UnstorableNumber("9" * 5000), id="a-number-json-parsing-kept-as-text"),
        ],
    )
    def test_a_number_dynamodb_refuses_breaks_the_range_rule(self, spec: FlagSpec, value: Any) -> None:
        # When a number DynamoDB cannot store is validated / Then it is refused as rule 'range', naming the flag
        with pytest.raises(InvalidValue) as raised:
            spec.validate(value)
        assert (raised.value.details["rule"], raised.value.details["flag"]) == ("range", spec.name)

    @pytest.mark.parametrize(
        ("spec", "value"),
        [(FLOAT, 0.0), (FLOAT, 1e-130), (UNBOUNDED_FLOAT, 9.99e125), (INT, 10**120), (INT, int("1" * 38))],
        ids=["zero", "1e-130", "9.99e125", "int-of-121-digits-inside-max", "int-of-38-significant-digits"],
    )
    def test_numbers_at_dynamodbs_limits_are_valid(self, spec: FlagSpec, value: Any) -> None:
        assert spec.validate(value) == value

    @pytest.mark.parametrize(
        "overrides",
        [
            {"type": "float", "initial": 1e-200, "fallback": 0.0, "min": 0.0, "max": 1.0},
            {"type": "float", "initial": 0.5, "fallback": 0.0, "min": 1e-300, "max": 1.0},
            {"type": "int", "initial": 10, "fallback": 1, "min": 1, "max": 10**130},
            {"type": "int", "initial": 10, "fallback": int("1" * 39), "min": 1, "max": ...},
            {"type": "float", "initial": 0.5, "fallback": 0.5, "min": ..., "max": ..., "enum": [0.5, 1e-200]},
        ],
        ids=["initial", "min", "max", "fallback-39-digits", "enum-value"],
    )
    def test_the_loader_refuses_a_declaration_dynamodb_could_not_store(self, overrides: dict[str, Any]) -> None:
        with pytest.raises(DeclarationError) as raised:
            parse_declarations(document(declaration(**overrides)))
        assert "rate_limit" in str(raised.value) and "range" in str(raised.value)
