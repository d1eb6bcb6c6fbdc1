"""Change events on DynamoDB Local with the table's stream on, as the local runner serves them (``GET /_events``):
the writes commit their audit records, the stream carries them, the deployed publisher turns each into one
``Flags Changed`` event. Nothing here asks the write path to publish.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from local.api import LocalApi, Request
from local.events import StreamEvents
from local.functions import Functions
from singleton_flags.declarations import Declarations
from singleton_flags_infra.config import load_config
from singleton_flags_service.maintenance.windows import MaintenanceWindows, Window
from singleton_flags_service.writes.store import FlagStore
from tests.support.events import invocation_context, rest_event
from tests.support.tables import read_trail

WINDOW = "weekly-patching"


@pytest.fixture
def patch_and_revert(write_function: ModuleType) -> Callable[..., dict[str, Any]]:
    def call(method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = write_function.handler(rest_event(method, path, body=body), invocation_context())
        assert response["statusCode"] == 200, response["body"]
        answer: dict[str, Any] = json.loads(response["body"])
        return answer

    return call


@pytest.fixture
def runner_events(flags_table: str, local_endpoint: str) -> LocalApi:
    """The runner's API with its stream reader on the test's table (no function is needed for /_events)."""
    stream = StreamEvents(flags_table, "prod", endpoint_url=local_endpoint)
    return LocalApi(Functions({}), load_config(), {"openapi": "3.1.0", "paths": {}}, events=stream)


def get_events(api: LocalApi) -> list[dict[str, Any]]:
    response = api.handle(Request(method="GET", raw_path="/_events", query="", headers=[], body=b""))
    assert response.status == 200, response.body
    body = json.loads(response.body)
    assert body["errors"] == []
    events: list[dict[str, Any]] = body["events"]
    return events


def test_a_patch_a_revert_and_a_window_start_each_yield_one_event_with_their_changes(
    patch_and_revert: Callable[..., dict[str, Any]],
    runner_events: LocalApi,
    ddb_local: Any,
    flags_table: str,
    declarations: Declarations,
) -> None:
    # Given a PATCH (version 1), a revert to the seeded state (version 2) and a window start (version 3)
    patch_and_revert(
        "PATCH", "/flags", {"flags": {"signup_enabled": False, "search_ranking": "hybrid"}, "reason": "try"}
    )
    patch_and_revert("POST", "/flags/revert", {"version": 0, "reason": "back to the seed"})
    windows = MaintenanceWindows(FlagStore(ddb_local, flags_table, declarations), {WINDOW: Window(WINDOW, 3600)})
    started = windows.handle(
        {"action": "start", "window": WINDOW, "scheduled_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    )
    assert started.as_dict()["status"] == "started", started.as_dict()

    # When the runner is asked for its events
    events = get_events(runner_events)

    # Then there is one event per audit record, in version order, each as documented
    assert [event["detail"]["version"] for event in events] == [1, 2, 3]
    assert len(read_trail(ddb_local, flags_table)) == 3
    for event in events:
        assert (event["source"], event["detail-type"], event["event-bus-name"]) == (
            "singleton-flags",
            "Flags Changed",
            "singleton-flags-prod",
        )
        assert set(event["detail"]) == {
            "stage",
            "version",
            "previous_version",
            "kind",
            "actor",
            "reason",
            "time",
            "changes",
        }
        assert event["detail"]["stage"] == "prod"
        assert event["detail"]["previous_version"] == event["detail"]["version"] - 1
    patch, revert, start = (event["detail"] for event in events)
    assert (patch["kind"], patch["reason"]) == ("change", "try")
    assert patch["changes"] == {
        "signup_enabled": {"old": True, "new": False},
        "search_ranking": {"old": "classic", "new": "hybrid"},
    }
    assert revert["kind"] == "revert"
    assert revert["changes"] == {
        "signup_enabled": {"old": False, "new": True},
        "search_ranking": {"old": "hybrid", "new": "classic"},
    }
    assert (start["kind"], start["actor"]) == ("window-start", f"scheduler:{WINDOW}")
    assert start["changes"] == {"maintenance_mode": {"old": False, "new": True}}

    # And asking again publishes nothing twice; a new version is one more event
    assert get_events(runner_events) == events
    patch_and_revert("PATCH", "/flags", {"flags": {"trace_sample_rate": 0.5}, "reason": "more traces"})
    again = get_events(runner_events)
    assert again[:3] == events
    assert [event["detail"]["version"] for event in again] == [1, 2, 3, 4]
    assert again[3]["detail"]["changes"] == {"trace_sample_rate": {"old": 0.05, "new": 0.5}}


def test_a_write_that_changes_nothing_is_no_event(
    patch_and_revert: Callable[..., dict[str, Any]], runner_events: LocalApi
) -> None:
    body = patch_and_revert("PATCH", "/flags", {"flags": {"signup_enabled": True}, "reason": "already so"})
    assert body["applied"] is False
    assert get_events(runner_events) == []
