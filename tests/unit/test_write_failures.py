"""The write function at its limits, on moto: values too long, the 4 KB item, conflicts, DynamoDB failing.

Every refusal checks its status, its error code (and the flag and rule where there is one) and that the
singleton and the audit trail are exactly as they were (a consistent GetItem + Query before and after).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

import singleton_flags_service.contract
from local.functions import load_module
from singleton_flags.declarations import DEFAULT_STRING_MAX_LENGTH, Declarations, parse_declarations
from singleton_flags_service.contract import DECLARATIONS_FILE
from singleton_flags_service.writes.store import FlagStore
from singleton_flags_service.writes.transaction import MAX_RESENDS
from tests.support.unit import (
    Clock,
    WriteApi,
    assert_refused,
    headers_of,
    install,
)

# -- size, conflicts, store failures ---------------------------------------------------------------------

TEXT_FLAGS = [
    {
        "name": "banner_text",
        "type": "string",
        "initial": "",
        "fallback": "",
        "max_length": 5000,
        "description": "A long string, so that a valid value can take the item over 4 KB.",
    },
    {"name": "motd", "type": "string", "initial": "", "fallback": "", "description": "No max_length: the default."},
]


def declarations_with_long_text() -> Declarations:
    document = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
    document["flags"].extend(TEXT_FLAGS)
    return parse_declarations(document)


@pytest.fixture
def long_text_api(
    ddb: Any,
    table_name: str,
    clock: Clock,
    make_event: Any,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[WriteApi]:
    """The write function loaded with the shipped declarations plus ``banner_text`` (max_length 5000) and
    ``motd`` (the default max_length).

    The request models are built from the declarations at import, so the module is reloaded with them,
    and reloaded again afterwards (while the test's environment is still set) with the shipped file."""
    custom = declarations_with_long_text()
    with monkeypatch.context() as patch:
        patch.setattr(singleton_flags_service.contract, "load_service_declarations", lambda *_: custom)
        module = load_module("singleton_flags_service.handlers.write_api", fresh=True)
    try:
        with monkeypatch.context() as patch:
            install(module, ddb, table_name, clock, patch)
            FlagStore(ddb, table_name, custom).seed(actor="test", reason="seed")
            module.STORE.change({"banner_text": "hello"}, actor="setup", reason="version 1")
            yield WriteApi(module, ddb, table_name, make_event, lambda_context)
    finally:
        load_module("singleton_flags_service.handlers.write_api", fresh=True)


@pytest.mark.parametrize(("flag", "length"), [("banner_text", 5001), ("motd", DEFAULT_STRING_MAX_LENGTH + 1)])
def test_a_string_over_its_max_length_is_refused(long_text_api: WriteApi, flag: str, length: int) -> None:
    before = long_text_api.state()
    response = long_text_api.patch({flag: "x" * length})
    assert_refused(long_text_api, response, before, 400, "INVALID_VALUE", flag=flag, rule="max_length")


@pytest.mark.parametrize(("flag", "length"), [("banner_text", 300), ("motd", DEFAULT_STRING_MAX_LENGTH)])
def test_a_string_within_its_max_length_is_written(long_text_api: WriteApi, flag: str, length: int) -> None:
    response = long_text_api.patch({flag: "y" * length})
    assert response["statusCode"] == 200
    assert long_text_api.state()[0][flag] == {"S": "y" * length}


def test_a_change_that_takes_the_item_over_4_kb_is_413(long_text_api: WriteApi) -> None:
    # Given a flag whose declaration allows 5000 characters
    before = long_text_api.state()
    # When a valid value would make the singleton larger than one 4 KB read unit
    response = long_text_api.patch({"banner_text": "x" * 4500})
    # Then 413 ITEM_TOO_LARGE names the rule, with the computed size and the limit, and nothing was written
    error = assert_refused(long_text_api, response, before, 413, "ITEM_TOO_LARGE", rule="item_size")
    assert error["size"] > error["limit"] == 4096


def test_a_change_just_under_4_kb_is_written(long_text_api: WriteApi) -> None:
    response = long_text_api.patch({"banner_text": "x" * 3500})
    assert response["statusCode"] == 200
    assert long_text_api.state()[0]["banner_text"] == {"S": "x" * 3500}


def answer_transactions(client: Any, answer: dict[str, Any] | Exception) -> list[dict[str, Any]]:
    """From now on the (moto) client's TransactWriteItems never reach moto: each is answered with ``answer``, a
    DynamoDB error (``{"Error": ..., ...}``) or an exception to raise. Other operations still reach moto.
    Returns the list the calls' parameters are appended to."""
    calls: list[dict[str, Any]] = []

    def respond(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        calls.append(params)
        if isinstance(answer, Exception):
            raise answer
        return AWSResponse("https://dynamodb.local", 400, {}, None), answer

    client.meta.events.register_first("before-call.dynamodb.TransactWriteItems", respond)
    return calls


def cancellation(*reasons: str) -> dict[str, Any]:
    return {
        "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
        "CancellationReasons": [{"Code": reason} for reason in reasons],
    }


def test_a_conflict_that_exhausts_the_retries_is_409_with_retry_after(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a writer whose every transaction is cancelled by the version condition (a concurrent writer won)
    transactions = answer_transactions(api.client, cancellation("ConditionalCheckFailed", "None"))
    api.use_store(monkeypatch, api.client, max_attempts=4)
    before = api.state()
    # When a PATCH is sent without If-Match
    response = api.patch({"signup_enabled": False})
    # Then the store tried 4 times, and answered 409 with Retry-After; nothing was written
    error = assert_refused(api, response, before, 409, "WRITE_CONFLICT")
    assert len(transactions) == 4 and error["attempts"] == 4
    assert int(headers_of(response)["Retry-After"]) >= 1


def test_a_conflict_under_if_match_is_one_attempt_then_412(api: WriteApi, monkeypatch: pytest.MonkeyPatch) -> None:
    transactions = answer_transactions(api.client, cancellation("ConditionalCheckFailed", "None"))
    api.use_store(monkeypatch, api.client, max_attempts=4)
    before = api.state()
    response = api.patch({"signup_enabled": False}, headers={"If-Match": '"1"'})
    assert assert_refused(api, response, before, 412, "PRECONDITION_FAILED")["current_version"] == 1
    assert len(transactions) == 1


@pytest.mark.parametrize(
    ("operation", "send"),
    [
        ("get_item", lambda api: api.patch({"signup_enabled": False})),
        ("query", lambda api: api.history()),
        ("get_item", lambda api: api.revert(1)),
    ],
    ids=["patch-read", "history", "revert-read"],
)
def test_dynamodb_failing_on_read_is_503_not_500(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch, operation: str, send: Callable[[WriteApi], Any]
) -> None:
    # Given DynamoDB answering with an internal error (a botocore Stubber on the store's client)
    client = boto3.client("dynamodb", region_name="us-east-1")
    stub = Stubber(client)
    stub.add_client_error(operation, service_error_code="InternalServerError", http_status_code=500)
    api.use_store(monkeypatch, client)
    before = api.state()
    # When the request is sent
    with stub:
        response = send(api)
    # Then 503 STORE_UNAVAILABLE with Retry-After
    assert_refused(api, response, before, 503, "STORE_UNAVAILABLE")
    assert "Retry-After" in headers_of(response)
    stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("answer", "status", "code", "sends"),
    [
        ({"Error": {"Code": "InternalServerError", "Message": "boom"}}, 503, "OUTCOME_UNKNOWN", 1 + MAX_RESENDS),
        (
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}},
            503,
            "STORE_UNAVAILABLE",
            1 + MAX_RESENDS,
        ),
        (cancellation("ThrottlingError", "None"), 503, "STORE_UNAVAILABLE", 1 + MAX_RESENDS),
        (cancellation("None", "ValidationError"), 500, "INTERNAL_ERROR", 1),
        (
            EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
            503,
            "STORE_UNAVAILABLE",
            1 + MAX_RESENDS,
        ),
    ],
    ids=["internal-error", "throughput", "cancelled-by-throttling", "cancelled-by-validation", "no-connection"],
)
def test_dynamodb_failing_on_write_is_classified_by_meaning_and_only_the_same_request_is_resent(
    api: WriteApi,
    monkeypatch: pytest.MonkeyPatch,
    answer: dict[str, Any] | Exception,
    status: int,
    code: str,
    sends: int,
) -> None:
    # Given DynamoDB failing every TransactWriteItems in one way
    transactions = answer_transactions(api.client, answer)
    api.use_store(monkeypatch, api.client)
    before = api.state()
    # When a PATCH is sent
    response = api.patch({"signup_enabled": False})
    # Then: a 5xx answer that says what is known (an outage that applied nothing, an outcome that cannot be
    # known, or our own fault), nothing written, and never a new transaction: only the identical request,
    # same ClientRequestToken, resent a bounded number of times where resending is safe
    assert_refused(api, response, before, status, code)
    assert len(transactions) == sends
    assert all(call == transactions[0] for call in transactions)
