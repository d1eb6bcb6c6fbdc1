"""The runner's DynamoDB: embedded in memory (moto), or the one ``AWS_ENDPOINT_URL_DYNAMODB`` names.

Embedded: moto's ``mock_aws`` in this process. moto's HTTP server mode (``ThreadedMotoServer``) needs Flask
(``moto[server]``), which the project does not install; in process, every boto3 client the functions create
is answered by moto at botocore's ``before-send`` hook: botocore still serialises each request and parses
each answer as it would over the wire, only the socket is skipped. moto's conditional writes are not atomic
under concurrency, so the runner serialises invocations (``local.functions``).

Either way the table is created if absent (as the stack creates it: PK/SK strings, on demand, TTL on
``expires_at``, a NEW_IMAGE stream; an existing table without a stream gets one, for ``GET /_events``) and
seeded with ``FlagStore.seed``, the code the stack's seed runs on every deploy that changes the declarations
(newly declared flags become a version of kind ``seed``; no live value changes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

from flagctl.client import is_loopback
from local.dynamodb_local import create_table
from singleton_flags.declarations import Declarations
from singleton_flags_service.errors import FlagsError
from singleton_flags_service.writes.store import FlagStore

ENDPOINT_ENV = "AWS_ENDPOINT_URL_DYNAMODB"
# A dead endpoint must fail the start within seconds, not after botocore's default 60 s and retries.
PROBE_CONFIG = Config(connect_timeout=1.0, read_timeout=3.0, retries={"total_max_attempts": 1, "mode": "standard"})
_UNREACHABLE = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)


class BackendError(RuntimeError):
    """DynamoDB cannot be used; the message is the one line the runner prints."""


class EmbeddedDynamoDB:
    """moto in this process, for as long as the runner lives."""

    label = "embedded in-memory DynamoDB (moto)"

    def __init__(self) -> None:
        from moto import mock_aws

        self._mock = mock_aws()

    def start(self) -> None:
        self._mock.start()

    def stop(self) -> None:
        self._mock.stop()


class ExternalDynamoDB:
    """The DynamoDB the user named; nothing to start or stop."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.label = f"DynamoDB at {endpoint}"

    def start(self) -> None:
        if is_loopback(self.endpoint) and boto3.Session().get_credentials() is None:
            # DynamoDB Local accepts any credentials but botocore will not sign without some.
            os.environ.setdefault("AWS_ACCESS_KEY_ID", "local")
            os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local")

    def stop(self) -> None:
        pass


def choose_backend(env: dict[str, str] | os._Environ[str]) -> EmbeddedDynamoDB | ExternalDynamoDB:
    endpoint = env.get(ENDPOINT_ENV, "").strip()
    return ExternalDynamoDB(endpoint) if endpoint else EmbeddedDynamoDB()


@contextmanager
def _translated(label: str, operation: str) -> Iterator[None]:
    """botocore's failures of ``operation`` -> one BackendError line."""
    try:
        yield
    except _UNREACHABLE as exc:
        raise BackendError(
            f"cannot reach {label} ({type(exc).__name__}); start it, or unset {ENDPOINT_ENV} for the embedded one"
        ) from exc
    except NoCredentialsError as exc:
        raise BackendError(f"no AWS credentials to call {label}: set a profile or AWS_ACCESS_KEY_ID") from exc
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise BackendError(f"{label} refused {operation}: {error.get('Code')}: {error.get('Message')}") from exc
    except BotoCoreError as exc:
        raise BackendError(f"{label} failed on {operation}: {exc}") from exc


def _describe(client: Any, table_name: str) -> dict[str, Any] | None:
    try:
        table: dict[str, Any] = client.describe_table(TableName=table_name)["Table"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise
    return table


def _enable_stream(client: Any, table_name: str) -> None:
    """A table made before change events (no stream): its stream is turned on, as the stack's table has it."""
    from singleton_flags_infra.table import table_definition

    spec = table_definition().create_table_params(table_name)["StreamSpecification"]
    client.update_table(TableName=table_name, StreamSpecification=spec)


def prepare_table(table_name: str, sort_key: str, declarations: Declarations, label: str) -> bool:
    """Create the table if absent, then seed it; True when it was created."""
    try:
        client = boto3.client("dynamodb", config=PROBE_CONFIG)
    except ValueError as exc:  # e.g. an endpoint URL botocore cannot parse
        raise BackendError(f"cannot use {label}: {exc}") from exc
    with _translated(label, "DescribeTable"):
        table = _describe(client, table_name)
    exists = table is not None
    if table is None:
        with _translated(label, "CreateTable"):
            create_table(client, table_name)
    elif not table.get("StreamSpecification", {}).get("StreamEnabled"):
        with _translated(label, "UpdateTable (its stream, for GET /_events)"):
            _enable_stream(client, table_name)
    store = FlagStore(client, table_name, declarations, sort_key=sort_key)
    with _translated(label, "the seed"):
        try:
            store.seed(actor="local-runner", reason="local runner start: declared flags seeded")
        except FlagsError as exc:  # botocore's own failure, for one clear line
            if isinstance(exc.__cause__, (ClientError, BotoCoreError)):
                raise exc.__cause__ from exc
            raise BackendError(f"{label} refused the seed: {exc.message}") from exc
    return not exists
