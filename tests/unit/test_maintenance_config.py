"""The maintenance function's edges: MAINTENANCE_WINDOWS parsed at cold start, the schedule payload parsed per call.

Also the contract with the infra side: what singleton_flags_infra.config puts in the environment and in each schedule's
payload is exactly what the function accepts.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags_service.contract import SettingsError
from singleton_flags_service.maintenance.windows import (
    WINDOWS_ENV,
    Command,
    InvalidSchedulePayload,
    Window,
    parse_payload,
    windows_from_env,
)

WINDOWS = {"weekly-patching": Window("weekly-patching", 3600), "db-migration": Window("db-migration", 7200)}


# ---------------------------------------------------------------------------------------------- MAINTENANCE_WINDOWS


@pytest.mark.parametrize("env", [{}, {WINDOWS_ENV: ""}, {WINDOWS_ENV: "  "}, {WINDOWS_ENV: "{}"}])
def test_no_windows_configured_means_none(env: dict[str, str]) -> None:
    # Given MAINTENANCE_WINDOWS absent or empty / When parsed / Then there is no window
    assert windows_from_env(env) == {}


def test_windows_are_parsed_into_typed_config() -> None:
    # Given the infra's JSON for two windows
    raw = {"weekly-patching": {"duration_seconds": 3600}, "db-migration": {"duration_seconds": 7200}}
    env = {WINDOWS_ENV: json.dumps(raw)}
    # When parsed at cold start
    windows = windows_from_env(env)
    # Then each window is typed, with its scheduler actor
    assert windows == WINDOWS
    assert windows["weekly-patching"].actor == "scheduler:weekly-patching"


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"w": 3600}', "['w']"),
        ('{"w": {}}', "['w']"),
        ('{"w": {"duration_seconds": 60, "timezone": "UTC"}}', "['w']"),
        ('{"w": {"duration_seconds": 0}}', "['w'].duration_seconds"),
        ('{"w": {"duration_seconds": -5}}', "['w'].duration_seconds"),
        ('{"w": {"duration_seconds": 86401}}', "['w'].duration_seconds"),
        ('{"w": {"duration_seconds": "60"}}', "['w'].duration_seconds"),
        ('{"w": {"duration_seconds": 60.5}}', "['w'].duration_seconds"),
        ('{"w": {"duration_seconds": true}}', "['w'].duration_seconds"),
        ('{"": {"duration_seconds": 60}}', "empty name"),
    ],
)
def test_a_broken_windows_variable_fails_the_cold_start_naming_it(raw: str, names: str) -> None:
    # Given a MAINTENANCE_WINDOWS the function cannot use / When parsed / Then SettingsError names the variable
    with pytest.raises(SettingsError) as caught:
        windows_from_env({WINDOWS_ENV: raw})
    assert WINDOWS_ENV in str(caught.value)
    assert names in str(caught.value)


# ---------------------------------------------------------------------------------------------- payload


@pytest.mark.parametrize("action", ["start", "end"])
def test_the_schedule_payload_names_an_action_and_a_configured_window(action: str) -> None:
    # Given the exact payload a schedule sends / When parsed / Then it is a command on that window
    command = parse_payload(
        {"action": action, "window": "db-migration", "scheduled_time": "2026-03-22T18:59:43Z"}, WINDOWS
    )
    assert command == Command(action, WINDOWS["db-migration"], scheduled_at=1774205983.0)


T = "2026-03-22T18:59:43Z"


@pytest.mark.parametrize(
    ("event", "says"),
    [
        (None, "got NoneType"),
        (["start", "weekly-patching"], "got list"),
        ('{"action": "start", "window": "weekly-patching"}', "got str"),
        ({}, "missing key(s) ['action', 'scheduled_time', 'window']"),
        ({"action": "start", "scheduled_time": T}, "missing key(s) ['window']"),
        ({"window": "weekly-patching", "scheduled_time": T}, "missing key(s) ['action']"),
        ({"action": "start", "window": "weekly-patching"}, "missing key(s) ['scheduled_time']"),
        (
            {"action": "start", "window": "weekly-patching", "scheduled_time": T, "force": True},
            "unknown key(s) ['force']",
        ),
        (
            {"action": "stop", "window": "weekly-patching", "scheduled_time": T},
            "'action' must be one of ['start', 'end'], got 'stop'",
        ),
        ({"action": "START", "window": "weekly-patching", "scheduled_time": T}, "got 'START'"),
        ({"action": "start", "window": "nightly", "scheduled_time": T}, "unknown window 'nightly'"),
        ({"action": "start", "window": ["weekly-patching"], "scheduled_time": T}, "unknown window ['weekly-patching']"),
        (
            {"action": "start", "window": "weekly-patching", "scheduled_time": "<aws.scheduler.scheduled-time>"},
            "'scheduled_time' must be an ISO 8601 time with its offset",
        ),
        (
            {"action": "start", "window": "weekly-patching", "scheduled_time": "2026-03-22T18:59:43"},
            "'scheduled_time' must be an ISO 8601 time with its offset",
        ),
        (
            {"action": "start", "window": "weekly-patching", "scheduled_time": 1774205983},
            "'scheduled_time' must be an ISO 8601 time with its offset",
        ),
    ],
)
def test_a_payload_that_is_not_a_schedule_delivery_is_refused_with_a_clear_message(event: Any, says: str) -> None:
    # Given anything but {"action": "start"|"end", "window": <configured>} / When parsed / Then refused, saying why
    with pytest.raises(InvalidSchedulePayload) as caught:
        parse_payload(event, WINDOWS)
    assert says in str(caught.value)


# ---------------------------------------------------------------------------------------------- contract with infra


def test_what_the_stack_deploys_is_what_the_function_accepts() -> None:
    """Given cdk.json's windows, when the stack builds MAINTENANCE_WINDOWS and each schedule's payload,
    then the function parses every window with its duration and accepts both of its payloads."""
    from singleton_flags_infra.config import load_config, schedule_payload, windows_env

    config = load_config()
    windows = windows_from_env({WINDOWS_ENV: windows_env(config)})
    assert {name: window.duration_seconds for name, window in windows.items()} == {
        window.name: window.duration_seconds for window in config.maintenance_windows
    }
    for window in config.maintenance_windows:
        for action in ("start", "end"):
            payload = schedule_payload(window.name, action)
            # Scheduler substitutes its scheduled-time attribute before delivering
            assert payload["scheduled_time"] == "<aws.scheduler.scheduled-time>"
            payload["scheduled_time"] = "2026-03-22T18:59:43Z"
            command = parse_payload(payload, windows)
            assert (command.action, command.window.name) == (action, window.name)
