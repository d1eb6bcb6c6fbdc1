"""Function configuration: read and validated once at cold start, naming the bad variable."""

from __future__ import annotations

import pytest

from singleton_flags.keys import SINGLETON_SK
from singleton_flags_service.contract import MAX_STALE_LIMIT_SECONDS, Settings, SettingsError


def test_only_the_table_name_is_required() -> None:
    # Given nothing but TABLE_NAME
    settings = Settings.from_env({"TABLE_NAME": "flags"})
    # Then everything else has its default
    assert settings == Settings(table_name="flags")
    assert settings.item_sort_key == SINGLETON_SK


@pytest.mark.parametrize("env", [{}, {"TABLE_NAME": ""}])
def test_a_missing_table_name_fails_naming_it(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="TABLE_NAME"):
        Settings.from_env(env)


def test_the_item_sort_key_can_move_to_a_new_shape() -> None:
    # The V1 -> V2 migration seam: readers are switched by configuration
    assert Settings.from_env({"TABLE_NAME": "t", "FLAGS_ITEM_SK": "FLAGS#V2"}).item_sort_key == "FLAGS#V2"


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("FLAGS_ITEM_SK", "AUDIT#1"),
        ("FLAGS_MAX_STALE_SECONDS", "ten"),
        ("FLAGS_MAX_STALE_SECONDS", "-1"),
        ("FLAGS_MAX_STALE_SECONDS", str(MAX_STALE_LIMIT_SECONDS + 1)),
        ("FLAGS_AUDIT_RETENTION_DAYS", "0"),
    ],
)
def test_a_bad_value_fails_at_cold_start_naming_the_variable(key: str, raw: str) -> None:
    with pytest.raises(SettingsError, match=key):
        Settings.from_env({"TABLE_NAME": "t", key: raw})


def test_max_stale_is_bounded_and_parsed() -> None:
    settings = Settings.from_env({"TABLE_NAME": "t", "FLAGS_MAX_STALE_SECONDS": str(MAX_STALE_LIMIT_SECONDS)})
    assert settings.max_stale_seconds == MAX_STALE_LIMIT_SECONDS


@pytest.mark.parametrize("raw", ["five", "5s", "1.5", "²", "+5", " 5", "1_0", "\u0665", "9" * 5000])
def test_a_bad_powertools_max_age_fails_at_cold_start(raw: str) -> None:
    # Given a function deployed with a cache age that is not an integer
    # When its settings are read at cold start, then they fail there, naming the variable
    with pytest.raises(SettingsError, match="POWERTOOLS_PARAMETERS_MAX_AGE"):
        Settings.from_env({"TABLE_NAME": "t", "POWERTOOLS_PARAMETERS_MAX_AGE": raw})
