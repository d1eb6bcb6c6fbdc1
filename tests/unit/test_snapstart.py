"""SnapStart: after a restore, every reader forgets what the snapshot made the restored environments share.

Lambda's runtime hooks (``snapshot_restore_py``) are stood in for by a module of the same name in ``sys.modules``
that records what is registered and runs it when the test "restores".
"""

from __future__ import annotations

import gc
import logging
import random
import sys
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from botocore.stub import Stubber

from local.functions import load_module
from singleton_flags import Flags
from singleton_flags.declarations import Declarations
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags.snapstart import RESTORE_HOOKS_MODULE, register_reset
from singleton_flags_service.vocabulary import CACHED, DEFAULT, STATIC
from tests.support.unit import CallCount, Clock, ReadCounter, build_reader

READ_HANDLER = "singleton_flags_service.handlers.read_api"


class RestoreHooks(ModuleType):
    """A stand-in for Lambda's ``snapshot_restore_py``: records after-restore hooks, runs them on ``restore()``."""

    def __init__(self) -> None:
        super().__init__(RESTORE_HOOKS_MODULE)
        self.after_restore: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []

    def register_after_restore(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
        self.after_restore.append((func, args, kwargs))
        return func

    def restore(self) -> None:
        """What the runtime does after resuming an environment from the snapshot: each hook, in registration order."""
        for func, args, kwargs in self.after_restore:
            func(*args, **kwargs)


@pytest.fixture
def hooks(monkeypatch: pytest.MonkeyPatch) -> RestoreHooks:
    """Given a runtime that offers SnapStart's restore hooks."""
    registry = RestoreHooks()
    monkeypatch.setitem(sys.modules, RESTORE_HOOKS_MODULE, registry)
    return registry


def test_after_a_restore_the_clients_next_read_is_a_fresh_get_item(
    hooks: RestoreHooks,
    ddb: Any,
    table_name: str,
    declarations: Declarations,
    put_flags: Any,
    get_item_calls: CallCount,
) -> None:
    # Given an embedded client created at init, which read the item once (its cache holds it)
    put_flags(version=3)
    flags = Flags(table_name=table_name, declarations=declarations, client=ddb)
    assert flags.details("signup_enabled").reason == STATIC
    assert flags.details("signup_enabled").reason == CACHED
    assert get_item_calls.calls == 1
    # And a newer version written since the snapshot was taken
    put_flags(version=4)
    # When Lambda resumes an environment from the snapshot
    hooks.restore()
    # Then the hook itself called nothing
    assert get_item_calls.calls == 1
    # And the next read fetches the item again, and serves the newer version
    details = flags.details("signup_enabled")
    assert (details.reason, details.version) == (STATIC, 4)
    assert get_item_calls.calls == 2


def test_after_a_restore_the_back_off_is_forgotten(
    hooks: RestoreHooks, ddb: Any, provider: SingletonProvider, declarations: Declarations, clock: Clock, put_flags: Any
) -> None:
    # Given a reader backing off after a failed fetch (its next call is at least 1 s away)
    put_flags(version=2)
    reader = build_reader(provider, declarations, clock)
    with Stubber(ddb) as stubber:
        stubber.add_client_error("get_item", service_error_code="ThrottlingException", http_status_code=400)
        assert reader.read().reason == DEFAULT
    assert reader.read().reason == DEFAULT  # still backing off: no call
    # When the environment is restored from a snapshot taken in that state
    hooks.restore()
    # Then the next read calls DynamoDB at once
    fetches = provider.fetches
    state = reader.read()
    assert (state.reason, state.version) == (STATIC, 2)
    assert provider.fetches == fetches + 1


def test_after_a_restore_the_jitter_generator_is_reseeded(
    hooks: RestoreHooks, provider: SingletonProvider, declarations: Declarations
) -> None:
    # Given a reader with its own generator, and a twin of that generator's state (what every environment restored
    # from the same snapshot would hold)
    reader = FlagReader(provider, declarations)
    twin = random.Random()  # noqa: S311 - a copy of the reader's jitter generator
    twin.setstate(reader._random.getstate())
    # When the environment is restored
    hooks.restore()
    # Then the reader draws another sequence than the snapshot's
    assert [reader._jitter() for _ in range(8)] != [twin.random() for _ in range(8)]


def test_after_a_restore_the_first_read_publishes_what_this_environment_serves(
    hooks: RestoreHooks, provider: SingletonProvider, declarations: Declarations, clock: Clock, put_flags: Any
) -> None:
    # Given a reader that published ServedVersion at init, just before the snapshot (its next is an interval away)
    printed: list[tuple[str, int, dict[str, int]]] = []
    counter = ReadCounter(
        clock=clock, served=lambda reason, version, reads: printed.append((reason, version, {**reads}))
    )
    put_flags(version=2)
    reader = build_reader(provider, declarations, clock, counter=counter)
    counter.flag_reads["signup_enabled"] += 1
    assert reader.read().version == 2
    assert printed == [("STATIC", 2, {"signup_enabled": 1})]
    counter.flag_reads["signup_enabled"] += 1  # a read counted by the environment that takes the snapshot
    # When an environment is restored from it, and reads a newer version at once
    put_flags(version=3)
    hooks.restore()
    assert reader.read().version == 3
    # Then it publishes what it serves with that first read, without the snapshot's counts
    assert printed[1:] == [("STATIC", 3, {})]


def test_a_hook_that_fails_is_logged_and_never_raises(
    hooks: RestoreHooks,
    provider: SingletonProvider,
    declarations: Declarations,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a reader whose provider cannot clear its cache
    reader = FlagReader(provider, declarations)

    def broken() -> None:
        raise RuntimeError("cache broken")

    monkeypatch.setattr(provider, "clear_cache", broken)
    # When the environment is restored
    with caplog.at_level(logging.ERROR, logger="singleton_flags.snapstart"):
        hooks.restore()
    # Then the restore goes on, and the log says what failed
    assert [record.getMessage() for record in caplog.records] == [
        "resetting a flags reader after a SnapStart restore failed"
    ]
    assert reader is not None


def test_a_hook_does_not_keep_its_reader_alive(
    hooks: RestoreHooks, provider: SingletonProvider, declarations: Declarations
) -> None:
    # Given a reader registered, then dropped (a client created by a test, say)
    reader = FlagReader(provider, declarations)
    assert len(hooks.after_restore) == 1
    held = weakref.ref(reader)
    del reader
    gc.collect()
    # Then the registry did not keep it alive
    assert held() is None
    # And a restore skips its hook, raising nothing
    hooks.restore()


def test_without_restore_hooks_nothing_is_registered(monkeypatch: pytest.MonkeyPatch, provider: Any) -> None:
    # Given a runtime without SnapStart's hooks (outside Lambda): the import fails
    monkeypatch.setitem(sys.modules, RESTORE_HOOKS_MODULE, None)
    # When a reader asks to be reset after restores / Then nothing is registered
    assert register_reset(provider) is False


def test_the_read_function_registers_its_reader_and_reads_afresh_after_a_restore(
    hooks: RestoreHooks,
    ddb: Any,
    put_flags: Any,
    make_event: Callable[..., dict[str, Any]],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the read function's cold start on a runtime with restore hooks, and one GET served since
    put_flags(version=5)
    monkeypatch.delitem(sys.modules, READ_HANDLER, raising=False)  # put back what other tests hold, afterwards
    module = load_module(READ_HANDLER, fresh=True)
    assert hooks.after_restore, "the read function registered no after-restore hook"
    module.handler(make_event("GET", "/flags"), lambda_context)
    fetches = module.PROVIDER.fetches
    # And a newer version written since
    put_flags(version=6)
    # When Lambda resumes an environment from the snapshot
    hooks.restore()
    # Then the next GET fetches the item again and serves the newer version
    response = module.handler(make_event("GET", "/flags"), lambda_context)
    assert response["statusCode"] == 200
    assert '"version":6' in response["body"] and '"reason":"STATIC"' in response["body"]
    assert module.PROVIDER.fetches == fetches + 1
