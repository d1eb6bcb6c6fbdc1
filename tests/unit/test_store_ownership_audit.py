"""The audit trail records who held maintenance before and after a change of ownership."""

from __future__ import annotations

from typing import Any

from singleton_flags.declarations import Declarations
from singleton_flags_service.writes.store import FlagStore, Ownership


def _store(ddb: Any, table_name: str, declarations: Declarations) -> FlagStore:
    FlagStore(ddb, table_name, declarations).seed(actor="test", reason="seed")
    return FlagStore(ddb, table_name, declarations, sleep=lambda _: None, clock=lambda: 1_700_000_000.0)


def start_window(store: FlagStore) -> None:
    """What the maintenance function writes when window w1 starts."""
    store.change(
        {"maintenance_mode": True},
        actor="scheduler:w1",
        reason="window",
        kind="window-start",
        ownership=Ownership(owner="w1", deadline=1_700_003_600),
    )


def test_a_manual_switch_records_the_window_that_lost_maintenance(ddb, table_name, declarations) -> None:
    # Given a window holds maintenance
    store = _store(ddb, table_name, declarations)
    start_window(store)
    # When an admin confirms maintenance by hand (same value: only the ownership changes)
    result = store.change({"maintenance_mode": True}, actor="alice", reason="keep it on by hand")
    # Then a new version is written, and its audit record says w1 lost maintenance to a manual switch
    assert result.applied and result.snapshot.maintenance_owner is None
    records, _ = store.history(limit=1)
    assert records[0]["version"] == result.snapshot.version
    assert records[0]["maintenance_owner"] == {"old": "w1", "new": None}
    assert records[0]["changes"] == {}


def test_a_window_start_records_the_window_that_took_maintenance(ddb, table_name, declarations) -> None:
    # Given nobody holds maintenance / When a window starts
    store = _store(ddb, table_name, declarations)
    start_window(store)
    # Then its audit record names the window as the new holder
    records, _ = store.history(limit=1)
    assert records[0]["maintenance_owner"] == {"old": None, "new": "w1"}
    assert records[0]["changes"] == {"maintenance_mode": {"old": False, "new": True}}


def test_a_change_that_leaves_ownership_alone_records_none(ddb, table_name, declarations) -> None:
    store = _store(ddb, table_name, declarations)
    store.change({"signup_enabled": False}, actor="alice", reason="close signups")
    records, _ = store.history(limit=1)
    assert "maintenance_owner" not in records[0]
