"""The custom resource that gives API Gateway its account-level CloudWatch Logs role: only where none is set."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local.functions import load_module

MODULE = "singleton_flags_service.handlers.apigw_account"
OURS = "arn:aws:iam::123456789012:role/singleton-flags-prod-ApiGatewayLogsRole"
THEIRS = "arn:aws:iam::123456789012:role/platform-team-apigateway-logs"


class FakeApiGateway:
    def __init__(self, current: str | None, refusals: int = 0) -> None:
        self.current = current
        self.refusals = refusals
        self.updates: list[list[dict[str, str]]] = []

    def get_account(self) -> dict[str, Any]:
        return {"cloudwatchRoleArn": self.current} if self.current else {"throttleSettings": {}}

    def update_account(self, patchOperations: list[dict[str, str]]) -> dict[str, Any]:  # noqa: N803 - boto3's name
        self.updates.append(patchOperations)
        if self.refusals:
            self.refusals -= 1
            raise ClientError(
                {
                    "Error": {
                        "Code": "BadRequestException",
                        "Message": "The role ARN does not have required permissions set to API Gateway",
                    }
                },
                "UpdateAccount",
            )
        self.current = patchOperations[0]["value"]
        return {"cloudwatchRoleArn": self.current}


def event(request_type: str) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://example.invalid/signed",
        "StackId": "arn:aws:cloudformation:eu-west-1:123456789012:stack/singleton-flags-prod/x",
        "RequestId": "r-1",
        "LogicalResourceId": "ApiAccountLoggingRole",
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:...", "RoleArn": OURS},
    }


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    previous = sys.modules.pop(MODULE, None)
    module = load_module(MODULE, fresh=True)
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(module, "send_response", lambda url, body: sent.append(body))
    monkeypatch.setattr(module, "sleep", lambda seconds: None)

    def deliver(request_type: str, client: FakeApiGateway) -> dict[str, Any]:
        monkeypatch.setattr(module, "CLIENT", client)
        module.handler(event(request_type), SimpleNamespace(log_stream_name="s"))
        return sent[-1]

    yield deliver
    sys.modules.pop(MODULE, None)
    if previous is not None:
        sys.modules[MODULE] = previous


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_sets_our_role_where_the_account_has_none(account: Any, request_type: str) -> None:
    client = FakeApiGateway(current=None)
    body = account(request_type, client)
    assert client.updates == [[{"op": "replace", "path": "/cloudwatchRoleArn", "value": OURS}]]
    assert body["Status"] == "SUCCESS"
    assert body["Data"] == {"RoleArn": OURS, "Applied": "true"}


def test_never_overwrites_a_role_someone_else_set(account: Any) -> None:
    # Given another stage, or another team, set the account's role first
    client = FakeApiGateway(current=THEIRS)
    body = account("Create", client)
    # Then it is left as it is, and the deploy goes on (the stage can log: a role is set)
    assert client.updates == []
    assert body["Status"] == "SUCCESS"
    assert body["Data"] == {"RoleArn": THEIRS, "Applied": "false"}


def test_a_new_role_not_yet_visible_to_api_gateway_is_retried(account: Any) -> None:
    client = FakeApiGateway(current=None, refusals=2)
    body = account("Create", client)
    assert len(client.updates) == 3
    assert body["Status"] == "SUCCESS"


def test_a_role_api_gateway_keeps_refusing_fails_the_deploy_with_the_reason(account: Any) -> None:
    client = FakeApiGateway(current=None, refusals=1000)
    body = account("Create", client)
    assert body["Status"] == "FAILED"
    assert "required permissions" in body["Reason"]


def test_delete_leaves_the_account_setting_alone(account: Any) -> None:
    client = FakeApiGateway(current=OURS)
    body = account("Delete", client)
    assert client.updates == [] and client.current == OURS
    assert body["Status"] == "SUCCESS"
