"""Integration tier: AWS's DynamoDB Local, started once per session on a free loopback port, stopped after.

Missing jar or Java: the tier FAILS when ``CI`` is set (CI must never skip it) and is skipped, with the
reason, otherwise. Every test here is marked ``integration``; each gets a fresh table, seeded exactly as
the stack seeds it, and ``AWS_ENDPOINT_URL_DYNAMODB`` pointing at DynamoDB Local for clients built with
botocore's default endpoint resolution.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bench.workload import seed_table
from local.dynamodb_local import create_table, local_client
from local.functions import load_module
from singleton_flags.aws import WRITE_CLIENT_CONFIG, dynamodb_client
from singleton_flags.declarations import Declarations
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.writes.store import FlagStore

_HERE = Path(__file__).parent
_TABLES = itertools.count(1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def local_endpoint(dynamodb_local_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """DynamoDB Local for this test, also for clients that use botocore's default endpoint resolution."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_local_endpoint)
    return dynamodb_local_endpoint


@pytest.fixture
def client_factory(local_endpoint: str) -> Callable[[], Any]:
    """A new low-level client on DynamoDB Local per call (one per writer thread)."""
    return lambda: local_client(local_endpoint, timeout=10)


@pytest.fixture
def ddb_local(client_factory: Callable[[], Any]) -> Any:
    return client_factory()


@pytest.fixture
def flags_table(ddb_local: Any, declarations: Declarations) -> Iterator[str]:
    """A fresh table (as the stack creates it) holding the seeded singleton at version 0."""
    name = f"flags-it-{os.getpid()}-{next(_TABLES)}"
    create_table(ddb_local, name)
    seed_table(ddb_local, name, declarations)
    yield name
    ddb_local.delete_table(TableName=name)


@pytest.fixture
def write_function(local_endpoint: str, flags_table: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The write handler module over the seeded table, its store (retrying without sleeping) and reader on a
    client resolved from the environment, as the deployed function builds it."""
    module = load_module("singleton_flags_service.handlers.write_api")

    client = dynamodb_client(WRITE_CLIENT_CONFIG)
    assert client.meta.endpoint_url == local_endpoint
    monkeypatch.setattr(module, "STORE", FlagStore(client, flags_table, module.DECLARATIONS, sleep=lambda _: None))
    monkeypatch.setattr(module, "CHANGE_REQUESTS", ChangeRequests(client, flags_table, module.STORE))
    provider = SingletonProvider(client=client, table_name=flags_table, declarations=module.DECLARATIONS)
    monkeypatch.setattr(module, "READER", FlagReader(provider, module.DECLARATIONS))
    return module
