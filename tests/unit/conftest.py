"""Unit tier: moto in-process, no network, no cache shared between tests.

moto intercepts at botocore's ``before-send`` hook, so no test here needs a socket: the autouse guard makes
opening one fail (and fails the test even when the code under test swallowed the error).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aws_lambda_powertools.utilities import parameters

from local.functions import load_module
from singleton_flags.declarations import Declarations
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags_service.observability import ReadCounter, logger
from singleton_flags_service.writes.store import FlagStore
from tests.conftest import REGION
from tests.support.maintenance import DURATIONS, MaintenanceFunction, deploy_windows, fresh_module
from tests.support.moto_tables import WORKER_TABLES
from tests.support.unit import (
    CallCount,
    Clock,
    Output,
    ReadApi,
    WriteApi,
    build_reader,
    count_calls,
    flags_item,
    install,
)


class SocketBlocked(RuntimeError):
    """A unit test tried to open a network socket."""


@pytest.fixture(autouse=True)
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Opening an INET socket raises, and the attempt fails the test at teardown even if it was swallowed."""
    attempts: list[int] = []
    real_init = socket.socket.__init__

    def guarded_init(self: socket.socket, family: int = -1, type: int = -1, proto: int = -1, fileno: Any = None):  # noqa: A002 - socket.socket's own parameter names
        # UDP is allowed: the X-Ray SDK (imported by Tracer on the write path) makes its emitter's UDP socket at
        # import; creating one sends nothing, and a TCP connection is what a real network call needs.
        is_udp = type != -1 and type & 0xF == socket.SOCK_DGRAM
        if fileno is None and family in (-1, socket.AF_INET, socket.AF_INET6) and not is_udp:
            attempts.append(family)
            raise SocketBlocked("unit tests cannot open network sockets (use moto or a Stubber)")
        real_init(self, family, type, proto, fileno)

    monkeypatch.setattr(socket.socket, "__init__", guarded_init)
    yield
    if attempts:
        pytest.fail(f"the test tried to open {len(attempts)} network socket(s)")


@pytest.fixture(autouse=True)
def unit_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing redirects botocore away from moto, and Powertools' cache age is its default."""
    for key in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "POWERTOOLS_PARAMETERS_MAX_AGE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))  # a test may write it: its own
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


@pytest.fixture(autouse=True)
def clear_provider_caches() -> Iterator[None]:
    """Every test starts cold: Powertools' default providers and the read handler's module provider."""
    parameters.clear_caches()
    yield
    parameters.clear_caches()
    handler_module = sys.modules.get("singleton_flags_service.handlers.read_api")
    if handler_module is not None:
        handler_module.PROVIDER.clear_cache()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def put_flags(ddb: Any, table_name: str, declarations: Declarations) -> Callable[..., dict[str, Any]]:
    """Write the singleton (see ``tests.support.unit.flags_item``) to the moto table and return it."""

    def put(version: int = 1, **values: Any) -> dict[str, Any]:
        item = flags_item(declarations, version, **values)
        ddb.put_item(TableName=table_name, Item=item)
        return item

    return put


@pytest.fixture
def get_item_calls(ddb: Any) -> CallCount:
    return count_calls(ddb)


@pytest.fixture
def provider(ddb: Any, table_name: str, declarations: Declarations, clock: Clock) -> SingletonProvider:
    return SingletonProvider(client=ddb, table_name=table_name, declarations=declarations, clock=clock)


@pytest.fixture
def reader(provider: SingletonProvider, declarations: Declarations, clock: Clock) -> FlagReader:
    return build_reader(provider, declarations, clock)


class CurrentStdout:
    """A stream that writes to whatever ``sys.stdout`` is at write time (capsys swaps it in only for the call)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


@pytest.fixture
def stdout(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Output:
    """Capture stdout, the Powertools Logger included (its handler keeps the stream it was created with)."""
    monkeypatch.setattr(logger.registered_handler, "stream", CurrentStdout())
    return Output(capsys)


@pytest.fixture
def read_api(
    ddb: Any,
    table_name: str,
    clock: Clock,
    make_event: Callable[..., dict[str, Any]],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> ReadApi:
    """The read handler module (its module scope needs TABLE_NAME and a region, set by ``aws_env``), given a
    fresh provider and reader per test so that no cache or back-off state leaks between tests."""
    module = load_module("singleton_flags_service.handlers.read_api")

    provider = SingletonProvider(client=ddb, table_name=table_name, declarations=module.DECLARATIONS, clock=clock)
    counter = ReadCounter(clock=clock)
    reader = build_reader(
        provider, module.DECLARATIONS, clock, max_stale=module.SETTINGS.max_stale_seconds, counter=counter
    )
    monkeypatch.setattr(module, "PROVIDER", provider)
    monkeypatch.setattr(module, "READER", reader)
    monkeypatch.setattr(module, "FLAG_READS", counter.flag_reads)
    return ReadApi(module, provider, reader, clock, make_event, lambda_context)


@pytest.fixture
def unseeded_api(
    ddb: Any, table_name: str, clock: Clock, make_event: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> WriteApi:
    """The write function over the empty moto table (neither the item nor any audit record), its store and
    reader on the fake clock, retrying without sleeping (retries still counted by the module's metric hook)."""
    module = load_module("singleton_flags_service.handlers.write_api")

    install(module, ddb, table_name, clock, monkeypatch)
    return WriteApi(module, ddb, table_name, make_event, lambda_context)


@pytest.fixture
def seeded_api(unseeded_api: WriteApi) -> WriteApi:
    """Given the seeded singleton (version 0, the declared initial values): the worker's first seed of these
    declarations runs for real, later tests get a copy of the table it left."""
    declarations = unseeded_api.module.DECLARATIONS
    store = FlagStore(unseeded_api.client, unseeded_api.table, declarations)
    key = ("seeded", json.dumps([declarations.as_documents(), declarations.trusted_session_roles], default=str))
    WORKER_TABLES.fill(key, REGION, unseeded_api.table, lambda: store.seed(actor="test", reason="seed"))
    return unseeded_api


@pytest.fixture
def write_api(seeded_api: WriteApi) -> ModuleType:
    """The write handler module over the seeded moto table."""
    return seeded_api.module


@pytest.fixture
def api(seeded_api: WriteApi) -> WriteApi:
    """Given the seeded singleton and one applied change (version 1, one audit record)."""
    seeded_api.module.STORE.change({"ai_search_enabled": True}, actor="setup", reason="version 1")
    return seeded_api


@pytest.fixture
def maintenance(
    ddb: Any,
    table_name: str,
    declarations: Declarations,
    clock: Clock,
    lambda_context: Any,
    put_flags: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[MaintenanceFunction]:
    """The maintenance function (module imported fresh, its deployment document declaring the windows) over the
    seeded moto table, its service on the fake clock."""
    deploy_windows(monkeypatch, tmp_path, DURATIONS)
    with fresh_module() as module:
        put_flags(version=1)  # the seeded singleton: maintenance off, no owner
        function = MaintenanceFunction(
            module,
            ddb,
            table_name,
            declarations,
            clock,
            lambda_context,
            monkeypatch,
            configured=module.MAINTENANCE.windows,
        )
        function.use_client(ddb)
        yield function
