"""Flag values <-> DynamoDB low-level attributes, for the four declared types."""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags.codec import decode, decode_plain, encode, encode_plain
from singleton_flags.declarations import FlagSpec, FlagValue


def spec_of(flag_type: str) -> FlagSpec:
    return FlagSpec(name=f"a_{flag_type}", type=flag_type, initial=None, fallback=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flag_type", "value", "attribute"),
    [
        ("bool", True, {"BOOL": True}),
        ("bool", False, {"BOOL": False}),
        ("int", 600, {"N": "600"}),
        ("int", -7, {"N": "-7"}),
        ("int", 10**20 + 1, {"N": "100000000000000000001"}),
        ("float", 0.05, {"N": "0.05"}),
        ("float", 1.0, {"N": "1.0"}),
        ("float", 5e-08, {"N": "5e-08"}),
        ("string", "classic", {"S": "classic"}),
        ("string", "zürich ☃ 雪", {"S": "zürich ☃ 雪"}),
        ("string", "", {"S": ""}),
    ],
)
def test_round_trip(flag_type: str, value: FlagValue, attribute: dict[str, Any]) -> None:
    # Given a value of a declared type
    spec = spec_of(flag_type)
    # When encoded, then it has the low-level form DynamoDB expects
    assert encode(spec, value) == attribute
    # And decoding it gives the same value back, with the same Python type
    decoded = decode(spec, attribute)
    assert decoded == value and type(decoded) is type(value)


@pytest.mark.parametrize(
    ("stored", "expected"),
    [({"N": "1"}, 1.0), ({"N": "0"}, 0.0), ({"N": "1E+2"}, 100.0), ({"N": "-0.5"}, -0.5)],
)
def test_a_float_flag_reads_any_number_as_float(stored: dict[str, Any], expected: float) -> None:
    # DynamoDB normalises numbers: a float written as 1.0 may come back as "1"
    decoded = decode(spec_of("float"), stored)
    assert decoded == expected and isinstance(decoded, float)


@pytest.mark.parametrize(
    ("flag_type", "stored"),
    [
        ("bool", {"S": "true"}),
        ("bool", {"N": "1"}),
        ("bool", {"NULL": True}),
        ("int", {"N": "1.5"}),
        ("int", {"N": "1e3"}),
        ("int", {"N": "10.0"}),
        ("int", {"S": "600"}),
        ("int", {"BOOL": True}),
        ("float", {"S": "0.5"}),
        ("float", {"N": "not-a-number"}),
        ("string", {"N": "1"}),
        ("string", {"L": []}),
        ("string", {}),
    ],
)
def test_decoding_the_wrong_type_raises_value_error(flag_type: str, stored: dict[str, Any]) -> None:
    # Given an attribute that does not hold the declared type
    # When decoded, then ValueError (the provider turns it into that flag's fallback)
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError: the provider catches them all alike
        decode(spec_of(flag_type), stored)


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, -42, 2.5, "text", [], [1, "a", None], {}, {"a": {"b": [True, 1.5]}}],
    ids=repr,
)
def test_plain_values_round_trip(value: Any) -> None:
    # Given an undeclared JSON-like value (an audit record keeps values of flags since removed)
    # When encoded and decoded, then it is unchanged
    assert decode_plain(encode_plain(value)) == value


def test_plain_numbers_keep_int_and_float_apart() -> None:
    assert type(decode_plain(encode_plain(3))) is int
    assert type(decode_plain(encode_plain(3.0))) is float
    assert decode_plain({"N": "-12"}) == -12


@pytest.mark.parametrize(("raw", "value"), [("7", 7), ("-7", -7), ("0.5", 0.5), ("1E+3", 1000.0)])
def test_an_undeclared_stored_number_is_an_int_only_for_ascii_digits(raw: str, value: Any) -> None:
    decoded = decode_plain({"N": raw})
    assert decoded == value and type(decoded) is type(value)
