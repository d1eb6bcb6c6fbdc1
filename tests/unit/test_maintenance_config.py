"""The maintenance function's edges: its windows read from the deployment document at cold start, the schedule
payload parsed per call.

Also the contract with the infra side: the document the stack writes and each schedule's payload are exactly what
the function accepts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from singleton_flags_service.contract import (
    DEPLOYMENT_FILE_VARIABLE,
    MAX_WINDOWS,
    SettingsError,
    WindowDefinition,
    deployment_document,
    read_deployment_document,
)
from singleton_flags_service.maintenance.windows import (
    Command,
    InvalidSchedulePayload,
    Window,
    parse_payload,
    windows_by_name,
)

WINDOWS = {"weekly-patching": Window("weekly-patching", 3600), "db-migration": Window("db-migration", 7200)}
SUNDAY = {"start": "cron(0 3 ? * SUN *)", "end": "cron(0 4 ? * SUN *)", "timezone": "UTC"}


def read(tmp_path: Path, text: str) -> tuple[WindowDefinition, ...]:
    """What a function reads at cold start from a deployment document of this text."""
    path = tmp_path / "deployment.json"
    path.write_text(text, encoding="utf-8")
    return read_deployment_document({DEPLOYMENT_FILE_VARIABLE: str(path)})


def window(**changes: Any) -> dict[str, Any]:
    return {"name": "w", **SUNDAY, "duration_seconds": 3600, **changes}


# ---------------------------------------------------------------------------------------------- the document


def test_no_deployment_document_means_no_window() -> None:
    # Given a function outside a stack's asset (no document in its package, none named) / Then there is no window
    assert read_deployment_document({}) == ()


def test_an_empty_list_of_windows_means_none(tmp_path: Path) -> None:
    assert read(tmp_path, '{"maintenance_windows": []}') == ()


def test_windows_are_read_into_typed_config_in_their_order(tmp_path: Path) -> None:
    # Given the stack's document for two windows
    raw = [window(name="weekly-patching"), window(name="db-migration", duration_seconds=7200)]
    # When read at cold start
    definitions = read(tmp_path, json.dumps({"maintenance_windows": raw}))
    # Then each window is typed, in cdk.json's order, and the maintenance function knows each by name
    assert [definition.name for definition in definitions] == ["weekly-patching", "db-migration"]
    assert windows_by_name(definitions) == WINDOWS
    assert windows_by_name(definitions)["weekly-patching"].actor == "scheduler:weekly-patching"


@pytest.mark.parametrize(
    ("document", "names"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "exactly ['maintenance_windows']"),
        ('{"maintenance_windows": [], "extra": 1}', "exactly ['maintenance_windows']"),
        ('{"maintenance_windows": {}}', "must be a list"),
        ({"maintenance_windows": [3600]}, "maintenance_windows[0] must be exactly"),
        ({"maintenance_windows": [{"name": "w", "duration_seconds": 60}]}, "maintenance_windows[0] must be exactly"),
        ({"maintenance_windows": [window(extra=1)]}, "maintenance_windows[0] must be exactly"),
        ({"maintenance_windows": [window(duration_seconds=0)]}, "('w'): duration_seconds"),
        ({"maintenance_windows": [window(duration_seconds=86401)]}, "('w'): duration_seconds"),
        ({"maintenance_windows": [window(duration_seconds="60")]}, "maintenance_windows[0] must be exactly"),
        ({"maintenance_windows": [window(duration_seconds=60.5)]}, "maintenance_windows[0] must be exactly"),
        ({"maintenance_windows": [window(duration_seconds=True)]}, "maintenance_windows[0] must be exactly"),
        ({"maintenance_windows": [window(name="")]}, "(''): name must match"),
        ({"maintenance_windows": [window(name="Nightly")]}, "('Nightly'): name must match"),
        ({"maintenance_windows": [window(start="0 3 * * 0")]}, "('w'): start must be an EventBridge cron"),
        ({"maintenance_windows": [window(timezone="Mars/Olympus")]}, "unknown IANA time zone 'Mars/Olympus'"),
        ({"maintenance_windows": [window(), window()]}, "maintenance_windows[1]: duplicate window name 'w'"),
        (
            {"maintenance_windows": [window(name=f"w{index}") for index in range(MAX_WINDOWS + 1)]},
            f"at most {MAX_WINDOWS} windows",
        ),
    ],
)
def test_a_broken_deployment_document_fails_the_cold_start_naming_it(tmp_path: Path, document: Any, names: str) -> None:
    # Given a document the function cannot use / When read / Then SettingsError names the document and the window
    text = document if isinstance(document, str) else json.dumps(document)
    with pytest.raises(SettingsError) as caught:
        read(tmp_path, text)
    assert "deployment.json" in str(caught.value)
    assert names in str(caught.value)


def test_a_named_document_that_does_not_exist_fails_the_cold_start(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    with pytest.raises(SettingsError, match=DEPLOYMENT_FILE_VARIABLE):
        read_deployment_document({DEPLOYMENT_FILE_VARIABLE: str(missing)})


def test_the_writer_refuses_at_synth_what_the_reader_would_refuse() -> None:
    # Given windows no function would accept / When the stack writes the document / Then it refuses, saying why
    with pytest.raises(ValueError, match="duplicate window name 'w'"):
        deployment_document([WindowDefinition(**window()), WindowDefinition(**window())])
    with pytest.raises(ValueError, match="duration_seconds"):
        deployment_document([WindowDefinition(**window(duration_seconds=0))])
    with pytest.raises(ValueError, match=f"at most {MAX_WINDOWS} windows"):
        deployment_document([WindowDefinition(**window(name=f"w{i}")) for i in range(MAX_WINDOWS + 1)])


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


def test_what_the_stack_deploys_is_what_the_function_accepts(tmp_path: Path) -> None:
    """Given cdk.json's windows, when the stack writes the deployment document and each schedule's payload,
    then the function reads every window with its duration and accepts both of its payloads."""
    from singleton_flags_infra.config import deployment_document as stack_document, load_config, schedule_payload

    config = load_config()
    windows = windows_by_name(read(tmp_path, stack_document(config)))
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
