"""The 4 KB guard's arithmetic against DynamoDB's documented rules ("Item sizes and formats").

Tested directly: moto sizes items its own way, so its size errors prove nothing about ours.
"""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags.codec import encode
from singleton_flags.keys import SINGLETON_SK, VERSION_ATTR, singleton_key
from singleton_flags_service.contract import load_service_declarations
from singleton_flags_service.writes.itemsize import READ_BLOCK_BYTES, item_size, number_size, value_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 2),  # 1 significant digit -> ceil(1/2) + 1
        ("12", 2),
        ("123", 3),
        ("12345", 4),
        ("-12345", 4),  # the sign is not a digit
        ("1000", 2),  # trailing zeros trimmed: one significant digit
        ("0.05", 2),  # leading zeros trimmed
        ("000123", 3),
        ("1005", 3),  # inner zeros are significant
        ("123.450", 4),  # 12345 after trimming
        ("1.5e3", 2),  # the exponent is not a digit
        ("1E+2", 2),
        ("1" * 38, 20),  # DynamoDB's 38-digit maximum
    ],
)
def test_number_costs_one_byte_per_two_significant_digits_plus_one(text: str, expected: int) -> None:
    assert number_size(text) == expected


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        ({"S": "abc"}, 3),
        ({"S": ""}, 0),
        ({"S": "é"}, 2),  # UTF-8 bytes, not characters
        ({"S": "雪"}, 3),
        ({"S": "🚀"}, 4),
        ({"BOOL": True}, 1),
        ({"BOOL": False}, 1),
        ({"NULL": True}, 1),
        ({"B": b"\x00\x01\x02"}, 3),  # raw bytes, not base64
        ({"SS": ["ab", "é"]}, 4),
        ({"NS": ["1", "123"]}, 5),
        ({"L": []}, 3),
        ({"M": {}}, 3),
        ({"L": [{"S": "ab"}, {"BOOL": True}]}, 3 + (1 + 2) + (1 + 1)),  # 3 + 1 per element + elements
        ({"M": {"k": {"N": "12"}, "é": {"NULL": True}}}, 3 + (1 + 1 + 2) + (1 + 2 + 1)),  # keys count as names
        ({"L": [{"L": [{"S": "x"}]}]}, 3 + 1 + (3 + 1 + 1)),  # nested
    ],
)
def test_value_sizes(attribute: dict[str, Any], expected: int) -> None:
    assert value_size(attribute) == expected


def test_attribute_names_are_counted_in_utf8() -> None:
    # Given an item with ASCII and multibyte names
    item = {"ab": {"S": "cd"}, "né": {"BOOL": True}, "n": {"N": "12345"}}
    # Then each attribute costs its UTF-8 name plus its value
    assert item_size(item) == (2 + 2) + (3 + 1) + (1 + 4)


def test_unknown_attribute_type_is_refused() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the type alone is the contract
        value_size({"X": "?"})


def test_the_shipped_singleton_fits_one_read_block_with_room_to_grow() -> None:
    # Given the seeded singleton with every declared flag at its initial value
    declarations = load_service_declarations()
    item = {**singleton_key(SINGLETON_SK), VERSION_ATTR: {"N": "123456"}}
    item.update({name: encode(spec, spec.initial) for name, spec in declarations.items()})
    # Then it is far below the 4 KB block the guard protects
    size = item_size(item)
    assert size == sum(len(name) for name in item) + sum(value_size(value) for value in item.values())
    assert size < READ_BLOCK_BYTES // 4
