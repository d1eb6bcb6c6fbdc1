"""Function configuration: read and validated once at cold start, naming the bad variable."""

from __future__ import annotations

import dataclasses

import pytest

from singleton_flags.keys import SINGLETON_SK
from singleton_flags_service.contract import (
    MAX_AGE,
    MAX_STALE_LIMIT_SECONDS,
    READERS,
    ChangeEventSettings,
    Deployment,
    Settings,
    SettingsError,
    WindowsConfiguration,
    function_environment,
)


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


@pytest.mark.parametrize("prefix", ["short-", "app guard-", "app-guard-*", "-app-guard-", "a" * 201])
def test_a_guard_prefix_the_stack_would_refuse_fails_at_cold_start(prefix: str) -> None:
    # Given a write function deployed with a guards' alarm prefix cdk.json could not have declared
    # When its settings are read / Then they fail there, naming the variable (one rule for synth and cold start)
    with pytest.raises(SettingsError, match="FLAGS_GUARD_ALARM_PREFIX"):
        Settings.from_env({"TABLE_NAME": "t", "FLAGS_GUARD_ALARM_PREFIX": prefix})


def test_no_guard_prefix_means_guarded_changes_are_refused() -> None:
    assert Settings.from_env({"TABLE_NAME": "t"}).guard_alarm_prefix == ""
    prefix = "singleton-flags-prod-guard-"
    assert Settings.from_env({"TABLE_NAME": "t", "FLAGS_GUARD_ALARM_PREFIX": prefix}).guard_alarm_prefix == prefix


@pytest.mark.parametrize("stage", ["Prod", "1st", "prod_eu", "a" * 22, "prod stage"])
def test_a_stage_the_stack_would_refuse_fails_the_change_events_cold_start(stage: str) -> None:
    with pytest.raises(SettingsError, match="FLAGS_STAGE"):
        ChangeEventSettings.from_env({"EVENT_BUS_NAME": "singleton-flags-prod", "FLAGS_STAGE": stage})


def test_what_the_stack_writes_for_each_function_is_what_its_reader_reads() -> None:
    # Given a stage's deployment as the stack hands it over / When each function's environment is written and read
    deployment = Deployment(
        table_name="flags",
        stage="staging",
        max_age_seconds=7,
        max_stale_seconds=600,
        audit_retention_days=30,
        guard_alarm_prefix="singleton-flags-staging-guard-",
        event_bus_name="singleton-flags-staging",
        metrics_namespace="SingletonFlags/staging",
    )
    settings = Settings("flags", max_age_seconds=7, max_stale_seconds=600, audit_retention_days=30)
    # Then each reads what was written (the write function's targets come from their own writers: test_one_time.py)
    for function in ("read", "seed"):
        assert READERS[function](function_environment(deployment, function)) == settings
    for function in ("maintenance", "guard"):
        assert READERS[function](function_environment(deployment, function)) == WindowsConfiguration(settings, ())
    written = function_environment(deployment, "write")
    assert Settings.from_env(written).guard_alarm_prefix == "singleton-flags-staging-guard-"
    assert READERS["change_events"](function_environment(deployment, "change_events")) == ChangeEventSettings(
        "singleton-flags-staging", "staging", "flags"
    )


def test_the_writer_refuses_at_synth_what_a_reader_would_refuse() -> None:
    deployment = Deployment("flags", "prod", 5, 300, 365, "singleton-flags-prod-guard-", "bus", "SingletonFlags/prod")
    with pytest.raises(ValueError, match="POWERTOOLS_PARAMETERS_MAX_AGE"):
        function_environment(dataclasses.replace(deployment, max_age_seconds=MAX_AGE.high + 1), "read")
    with pytest.raises(ValueError, match="FLAGS_MAX_STALE_SECONDS"):
        function_environment(dataclasses.replace(deployment, max_stale_seconds=-1), "read")
    with pytest.raises(ValueError, match="guards' alarm prefix"):
        function_environment(dataclasses.replace(deployment, guard_alarm_prefix="short-"), "write")
    with pytest.raises(ValueError, match="no function 'reader'"):
        function_environment(deployment, "reader")
