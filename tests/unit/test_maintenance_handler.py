"""The maintenance function on moto, through ``handler``: payloads it rejects, failures, its metrics, its cold
start (the rules of a window's start and end: test_maintenance_windows.py).

Each delivery is the exact payload a schedule sends. The function module is imported fresh per test with
its windows in a deployment document (its module scope is what runs at cold start); its service is then rebuilt on the
moto client and the fake clock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from singleton_flags.keys import MAINTENANCE_OWNER_ATTR, singleton_key
from singleton_flags_service.contract import SettingsError
from singleton_flags_service.errors import StoreUnavailable, WriteConflict
from tests.support.maintenance import (
    AT,
    DURATIONS,
    PATCHING,
    SERVICE_DIMENSION,
    MaintenanceFunction,
    deploy_windows,
    fresh_module,
    logged,
    window_metrics,
)
from tests.support.unit import FailingClient, emf_metrics

# ---------------------------------------------------------------------------------------------- bad payloads, failures


@pytest.mark.parametrize(
    "event",
    [
        None,
        [],
        "start",
        {},
        {"action": "start"},
        {"action": "start", "window": PATCHING, "scheduled_time": AT, "extra": 1},
        {"action": "restart", "window": PATCHING, "scheduled_time": AT},
        {"action": "start", "window": "nightly", "scheduled_time": AT},
        {"action": "end", "window": 7, "scheduled_time": AT},
        {"action": "start", "window": PATCHING},
        {"action": "start", "window": PATCHING, "scheduled_time": "<aws.scheduler.scheduled-time>"},
        {"action": "start", "window": PATCHING, "scheduled_time": "2023-11-14T22:13:20"},
    ],
    ids=[
        "null",
        "list",
        "string",
        "empty",
        "no-window",
        "extra-key",
        "unknown-action",
        "unknown-window",
        "window-not-str",
        "no-scheduled-time",
        "placeholder-not-substituted",
        "time-without-zone",
    ],
)
def test_a_payload_that_is_not_a_schedule_delivery_is_rejected_without_retry(
    maintenance: MaintenanceFunction, event: Any, stdout: Any
) -> None:
    # Given a payload the function cannot act on
    # When it is delivered
    outcome = maintenance.deliver(event)
    # Then the function returns normally (no retry), says why, logs an ERROR, writes and counts nothing
    assert outcome["status"] == "rejected"
    assert outcome["error"]
    records = stdout.records()
    [error] = logged(records, "ERROR")
    assert error["message"] == "schedule payload rejected: not retried"
    assert error["error"] == outcome["error"]
    assert window_metrics(records) == []
    assert maintenance.version() == 1


def test_a_dynamodb_failure_raises_so_the_scheduler_retries(maintenance: MaintenanceFunction, stdout: Any) -> None:
    # Given DynamoDB refuses the reads
    maintenance.use_client(FailingClient(maintenance.client, "get_item", "InternalServerError"))
    # When a start is delivered / Then the invocation fails (the scheduler retries, then dead-letters it)
    with pytest.raises(StoreUnavailable):
        maintenance.start(PATCHING)
    [error] = logged(stdout.records(), "ERROR")
    assert (error["window"], error["action"], error["code"]) == (PATCHING, "start", "STORE_UNAVAILABLE")


def test_retries_running_out_under_contention_raise(maintenance: MaintenanceFunction, stdout: Any) -> None:
    # Given every transaction is cancelled by the version condition
    conflicting = FailingClient(
        maintenance.client,
        "transact_write_items",
        "TransactionCanceledException",
        reasons=[{"Code": "ConditionalCheckFailed"}, {"Code": "None"}],
    )
    maintenance.use_client(conflicting, max_attempts=3)
    # When a start is delivered / Then it raises after the bounded attempts, having written nothing
    with pytest.raises(WriteConflict):
        maintenance.start(PATCHING)
    assert conflicting.calls == 3
    assert maintenance.version() == 1
    assert ("WriteRetries", 2.0, SERVICE_DIMENSION) in emf_metrics(stdout.records())


# ---------------------------------------------------------------------------------------------- metrics


@pytest.mark.parametrize(
    ("deliveries", "expected"),
    [
        ([("start", PATCHING)], [("WindowStarts", 1.0, SERVICE_DIMENSION)]),
        ([("start", PATCHING), ("end", PATCHING)], [("WindowEnds", 1.0, SERVICE_DIMENSION)]),
        ([("end", PATCHING)], [("WindowSkips", 1.0, SERVICE_DIMENSION)]),
        ([("start", PATCHING), ("start", PATCHING)], []),
        ([("start", PATCHING), ("end", PATCHING), ("end", PATCHING)], []),
    ],
    ids=["start", "end", "skip", "duplicate-start", "duplicate-end"],
)
def test_each_invocation_counts_its_outcome(
    maintenance: MaintenanceFunction, stdout: Any, deliveries: list[tuple[str, str]], expected: list[Any]
) -> None:
    # Given the deliveries before the last one happened
    for action, window in deliveries[:-1]:
        maintenance.deliver(maintenance.payload(action, window))
    stdout.text()
    # When the last one is delivered
    action, window = deliveries[-1]
    maintenance.deliver(maintenance.payload(action, window))
    # Then its invocation flushes exactly its own count, with the service dimension (a duplicate counts nothing)
    assert window_metrics(stdout.records()) == expected


# ---------------------------------------------------------------------------------------------- cold start


def test_the_function_reads_its_windows_from_the_deployment_document_at_cold_start(
    maintenance: MaintenanceFunction,
) -> None:
    # Given the windows in the deployment document / When the module loaded / Then each is known with its length
    assert {name: window.duration_seconds for name, window in maintenance.configured.items()} == DURATIONS


def test_a_broken_deployment_document_fails_the_cold_start(
    ddb: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a deployment document the function cannot use / When the module loads / Then it fails, naming it
    deploy_windows(monkeypatch, tmp_path, {"weekly-patching": 3600})
    path = tmp_path / "deployment.json"
    path.write_text(path.read_text().replace('"duration_seconds": 3600', '"duration_seconds": "an hour"'))
    with pytest.raises(SettingsError, match=r"deployment\.json.*maintenance_windows\[0\]"), fresh_module():
        pass


def test_a_start_on_a_deleted_singleton_restores_it_from_the_trail_and_opens_the_window(maintenance) -> None:
    # Given a trail of one change, then the singleton deleted (the audit records outlive it)
    maintenance.switch_by_hand(False)  # no-op on the seeded state: nothing written
    maintenance.switch_by_hand(True)
    maintenance.switch_by_hand(False)
    trail_before = maintenance.audit()
    maintenance.client.delete_item(TableName=maintenance.table_name, Key=singleton_key())
    # When a window's start arrives
    result = maintenance.start()
    # Then the item is back with every declared flag, the window holds maintenance, the restore is version
    # L+1 and the start L+2 (this needs dynamodb:Query in the maintenance role: see test_infra_functions.py)
    assert result["status"] == "started"
    item = maintenance.item()
    assert set(maintenance.declarations) <= set(item)
    assert item[MAINTENANCE_OWNER_ATTR]["S"] == PATCHING
    last = trail_before[-1]["version"]
    assert maintenance.version() == last + 2
    trail = maintenance.audit()
    assert [r["version"] for r in trail] == [r["version"] for r in trail_before] + [last + 1, last + 2]
    assert [r["kind"] for r in trail[-2:]] == ["restore", "window-start"]
