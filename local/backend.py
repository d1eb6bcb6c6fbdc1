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

Handlers in other processes read the same table through the runner (``TableReads``): the runner's own loopback
port answers DynamoDB's wire protocol at ``/_dynamodb`` for ``GetItem`` on the flags item, exactly what the
deployed read grant allows (anything else is ``AccessDeniedException``), whichever backend holds the table. A
handler points botocore at it (``AWS_ENDPOINT_URL_DYNAMODB``) with the runner's fake credentials
(``HANDLER_CREDENTIALS``): the runner checks no signature, and never hands out the operator's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
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
    ParamValidationError,
    ReadTimeoutError,
)

from flagctl.client import is_loopback
from local.dynamodb_local import create_table
from singleton_flags.declarations import Declarations
from singleton_flags.keys import PARTITION_KEY, SINGLETON_PK, SINGLETON_SK
from singleton_flags_service.errors import FlagsError
from singleton_flags_service.stores import seed_stage, service_store

ENDPOINT_ENV = "AWS_ENDPOINT_URL_DYNAMODB"
# A dead endpoint must fail the start within seconds, not after botocore's default 60 s and retries.
PROBE_CONFIG = Config(connect_timeout=1.0, read_timeout=3.0, retries={"total_max_attempts": 1, "mode": "standard"})
_UNREACHABLE = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)


DYNAMODB_PATH = "/_dynamodb"
GET_ITEM_TARGET = "DynamoDB_20120810.GetItem"
# What a handler signs its reads with: fixed, fake, printed in the banner (the runner verifies no signature).
HANDLER_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
_AMZ_JSON = "application/x-amz-json-1.0"
_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"


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
    store = service_store(client, table_name, declarations, sort_key=sort_key)
    with _translated(label, "the seed"):
        try:
            seed_stage(store, actor="local-runner", reason="local runner start: declared flags seeded")
        except FlagsError as exc:  # botocore's own failure, for one clear line
            if isinstance(exc.__cause__, (ClientError, BotoCoreError)):
                raise exc.__cause__ from exc
            raise BackendError(f"{label} refused the seed: {exc.message}") from exc
    return not exists


class TableReads:
    """DynamoDB's ``GetItem`` on the flags item, for handlers in other processes, answered from the runner's table.

    A request is a DynamoDB JSON 1.0 call (``X-Amz-Target``, the body botocore sends); the answer is DynamoDB's own
    (the item, or ``{__type, message}`` with 400). Only ``GetItem`` on ``table_name`` with the flags' partition key
    is answered: the deployed read grant (``dynamodb:GetItem``, ``dynamodb:LeadingKeys`` = the flags' partition).
    """

    def __init__(self, table_name: str) -> None:
        self.table_name = table_name
        self._client: Any = None

    def answer(self, headers: Sequence[tuple[str, str]], body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        target = next((value for name, value in headers if name.lower() == "x-amz-target"), "")
        try:
            params = json.loads(body or b"{}")
        except (ValueError, RecursionError):
            return _dynamodb_error("SerializationException", "the body is not JSON")
        if not isinstance(params, dict):
            return _dynamodb_error("SerializationException", "the body is not a JSON object")
        key = params.get("Key")
        partition = key.get(PARTITION_KEY) if isinstance(key, dict) else None
        if target != GET_ITEM_TARGET or params.get("TableName") != self.table_name or partition != {"S": SINGLETON_PK}:
            return _dynamodb_error(
                "AccessDeniedException",
                f"the local runner answers GetItem on table {self.table_name} for the flags' partition "
                f"({PARTITION_KEY}={SINGLETON_PK}) only, as the deployed read grant allows",
            )
        if self._client is None:
            self._client = boto3.client("dynamodb", config=PROBE_CONFIG)
        try:
            result = self._client.get_item(**params)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            return _dynamodb_error(str(error.get("Code", "InternalServerError")), str(error.get("Message", "")))
        except (BotoCoreError, ParamValidationError) as exc:
            return _dynamodb_error("ValidationException", str(exc))
        result.pop("ResponseMetadata", None)
        return 200, [("Content-Type", _AMZ_JSON)], json.dumps(result, default=str).encode("utf-8")


def _dynamodb_error(code: str, message: str) -> tuple[int, list[tuple[str, str]], bytes]:
    body = json.dumps({"__type": _ERROR_PREFIX + code, "message": message}).encode("utf-8")
    return 400, [("Content-Type", _AMZ_JSON), ("x-amzn-ErrorType", code)], body


def handler_environment(url: str, table_name: str, region: str, sort_key: str) -> dict[str, str]:
    """What a handler in another process needs to read the runner's flags through the embedded client."""
    env = {
        "SINGLETON_FLAGS_TABLE": table_name,
        "AWS_ENDPOINT_URL_DYNAMODB": url + DYNAMODB_PATH,
        "AWS_REGION": region,
        **HANDLER_CREDENTIALS,
    }
    if sort_key != SINGLETON_SK:
        env["SINGLETON_FLAGS_SORT_KEY"] = sort_key
    return env
