"""The seed custom resource's function: Create and Update call ``FlagStore.seed``, Delete does nothing, and
CloudFormation always gets an answer (SUCCESS, or FAILED with the reason) at the pre-signed URL."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from local.functions import load_module

MODULE = "singleton_flags_service.handlers.seed"
STACK_ID = (
    "arn:aws:cloudformation:eu-west-1:123456789012:stack/singleton-flags-prod/5b8f1e30-0000-0000-0000-000000000000"
)


@dataclass
class FakeStore:
    """Stands in for singleton_flags_service.writes.store.FlagStore: records each seed(actor=, reason=) call."""

    version: int = 0
    applied: bool = True
    error: Exception | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def seed(self, *, actor: str, reason: str) -> Any:
        self.calls.append({"actor": actor, "reason": reason})
        if self.error is not None:
            raise self.error
        return SimpleNamespace(snapshot=SimpleNamespace(version=self.version), applied=self.applied, attempts=1)


def event(request_type: str, **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-custom-resource-response.example/signed",
        "StackId": STACK_ID,
        "RequestId": "b4c8e2a0-request",
        "LogicalResourceId": "StorageSeed",
        "ResourceType": "Custom::FlagsSeed",
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:...", "DeclarationsFingerprint": "0123abcd"},
        **extra,
    }


@pytest.fixture
def seed(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TABLE_NAME", "singleton-flags-test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    previous = sys.modules.pop(MODULE, None)
    module: ModuleType = load_module(MODULE, fresh=True)
    store = FakeStore()
    sent: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(module, "STORE", store)
    monkeypatch.setattr(module, "PROTECTION", lambda **_: {})  # tests/unit/test_approvals_protection.py
    monkeypatch.setattr(module, "send_response", lambda url, body: sent.append((url, body)))
    yield SimpleNamespace(module=module, store=store, sent=sent, context=SimpleNamespace(log_stream_name="2026/x"))
    sys.modules.pop(MODULE, None)
    if previous is not None:
        sys.modules[MODULE] = previous


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_create_and_update_seed_the_store_and_answer_success(seed: Any, request_type: str) -> None:
    extra = {"PhysicalResourceId": "singleton-flags-seed"} if request_type == "Update" else {}
    seed.store.version = 7
    seed.module.handler(event(request_type, **extra), seed.context)
    # Then the store's seed ran once, as CloudFormation acting for this stack, saying why
    [call] = seed.store.calls
    assert call["actor"] == "cloudformation:singleton-flags-prod"
    assert request_type.lower() in call["reason"] and "0123abcd" in call["reason"]
    # And CloudFormation is told it worked, with the same physical id every time (no replacement)
    [(url, body)] = seed.sent
    assert url == "https://cloudformation-custom-resource-response.example/signed"
    assert body["Status"] == "SUCCESS"
    assert body["PhysicalResourceId"] == "singleton-flags-seed"
    assert (body["StackId"], body["RequestId"], body["LogicalResourceId"]) == (
        STACK_ID,
        "b4c8e2a0-request",
        "StorageSeed",
    )
    assert body["Data"] == {"Version": "7", "Applied": "true"}


def test_delete_leaves_the_retained_table_alone(seed: Any) -> None:
    seed.module.handler(event("Delete", PhysicalResourceId="singleton-flags-seed"), seed.context)
    assert seed.store.calls == []
    [(_, body)] = seed.sent
    assert (body["Status"], body["PhysicalResourceId"]) == ("SUCCESS", "singleton-flags-seed")


def test_a_failing_seed_answers_failed_with_the_reason_instead_of_hanging_the_deploy(seed: Any) -> None:
    from singleton_flags_service.errors import StoreUnavailable

    seed.store.error = StoreUnavailable("DynamoDB is unreachable")
    seed.module.handler(event("Create"), seed.context)
    [(_, body)] = seed.sent
    assert body["Status"] == "FAILED"
    assert "DynamoDB is unreachable" in body["Reason"] and "2026/x" in body["Reason"]
    assert body["PhysicalResourceId"] == "singleton-flags-seed"


def test_the_response_is_a_put_of_json_without_a_content_type(monkeypatch: pytest.MonkeyPatch) -> None:
    from singleton_flags_service import custom_resource as cfn

    seen: list[Any] = []

    class Answer:
        status = 200

        def __enter__(self) -> Answer:
            return self

        def __exit__(self, *_: Any) -> None:
            return None

    def fake_urlopen(request: Any, timeout: float) -> Answer:
        seen.append(request)
        return Answer()

    monkeypatch.setattr(cfn.urllib.request, "urlopen", fake_urlopen)
    cfn.send_response("https://example.invalid/signed", {"Status": "SUCCESS"})
    [request] = seen
    assert request.get_method() == "PUT"
    assert request.data == b'{"Status": "SUCCESS"}'
    assert request.get_header("Content-type") == ""


def test_after_seeding_the_new_table_the_seed_marks_the_one_the_stage_published_before(
    seed: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from singleton_flags_service.writes.supersede import MARKED, Outcome

    calls: list[dict[str, Any]] = []

    def fake_mark(ssm: Any, dynamodb: Any, **options: Any) -> Outcome:
        calls.append({"seeded_before": bool(seed.store.calls), **options})
        return Outcome(MARKED, "marked")

    monkeypatch.setattr(seed.module, "mark_replaced_table", fake_mark)
    new_arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/singleton-flags-prod-StorageTable-NEW"
    request = event("Update", PhysicalResourceId="singleton-flags-seed")
    request["ResourceProperties"].update(TableArn=new_arn, TableArnParameter="/singleton-flags/prod/table-arn")
    seed.module.handler(request, seed.context)
    # Then the old table is marked once, after the new one was seeded, superseded by this table
    [call] = calls
    assert call["seeded_before"] is True
    assert (call["own_table_arn"], call["parameter_name"]) == (new_arn, "/singleton-flags/prod/table-arn")
    assert "singleton-flags-prod" in call["reason"]
    [(_, body)] = seed.sent
    assert body["Status"] == "SUCCESS" and body["Data"]["Superseded"] == MARKED
