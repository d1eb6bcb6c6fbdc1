"""Shared test fixtures: fake AWS credentials, API Gateway REST proxy events, a Lambda context, a moto table.

Kept minimal on purpose: each tier adds what it needs in its own conftest.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

TABLE_NAME = "singleton-flags-test"
REGION = "us-east-1"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a real AWS account: fake credentials, a fixed region, the table's name."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "TABLE_NAME": TABLE_NAME,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def rest_event(
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    multi_value_headers: dict[str, list[str]] | None = None,
    body: Any = None,
    resource: str | None = None,
    path_parameters: dict[str, str] | None = None,
    caller_arn: str = "arn:aws:iam::123456789012:user/tester",
) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event as Lambda receives it for an AWS_IAM-authorised method."""
    headers = dict(headers or {})
    if multi_value_headers is None:
        multi_value_headers = {name: [value] for name, value in headers.items()}
    if body is not None and not isinstance(body, str):
        body = json.dumps(body)
    return {
        "resource": resource or path,
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": multi_value_headers,
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": path_parameters,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": resource or path,
            "httpMethod": method,
            "path": f"/prod{path}",
            "stage": "prod",
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "accountId": "123456789012",
            "apiId": "abcdef1234",
            "identity": {"userArn": caller_arn, "caller": "AIDAEXAMPLE", "sourceIp": "192.0.2.1"},
        },
        "body": body,
        "isBase64Encoded": False,
    }


@dataclass(frozen=True)
class FakeLambdaContext:
    function_name: str = "singleton-flags-test"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:singleton-flags-test"
    aws_request_id: str = "52fdfc07-2182-154f-163f-5f0f9a621d72"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.fixture
def make_event() -> Callable[..., dict[str, Any]]:
    return rest_event


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@functools.cache
def _session() -> Any:
    """One boto3 session for the run: moto resets boto3's default one on every start, and loading the
    service model again costs ~0.3 s per test."""
    import boto3

    return boto3.session.Session()


@pytest.fixture
def table_name() -> str:
    return TABLE_NAME


@pytest.fixture
def ddb(aws_env: None) -> Iterator[Any]:
    """A low-level DynamoDB client on moto, with the flags table (PK/SK strings, on demand) created."""
    from moto import mock_aws

    with mock_aws():
        client = _session().client("dynamodb", region_name=REGION)
        client.create_table(
            TableName=TABLE_NAME,
            AttributeDefinitions=[
                {"AttributeName": "PK", "AttributeType": "S"},
                {"AttributeName": "SK", "AttributeType": "S"},
            ],
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def ci_is_set() -> bool:
    """CI (``.ci/run`` sets CI=true) must run every tier: what would be skipped elsewhere fails there."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def dynamodb_local_endpoint() -> Iterator[str]:
    """Endpoint URL of the session's one DynamoDB Local (AWS's jar, in memory, gone when the session ends).

    Without the jar or Java: skipped with the reason, except under CI, where it fails.
    """
    from local.dynamodb_local import DynamoDBLocalUnavailable, find_jar, find_java, running_dynamodb_local

    try:
        find_jar()
        find_java()
    except DynamoDBLocalUnavailable as exc:
        if ci_is_set():
            pytest.fail(f"CI must run the DynamoDB Local tests, but: {exc}", pytrace=False)
        pytest.skip(f"DynamoDB Local unavailable ({exc}); CI fails here instead of skipping")
    with running_dynamodb_local() as endpoint:
        yield endpoint
