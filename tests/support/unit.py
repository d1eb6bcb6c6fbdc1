"""Plain helpers of the unit tier (fixtures live in conftest.py; tests import these by name)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import ModuleType
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from singleton_flags.codec import encode
from singleton_flags.declarations import Declarations
from singleton_flags.keys import SINGLETON_SK, VERSION_ATTR, singleton_key
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.observability import ReadCounter
from singleton_flags_service.stores import service_store
from singleton_flags_service.writes.store import FlagStore
from tests.support.tables import table_state

START = 1_700_000_000.0  # a fixed epoch second; every fake clock starts here


@dataclass
class Clock:
    """A settable epoch clock, injected wherever the code takes ``clock=``."""

    now: float = START

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def flags_item(declarations: Declarations, version: int = 1, **values: Any) -> dict[str, Any]:
    """The singleton in low-level form: every declared flag at its initial value unless overridden.

    A flag given a dict is stored as that raw attribute (to plant a wrong type); None leaves it out.
    Other keyword arguments are bookkeeping attributes, already in low-level form.
    """
    item: dict[str, Any] = {**singleton_key(SINGLETON_SK), VERSION_ATTR: {"N": str(version)}}
    for name, spec in declarations.items():
        value = values.pop(name, spec.initial)
        if value is not None:
            item[name] = value if isinstance(value, dict) else encode(spec, value)
    item.update(values)
    return item


@dataclass
class CallCount:
    """Calls of one DynamoDB operation made on a client, whoever answers them (moto, a Stubber, a server).

    Counted at ``before-parameter-build``: a Stubber answers ``before-call`` with a handler registered first,
    so a ``before-call`` hook never sees stubbed calls.
    """

    calls: int = 0

    def __call__(self, **_: Any) -> None:
        self.calls += 1


def count_calls(client: Any, operation: str = "GetItem") -> CallCount:
    counter = CallCount()
    client.meta.events.register(f"before-parameter-build.dynamodb.{operation}", counter)
    return counter


def build_reader(provider: SingletonProvider, declarations: Declarations, clock: Clock, **options: Any) -> FlagReader:
    """A reader on the fake clock, without jitter (a back-off delay is exactly base * 2**(failures-1))."""
    options.setdefault("counter", ReadCounter(clock=clock))
    return FlagReader(provider, declarations, clock=clock, jitter=lambda: 1.0, **options)


def expire(provider: SingletonProvider) -> None:
    """Age every cached entry past its max age (Powertools compares an entry's ttl with datetime.now())."""
    for key, entry in list(provider.store.items()):
        provider.store[key] = entry._replace(ttl=datetime.now() - timedelta(seconds=1))


class Output:
    """What the function printed to stdout (Logger lines and EMF blobs), as text or parsed JSON lines."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys

    def text(self) -> str:
        return self._capsys.readouterr().out

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text().splitlines() if line.strip()]


def emf_metrics(records: list[dict[str, Any]]) -> list[tuple[str, float, dict[str, str]]]:
    """(name, value, dimensions) of every metric in the EMF blobs among ``records``."""
    found = []
    for record in records:
        for directive in record.get("_aws", {}).get("CloudWatchMetrics", []):
            names = [name for group in directive["Dimensions"] for name in group]
            dimensions = {name: record[name] for name in names}
            for metric in directive["Metrics"]:
                value = record[metric["Name"]]
                found.append((metric["Name"], sum(value) if isinstance(value, list) else value, dimensions))
    return found


def warnings_in(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [record for record in records if record.get("level") == "WARNING"]


def body_of(response: dict[str, Any]) -> Any:
    return json.loads(response["body"])


def headers_of(response: dict[str, Any]) -> dict[str, str]:
    """A proxy response's headers, whether the resolver answered with ``headers`` or ``multiValueHeaders``."""
    headers = dict(response.get("headers") or {})
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers[name] = ", ".join(values)
    return headers


@dataclass
class ReadApi:
    """The real read function, with a fresh provider and reader on the moto table and a fake clock."""

    module: ModuleType
    provider: SingletonProvider
    reader: FlagReader
    clock: Clock
    make_event: Callable[..., dict[str, Any]]
    context: Any

    def __call__(self, method: str, path: str, **event_options: Any) -> dict[str, Any]:
        return self.module.handler(self.make_event(method, path, **event_options), self.context)

    def get(self, path: str = "/flags", **event_options: Any) -> dict[str, Any]:
        return self("GET", path, **event_options)


class FailingClient:
    """A client whose every call of ``operation`` fails with ``code``."""

    def __init__(self, real: Any, operation: str, code: str, reasons: list[dict[str, str]] | None = None) -> None:
        self._real, self._operation, self._code, self._reasons = real, operation, code, reasons
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        if name != self._operation:
            return getattr(self._real, name)

        def fail(**_: Any) -> None:
            self.calls += 1
            error: dict[str, Any] = {"Error": {"Code": self._code, "Message": "injected"}}
            if self._reasons is not None:
                error["CancellationReasons"] = self._reasons
            raise ClientError(error, self._operation)

        return fail


# -- the write function over moto -------------------------------------------------------------------------

CALLER = "arn:aws:iam::123456789012:user/alice"
REASON = "unit test"
RETENTION_SECONDS = 365 * 86400  # Settings' default audit retention


@dataclass
class WriteApi:
    """The real write function with a store and reader on the moto table (no back-off sleeps)."""

    module: ModuleType
    client: Any
    table: str
    make_event: Callable[..., dict[str, Any]]
    context: Any

    def __call__(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        query: dict[str, str] | None = None,
        caller_arn: str = CALLER,
    ) -> dict[str, Any]:
        event = self.make_event(method, path, body=body, headers=headers, query=query, caller_arn=caller_arn)
        return self.module.handler(event, self.context)

    def patch(self, flags: Any, reason: Any = REASON, **options: Any) -> dict[str, Any]:
        return self("PATCH", "/flags", body={"flags": flags, "reason": reason}, **options)

    def revert(self, version: Any, reason: Any = REASON, **options: Any) -> dict[str, Any]:
        return self("POST", "/flags/revert", body={"version": version, "reason": reason}, **options)

    def history(self, **query: str) -> dict[str, Any]:
        return self("GET", "/flags/history", query=query)

    def state(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        return table_state(self.client, self.table)

    def use_store(self, monkeypatch: pytest.MonkeyPatch, client: Any, **options: Any) -> FlagStore:
        options.setdefault("sleep", lambda _: None)
        store = service_store(client, self.table, self.module.DECLARATIONS, **options)
        monkeypatch.setattr(self.module, "STORE", store)
        return store


def install(module: ModuleType, client: Any, table: str, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = module.SETTINGS
    store = service_store(
        client,
        table,
        module.DECLARATIONS,
        sort_key=settings.item_sort_key,
        audit_retention_days=settings.audit_retention_days,
        clock=clock,
        sleep=lambda _: None,
        on_retry=module.STORE._on_retry,
        on_commit=module.STORE._on_commit,
    )
    provider = SingletonProvider(client=client, table_name=table, declarations=module.DECLARATIONS, clock=clock)
    reader = FlagReader(provider, module.DECLARATIONS, sort_key=settings.item_sort_key, clock=clock)
    monkeypatch.setattr(module, "STORE", store)
    monkeypatch.setattr(module, "READER", reader)
    if hasattr(module, "CHANGE_REQUESTS"):  # the write function's change requests, on the same store and clock
        monkeypatch.setattr(module, "CHANGE_REQUESTS", ChangeRequests(client, table, store, clock=clock))


def assert_refused(
    api: WriteApi,
    response: dict[str, Any],
    before: tuple[Any, Any],
    status: int,
    code: str,
    *,
    flag: str | None = None,
    rule: str | None = None,
) -> dict[str, Any]:
    error = body_of(response)["error"]
    assert (response["statusCode"], error["code"]) == (status, code), error
    assert error["message"]
    if flag is not None:
        assert error["flag"] == flag
    if rule is not None:
        assert error["rule"] == rule
    assert api.state() == before, "a refused request changed the item or the audit trail"
    return error


class LossyClient:
    """A DynamoDB client whose TransactWriteItems answers are lost ``lose`` times (after committing, or before,
    with ``commit=False``); every other call goes to the real client."""

    def __init__(self, real: Any, *, lose: int, commit: bool = True, lose_reads_of: str | None = None) -> None:
        self._real = real
        self._lose = lose
        self._commit = commit
        self._lose_reads_of = lose_reads_of
        self.tokens: list[str] = []
        self._committed: set[str] = set()

    def transact_write_items(self, **params: Any) -> Any:
        token = params["ClientRequestToken"]
        self.tokens.append(token)
        if token in self._committed:
            answer: Any = {}  # DynamoDB: the same token again succeeds and applies nothing
        elif self._commit or self._lose == 0:
            answer = self._real.transact_write_items(**params)
            self._committed.add(token)
        if self._lose > 0:
            self._lose -= 1
            raise ReadTimeoutError(endpoint_url="https://dynamodb.local")
        return answer

    def get_item(self, **params: Any) -> Any:
        if self._lose_reads_of and params["Key"]["PK"]["S"].startswith(self._lose_reads_of):
            raise ReadTimeoutError(endpoint_url="https://dynamodb.local")
        return self._real.get_item(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)
