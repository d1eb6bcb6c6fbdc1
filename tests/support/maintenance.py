"""Plain helpers of the maintenance function's tests: the function over moto and what a schedule delivers
(the ``maintenance`` fixture, in conftest.py, builds a ``MaintenanceFunction``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from local.functions import load_module
from singleton_flags.declarations import Declarations
from singleton_flags.keys import MAINTENANCE_FLAG, VERSION_ATTR, singleton_key
from singleton_flags_service.contract import (
    DEPLOYMENT_FILE,
    DEPLOYMENT_FILE_VARIABLE,
    WindowDefinition,
    deployment_document,
)
from singleton_flags_service.maintenance.windows import MaintenanceWindows
from singleton_flags_service.stores import service_store
from singleton_flags_service.writes.store import ChangeResult, FlagStore
from tests.support.unit import Clock, emf_metrics

PATCHING, MIGRATION, QUICK = "weekly-patching", "db-migration", "quick-fix"
DURATIONS = {PATCHING: 3600, MIGRATION: 7200, QUICK: 600}
ADMIN = "arn:aws:iam::123456789012:user/admin"
SERVICE_DIMENSION = {"service": "singleton-flags"}
WINDOW_METRICS = {"WindowStarts", "WindowEnds", "WindowSkips"}
MODULE = "singleton_flags_service.handlers.maintenance"
AT = "2023-11-14T22:13:20Z"  # the fake clock's start, as Scheduler writes it


@dataclass
class MaintenanceFunction:
    """The real maintenance handler over the moto table, plus what a test needs to look at the result."""

    module: ModuleType
    client: Any
    table_name: str
    declarations: Declarations
    clock: Clock
    context: Any
    monkeypatch: pytest.MonkeyPatch
    configured: dict[str, Any] = field(default_factory=dict)

    def use_client(self, client: Any, **store_options: Any) -> None:
        """Rebuild the function's service on ``client`` (moto, or a wrapper of it) and the fake clock."""
        store_options.setdefault("sleep", lambda _: None)
        store = service_store(
            client,
            self.table_name,
            self.declarations,
            clock=self.clock,
            on_retry=self.module.STORE._on_retry,
            on_commit=self.module.STORE._on_commit,
            **store_options,
        )
        service = MaintenanceWindows(store, self.configured, clock=self.clock)
        self.monkeypatch.setattr(self.module, "MAINTENANCE", service)

    def deliver(self, event: Any) -> dict[str, Any]:
        return self.module.handler(event, self.context)

    def payload(self, action: str, window: str, scheduled: float | None = None) -> dict[str, str]:
        """What the schedule sends: its scheduled time (by default, now) in Scheduler's format."""
        return {
            "action": action,
            "window": window,
            "scheduled_time": scheduled_time(self.clock.now if scheduled is None else scheduled),
        }

    def start(self, window: str = PATCHING, scheduled: float | None = None) -> dict[str, Any]:
        return self.deliver(self.payload("start", window, scheduled))

    def end(self, window: str = PATCHING, scheduled: float | None = None) -> dict[str, Any]:
        return self.deliver(self.payload("end", window, scheduled))

    def switch_by_hand(self, on: bool) -> ChangeResult:
        """What PATCH /flags {"flags": {"maintenance_mode": on}} does: a store change by an IAM identity."""
        store = FlagStore(self.client, self.table_name, self.declarations, clock=self.clock)
        return store.change({MAINTENANCE_FLAG: on}, actor=ADMIN, reason="switched by hand")

    def item(self) -> dict[str, Any]:
        return self.client.get_item(TableName=self.table_name, Key=singleton_key(), ConsistentRead=True)["Item"]

    def version(self) -> int:
        return int(self.item()[VERSION_ATTR]["N"])

    def audit(self) -> list[dict[str, Any]]:
        """Audit records, oldest first."""
        records, _ = FlagStore(self.client, self.table_name, self.declarations).history(limit=100)
        return records[::-1]


@contextmanager
def fresh_module() -> Iterator[ModuleType]:
    """Import the handler module anew (its module scope runs, as at a cold start); put back what was there."""
    previous = sys.modules.pop(MODULE, None)
    try:
        yield load_module(MODULE, fresh=True)
    finally:
        sys.modules.pop(MODULE, None)
        if previous is not None:
            sys.modules[MODULE] = previous


def deploy_windows(
    monkeypatch: pytest.MonkeyPatch, directory: Path, durations: Mapping[str, int]
) -> list[WindowDefinition]:
    """Windows of these lengths in a deployment document (the stack's writer) the functions then read at their cold
    start. Their crons are Sunday 03:00-04:00 UTC: only the write function evaluates them."""
    windows = [
        WindowDefinition(name, "cron(0 3 ? * SUN *)", "cron(0 4 ? * SUN *)", "UTC", seconds)
        for name, seconds in durations.items()
    ]
    path = directory / DEPLOYMENT_FILE.name
    path.write_text(deployment_document(windows), encoding="utf-8")
    monkeypatch.setenv(DEPLOYMENT_FILE_VARIABLE, str(path))
    return windows


def scheduled_time(epoch: float) -> str:
    """<aws.scheduler.scheduled-time> as Scheduler substitutes it, e.g. 2022-03-22T18:59:43Z."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def window_metrics(records: list[dict[str, Any]]) -> list[tuple[str, float, dict[str, str]]]:
    return [metric for metric in emf_metrics(records) if metric[0] in WINDOW_METRICS]


def logged(records: list[dict[str, Any]], level: str) -> list[dict[str, Any]]:
    return [record for record in records if record.get("level") == level]


class ManualSwitchBeforeFirstTransaction:
    """A client on which an admin's manual switch lands right before the function's first transaction:
    after the function read the state and decided, before its write reaches DynamoDB."""

    def __init__(self, real: Any, manual_switch: Any) -> None:
        self._real = real
        self._manual_switch = manual_switch
        self.transactions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def transact_write_items(self, **params: Any) -> Any:
        self.transactions += 1
        if self.transactions == 1:
            self._manual_switch()
        return self._real.transact_write_items(**params)
