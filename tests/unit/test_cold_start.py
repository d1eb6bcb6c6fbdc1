"""Cold start: every function loads with the garbage collector paused, then freezes what its init built.

A cold start allocates 100k+ long-lived objects (boto3, botocore's models, Powertools) and almost no garbage;
with the collector on, that triggers young collections and a full one over the whole heap (docs/decisions.md).
"""

from __future__ import annotations

import gc
import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from local.functions import load_module

HANDLER_MODULES = (
    "singleton_flags_service.handlers.read_api",
    "singleton_flags_service.handlers.write_api",
    "singleton_flags_service.handlers.maintenance",
    "singleton_flags_service.handlers.guard",
)


@pytest.fixture
def cold_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[int], Any]]:
    """Load a handler module anew and record every collection that starts while it loads; put back what was there
    (a module loaded for the first time stays, as if the test had imported it)."""
    monkeypatch.delenv("FLAGS_DEPLOYMENT_FILE", raising=False)  # no deployment document: no window
    collections: list[int] = []
    replaced: dict[str, ModuleType | None] = {}

    def on_collection(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    def load(name: str) -> ModuleType:
        replaced.setdefault(name, sys.modules.pop(name, None))
        # Compiled (and its bytecode cached) before the count starts: what is measured is the module's own lines,
        # from its first (gc.disable()) on, not the compiler's allocations before it, whatever the environment's
        # PYTHONDONTWRITEBYTECODE.
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.loader is not None
        monkeypatch.setattr(sys, "dont_write_bytecode", False)
        spec.loader.get_code(name)  # type: ignore[attr-defined]  # a SourceFileLoader's
        # Start from empty generation counts, as a fresh process does: otherwise the garbage earlier tests left
        # can trigger a collection in importlib's module lookup, before the module's first line (gc.disable()) runs.
        gc.collect()
        gc.callbacks.append(on_collection)
        try:
            return load_module(name, fresh=True)
        finally:
            gc.callbacks.remove(on_collection)

    yield collections, load
    for name, previous in replaced.items():
        if previous is not None:  # the module other tests hold
            sys.modules[name] = previous
    gc.enable()  # a module that failed to load would leave it paused (Lambda discards such a process)


@pytest.mark.parametrize("name", HANDLER_MODULES)
def test_a_cold_start_runs_no_collection_and_freezes_what_it_built(name: str, cold_start: Any) -> None:
    # Given the collector on and nothing frozen
    collections, load = cold_start
    gc.unfreeze()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    # When the function's module loads, as at a cold start
    load(name)
    # Then no collection ran while it loaded, what it built is frozen, and the collector is back on
    assert collections == []
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()


def test_the_collector_would_run_during_a_load_if_it_were_not_paused(
    cold_start: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the collector on (the control for the test above: a load does allocate enough to trigger it)
    collections, load = cold_start
    # When the read function's module loads with the pause taken out of it
    monkeypatch.setattr(gc, "disable", lambda: None)
    load("singleton_flags_service.handlers.read_api")
    # Then collections ran
    assert collections != []
