"""The write function through ``write_api.handler.handler`` with API Gateway REST proxy events, on moto.

Every refusal checks its status, its error code (and the flag and rule where there is one) and that the
singleton and the audit trail are exactly as they were (a consistent GetItem + Query before and after).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
import singleton_flags.declarations
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from singleton_flags.audit import encode_cursor
from singleton_flags.declarations import DECLARATIONS_FILE, DEFAULT_STRING_MAX_LENGTH, Declarations, parse_declarations
from singleton_flags.keys import (
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_OWNER_ATTR,
    SORT_KEY,
    TTL_ATTR,
    UPDATED_BY_ATTR,
    VERSION_ATTR,
    singleton_key,
)
from singleton_flags.reader import CACHED
from singleton_flags.store import FlagStore, Ownership
from singleton_flags.transaction import MAX_RESENDS
from unit_support import (
    CALLER,
    REASON,
    RETENTION_SECONDS,
    START,
    Clock,
    WriteApi,
    assert_refused,
    body_of,
    count_calls,
    headers_of,
    install,
)

from local.functions import load_module

# -- PATCH /flags refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "code", "flag", "rule"),
    [
        ({"no_such_flag": True}, "UNKNOWN_FLAG", "no_such_flag", "declared"),
        ({"signup_enabled": "true"}, "INVALID_VALUE", "signup_enabled", "type"),
        ({"signup_enabled": 1}, "INVALID_VALUE", "signup_enabled", "type"),
        ({"signup_enabled": None}, "INVALID_VALUE", "signup_enabled", "type"),
        ({"api_rate_limit_per_minute": True}, "INVALID_VALUE", "api_rate_limit_per_minute", "type"),
        ({"api_rate_limit_per_minute": 1.5}, "INVALID_VALUE", "api_rate_limit_per_minute", "type"),
        ({"api_rate_limit_per_minute": "600"}, "INVALID_VALUE", "api_rate_limit_per_minute", "type"),
        ({"api_rate_limit_per_minute": 0}, "INVALID_VALUE", "api_rate_limit_per_minute", "min"),
        ({"api_rate_limit_per_minute": 100001}, "INVALID_VALUE", "api_rate_limit_per_minute", "max"),
        ({"trace_sample_rate": -0.1}, "INVALID_VALUE", "trace_sample_rate", "min"),
        ({"trace_sample_rate": 1.5}, "INVALID_VALUE", "trace_sample_rate", "max"),
        ({"search_ranking": "fancy"}, "INVALID_VALUE", "search_ranking", "enum"),
        ({"search_ranking": 1}, "INVALID_VALUE", "search_ranking", "type"),
        ({"signup_enabled": False, "no_such_flag": 1}, "UNKNOWN_FLAG", "no_such_flag", "declared"),
    ],
    ids=lambda case: json.dumps(case) if isinstance(case, dict) else None,
)
def test_patch_refuses_an_invalid_value(api: WriteApi, flags: dict, code: str, flag: str, rule: str) -> None:
    # Given the flags at version 1
    before = api.state()
    # When a PATCH carries a value its declaration does not allow
    response = api.patch(flags)
    # Then 400 names the flag and the rule, and nothing was written
    assert_refused(api, response, before, 400, code, flag=flag, rule=rule)


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ({"flags": {}, "reason": REASON}, "empty_change"),
        ({"reason": REASON}, "empty_change"),
        ({"flags": [], "reason": REASON}, "empty_change"),
        ({"flags": "signup_enabled", "reason": REASON}, "empty_change"),
        ("{not json", "json"),
        ("", "json"),
        ('["flags"]', "json"),
        ('"flags"', "json"),
        ("42", "json"),
        ({"flags": {"signup_enabled": False}, "reason": REASON, "force": True}, "fields"),
        ({"flags": {"signup_enabled": False}}, "reason"),
        ({"flags": {"signup_enabled": False}, "reason": ""}, "reason"),
        ({"flags": {"signup_enabled": False}, "reason": "   "}, "reason"),
        ({"flags": {"signup_enabled": False}, "reason": 42}, "reason"),
        ({"flags": {"signup_enabled": False}, "reason": "x" * 501}, "reason_length"),
    ],
    ids=[
        "empty-change",
        "flags-missing",
        "flags-a-list",
        "flags-a-string",
        "malformed-json",
        "empty-body",
        "body-a-list",
        "body-a-string",
        "body-a-number",
        "extra-field",
        "reason-missing",
        "reason-empty",
        "reason-blank",
        "reason-not-a-string",
        "reason-too-long",
    ],
)
def test_patch_refuses_a_malformed_request(api: WriteApi, body: Any, rule: str) -> None:
    before = api.state()
    response = api("PATCH", "/flags", body=body)
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule=rule)


def test_a_reason_of_the_maximum_length_is_accepted(api: WriteApi) -> None:
    response = api.patch({"signup_enabled": False}, reason="x" * 500)
    assert response["statusCode"] == 200


@pytest.mark.parametrize("if_match", ["7", "", "   ", ",", 'xx "1"', '"1', "W/1", '*, "1"', '"1" "1"'])
def test_patch_refuses_a_malformed_if_match(api: WriteApi, if_match: str) -> None:
    before = api.state()
    response = api.patch({"signup_enabled": False}, headers={"If-Match": if_match})
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule="if_match")


@pytest.mark.parametrize("if_match", ['"seven"', '"-1"', '""', 'W/"1"', '"0001"', '"*"', '"2", W/"1"'])
def test_an_if_match_naming_no_current_version_strongly_is_412(api: WriteApi, if_match: str) -> None:
    # Given the flags at version 1 / When If-Match names tags that are not "1" compared strongly
    before = api.state()
    response = api.patch({"signup_enabled": False}, headers={"If-Match": if_match})
    # Then 412 with the current version, and nothing was written
    assert assert_refused(api, response, before, 412, "PRECONDITION_FAILED")["current_version"] == 1


def test_a_stale_if_match_is_412_with_the_current_version(api: WriteApi) -> None:
    # Given the flags at version 1 / When a client writes with the version it read earlier, 0
    before = api.state()
    response = api.patch({"signup_enabled": False}, headers={"If-Match": '"0"'})
    # Then 412 carries the current version in the body and as the ETag, and nothing was written
    error = assert_refused(api, response, before, 412, "PRECONDITION_FAILED")
    assert error["current_version"] == 1
    assert headers_of(response)["ETag"] == '"1"'


def test_a_stale_if_match_is_412_even_when_the_values_already_hold(api: WriteApi) -> None:
    before = api.state()
    response = api.patch({"ai_search_enabled": True}, headers={"If-Match": '"5"'})
    assert assert_refused(api, response, before, 412, "PRECONDITION_FAILED")["current_version"] == 1


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
        patch.setattr(singleton_flags.declarations, "load_declarations", lambda *_: custom)
        module = load_module("write_api.handler", fresh=True)
    try:
        with monkeypatch.context() as patch:
            install(module, ddb, table_name, clock, patch)
            FlagStore(ddb, table_name, custom).seed(actor="test", reason="seed")
            module.STORE.change({"banner_text": "hello"}, actor="setup", reason="version 1")
            yield WriteApi(module, ddb, table_name, make_event, lambda_context)
    finally:
        load_module("write_api.handler", fresh=True)


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


# -- history and revert refusals -----------------------------------------------------------------------


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "1.5", ""])
def test_history_refuses_a_bad_limit(api: WriteApi, limit: str) -> None:
    before = api.state()
    response = api.history(limit=limit)
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule="limit")


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        "e30",
        encode_cursor(1).replace("e", "!"),
        "eyJ2IjotMX0",
        "eyJ2IjoiMSJ9",
        "eyJ2Ijp0cnVlfQ",
        "x" * 201,
    ],
    ids=["garbage", "empty-object", "bad-base64", "negative", "string-version", "bool-version", "too-long"],
)
def test_history_refuses_a_bad_cursor(api: WriteApi, cursor: str) -> None:
    before = api.state()
    response = api.history(cursor=cursor)
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule="cursor")


def test_revert_to_an_unknown_version_is_404(api: WriteApi) -> None:
    before = api.state()
    response = api.revert(99)
    error = assert_refused(api, response, before, 404, "VERSION_NOT_FOUND")
    assert error["version"] == 99


@pytest.mark.parametrize("version", ["1", 1.5, True, -1, -3, None, [1]], ids=repr)
def test_revert_refuses_a_version_that_is_not_a_non_negative_integer(api: WriteApi, version: Any) -> None:
    before = api.state()
    response = api.revert(version)
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule="version")


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ({"version": 1}, "reason"),
        ({"version": 1, "reason": ""}, "reason"),
        ({"version": 1, "reason": "x" * 501}, "reason_length"),
        ({"version": 1, "reason": REASON, "flags": {}}, "fields"),
        ("[1]", "json"),
        ("{", "json"),
    ],
    ids=["reason-missing", "reason-empty", "reason-too-long", "extra-field", "not-an-object", "malformed"],
)
def test_revert_refuses_a_malformed_request(api: WriteApi, body: Any, rule: str) -> None:
    before = api.state()
    response = api("POST", "/flags/revert", body=body)
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule=rule)


def test_revert_with_a_stale_if_match_is_412(api: WriteApi) -> None:
    before = api.state()
    response = api.revert(1, headers={"If-Match": '"0"'})
    assert assert_refused(api, response, before, 412, "PRECONDITION_FAILED")["current_version"] == 1


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("PUT", "/flags", 405, "METHOD_NOT_ALLOWED"),
        ("DELETE", "/flags/history", 405, "METHOD_NOT_ALLOWED"),
        ("POST", "/nowhere", 404, "NOT_FOUND"),
    ],
)
def test_an_unsupported_route_is_405_or_404(api: WriteApi, method: str, path: str, status: int, code: str) -> None:
    before = api.state()
    response = api(method, path, body={"flags": {"signup_enabled": False}, "reason": REASON})
    assert_refused(api, response, before, status, code)


# -- happy paths ---------------------------------------------------------------------------------------


def capture_transactions(client: Any) -> list[dict[str, Any]]:
    """The parameters of every TransactWriteItems call the client makes (botocore's provide-client-params)."""
    calls: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append(json.loads(json.dumps(params)))

    client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", record)
    return calls


def set_attributes(update: dict[str, Any]) -> set[str]:
    """Attribute names an UpdateExpression SETs (resolving #placeholders)."""
    expression = update["UpdateExpression"]
    assert expression.startswith("SET ")
    assignments = expression.removeprefix("SET ").split(" REMOVE ")[0].split(", ")
    return {update["ExpressionAttributeNames"][assignment.split(" = ")[0]] for assignment in assignments}


def test_patch_sets_only_the_changed_attributes(api: WriteApi) -> None:
    # Given the flags at version 1 (ai_search_enabled already true)
    calls = capture_transactions(api.client)
    # When a PATCH asks for one flag at its current value and two new values
    response = api.patch({"ai_search_enabled": True, "signup_enabled": False, "api_rate_limit_per_minute": 700})
    # Then ONE transaction: an Update SETting only the two changed flags and the bookkeeping, conditioned on v1,
    assert response["statusCode"] == 200
    assert len(calls) == 1
    update, put = calls[0]["TransactItems"][0]["Update"], calls[0]["TransactItems"][1]["Put"]
    assert set_attributes(update) == {
        "signup_enabled",
        "api_rate_limit_per_minute",
        VERSION_ATTR,
        "updated_at",
        UPDATED_BY_ATTR,
    }
    assert "REMOVE" not in update["UpdateExpression"]
    assert update["ConditionExpression"] == "#version = :current"
    assert update["ExpressionAttributeNames"]["#version"] == VERSION_ATTR
    assert update["ExpressionAttributeValues"][":current"] == {"N": "1"}
    # and a Put of AUDIT#2 that may not overwrite
    assert put["Item"][SORT_KEY] == {"S": "AUDIT#000000000002"}
    assert put["ConditionExpression"] == "attribute_not_exists(#pk)"
    # and the response says what changed, at version 2
    body = body_of(response)
    assert body["applied"] is True and body["version"] == 2
    assert body["changed"] == {
        "signup_enabled": {"old": True, "new": False},
        "api_rate_limit_per_minute": {"old": 600, "new": 700},
    }
    assert body["flags"]["api_rate_limit_per_minute"] == 700 and body["flags"]["ai_search_enabled"] is True
    assert headers_of(response)["ETag"] == '"2"'
    assert headers_of(response)["Cache-Control"] == "no-store"
    item, trail = api.state()
    assert item[VERSION_ATTR] == {"N": "2"} and item["signup_enabled"] == {"BOOL": False}
    assert len(trail) == 2


def test_a_no_op_write_bumps_nothing_and_records_nothing(api: WriteApi) -> None:
    # Given the flags at version 1
    before = api.state()
    calls = capture_transactions(api.client)
    # When a PATCH asks for the values the flags already hold
    response = api.patch({"ai_search_enabled": True, "signup_enabled": True})
    # Then 200 applied=false at version 1, no transaction, the item and trail untouched
    body = body_of(response)
    assert response["statusCode"] == 200
    assert (body["applied"], body["version"], body["changed"]) == (False, 1, {})
    assert headers_of(response)["ETag"] == '"1"'
    assert calls == []
    assert api.state() == before


def test_a_float_flag_given_an_integer_is_the_same_value(api: WriteApi) -> None:
    api.patch({"trace_sample_rate": 1})
    before = api.state()
    response = api.patch({"trace_sample_rate": 1.0})
    assert body_of(response)["applied"] is False
    assert api.state() == before


@pytest.mark.parametrize("if_match", ['"1"', "*", '"2", "1"', '"1",', ' , "1" ,', 'W/"5", "1"'])
def test_a_write_with_a_current_if_match_succeeds(api: WriteApi, if_match: str) -> None:
    response = api.patch({"signup_enabled": False}, headers={"If-Match": if_match})
    assert response["statusCode"] == 200
    assert body_of(response)["version"] == 2
    assert headers_of(response)["ETag"] == '"2"'


def test_the_writing_environment_reads_its_own_write_without_a_get_item(api: WriteApi) -> None:
    # Given the write function's reader has cached version 1
    api.module.READER.read()
    # When it writes version 2
    api.patch({"signup_enabled": False})
    get_items = count_calls(api.client)
    state = api.module.READER.read()
    # Then its reader serves version 2 from the primed cache: no GetItem
    assert (state.version, state.values["signup_enabled"], state.reason) == (2, False, CACHED)
    assert get_items.calls == 0


def test_the_actor_is_the_callers_iam_identity(api: WriteApi) -> None:
    api.patch({"signup_enabled": False}, caller_arn="arn:aws:sts::123456789012:assumed-role/admin/bob")
    item, trail = api.state()
    newest = max(trail, key=lambda record: record[SORT_KEY]["S"])
    assert item[UPDATED_BY_ATTR] == {"S": "arn:aws:sts::123456789012:assumed-role/admin/bob"}
    assert newest["actor"] == {"S": "arn:aws:sts::123456789012:assumed-role/admin/bob"}
    assert newest["reason"] == {"S": REASON}


def test_the_audit_record_expires_after_the_retention(api: WriteApi, clock: Clock) -> None:
    clock.advance(3600)
    api.patch({"signup_enabled": False})
    _, trail = api.state()
    newest = max(trail, key=lambda record: record[SORT_KEY]["S"])
    assert int(newest[TTL_ATTR]["N"]) == int(START + 3600) + RETENTION_SECONDS
    assert newest["at"]["S"].startswith("2023-11-14T23:13:20")


def window_switches_maintenance_on(api: WriteApi, deadline: float | None = START + 7200) -> None:
    """Maintenance on, owned by the window "nightly" (as the maintenance function writes it)."""
    api.module.STORE.change(
        {"maintenance_mode": True},
        actor="scheduler",
        reason="window nightly starts",
        ownership=Ownership(owner="nightly", deadline=deadline),
    )
    item, _ = api.state()
    assert item[MAINTENANCE_OWNER_ATTR] == {"S": "nightly"} and MAINTENANCE_DEADLINE_ATTR in item


def test_patching_maintenance_takes_it_away_from_a_window(api: WriteApi) -> None:
    # Given maintenance switched on by a window, with its deadline
    window_switches_maintenance_on(api)
    # When an operator switches maintenance off by hand
    response = api.patch({"maintenance_mode": False})
    # Then the window no longer owns it: owner and deadline are removed with the change
    item, _ = api.state()
    assert response["statusCode"] == 200
    assert item["maintenance_mode"] == {"BOOL": False}
    assert MAINTENANCE_OWNER_ATTR not in item and MAINTENANCE_DEADLINE_ATTR not in item


def test_patching_maintenance_to_its_current_value_still_takes_ownership(api: WriteApi) -> None:
    # Given maintenance on, owned by a window / When an operator confirms it on by hand
    window_switches_maintenance_on(api)
    response = api.patch({"maintenance_mode": True})
    # Then it stays on but the window no longer owns it (its end will not switch it off): a new version
    item, _ = api.state()
    assert body_of(response)["applied"] is True and body_of(response)["changed"] == {}
    assert MAINTENANCE_OWNER_ATTR not in item and MAINTENANCE_DEADLINE_ATTR not in item
    assert item["maintenance_mode"] == {"BOOL": True} and item[VERSION_ATTR] == {"N": "3"}


def test_patching_another_flag_leaves_the_window_owning_maintenance(api: WriteApi) -> None:
    window_switches_maintenance_on(api)
    api.patch({"signup_enabled": False})
    item, _ = api.state()
    assert item[MAINTENANCE_OWNER_ATTR] == {"S": "nightly"} and item["maintenance_mode"] == {"BOOL": True}


def test_a_write_to_a_missing_singleton_reseeds_it_whole_first(
    ddb: Any, table_name: str, clock: Clock, make_event: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a table without the singleton (and no history)
    module = load_module("write_api.handler")

    install(module, ddb, table_name, clock, monkeypatch)
    api = WriteApi(module, ddb, table_name, make_event, lambda_context)
    # When a PATCH changes one flag
    response = api.patch({"signup_enabled": False})
    # Then the item holds every declared flag (initial values, the change applied) at version 1
    item, trail = api.state()
    assert response["statusCode"] == 200
    assert set(module.DECLARATIONS) <= set(item)
    assert body_of(response)["flags"] == {**module.DECLARATIONS.initials(), "signup_enabled": False}
    assert item[VERSION_ATTR] == {"N": "1"} and len(trail) == 1


def test_a_write_after_the_singleton_was_deleted_restores_the_trails_state_as_a_new_version(api: WriteApi) -> None:
    # Given versions 1 and 2 in the trail (signup switched off), then the singleton deleted
    api.patch({"signup_enabled": False})
    api.client.delete_item(TableName=api.table, Key=singleton_key())
    # When a PATCH comes
    response = api.patch({"search_ranking": "hybrid"})
    # Then the restore is version 3 (version 2's state, kind restore) and the change version 4: no version (or
    # ETag) names two states, and the switched-off feature stays off
    item, trail = api.state()
    assert response["statusCode"] == 200, body_of(response)
    assert body_of(response)["version"] == 4 and headers_of(response)["ETag"] == '"4"'
    assert body_of(response)["restored"] is True
    assert item[VERSION_ATTR] == {"N": "4"} and set(api.module.DECLARATIONS) <= set(item)
    assert item["signup_enabled"] == {"BOOL": False} and item["search_ranking"] == {"S": "hybrid"}
    kinds = {int(record["version"]["N"]): record["kind"]["S"] for record in trail}
    assert kinds == {1: "change", 2: "change", 3: "restore", 4: "change"}


def all_history(api: WriteApi, limit: int) -> list[list[int]]:
    pages: list[list[int]] = []
    cursor: str | None = None
    while True:
        response = api.history(limit=str(limit), **({"cursor": cursor} if cursor else {}))
        assert response["statusCode"] == 200
        body = body_of(response)
        pages.append([record["version"] for record in body["records"]])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 50


@pytest.mark.parametrize("limit", [1, 3, 4, 8, 100])
def test_history_pages_newest_first_until_the_cursor_is_null(api: WriteApi, limit: int) -> None:
    # Given versions 1..8
    for rate in range(701, 708):
        api.patch({"api_rate_limit_per_minute": rate})
    # When every page is fetched, following next_cursor
    pages = all_history(api, limit)
    # Then pages hold at most `limit` records, newest first, with no duplicate and no gap
    assert all(len(page) <= limit for page in pages)
    assert [version for page in pages for version in page] == list(range(8, 0, -1))


def test_history_records_say_who_why_and_what(api: WriteApi) -> None:
    api.patch({"api_rate_limit_per_minute": 900, "signup_enabled": False}, reason="load test")
    body = body_of(api.history(limit="1"))
    (record,) = body["records"]
    assert record["version"] == 2 and record["kind"] == "change"
    assert (record["actor"], record["reason"]) == (CALLER, "load test")
    assert record["changes"] == {
        "api_rate_limit_per_minute": {"old": 600, "new": 900},
        "signup_enabled": {"old": True, "new": False},
    }
    assert body["next_cursor"] is not None


def test_revert_restores_a_versions_values_as_a_new_version(api: WriteApi) -> None:
    # Given version 1 (ai_search on) and version 2 changing three flags
    api.patch({"signup_enabled": False, "api_rate_limit_per_minute": 50, "search_ranking": "semantic"})
    # When version 1 is restored
    response = api.revert(1, reason="undo the experiment")
    # Then version 3 holds version 1's values, recorded as a revert of version 1
    body = body_of(response)
    assert response["statusCode"] == 200 and body["version"] == 3
    assert body["flags"] == {**api.module.DECLARATIONS.initials(), "ai_search_enabled": True}
    assert headers_of(response)["ETag"] == '"3"'
    record = body_of(api.history(limit="1"))["records"][0]
    assert (record["version"], record["kind"], record["reverted_to"]) == (3, "revert", 1)
    assert record["changes"] == {
        "signup_enabled": {"old": False, "new": True},
        "api_rate_limit_per_minute": {"old": 50, "new": 600},
        "search_ranking": {"old": "semantic", "new": "classic"},
    }


def test_revert_to_the_current_values_is_a_no_op(api: WriteApi) -> None:
    before = api.state()
    response = api.revert(1)
    assert response["statusCode"] == 200 and body_of(response)["applied"] is False
    assert api.state() == before


def test_revert_to_version_zero_is_not_refused_as_a_bad_version(api: WriteApi) -> None:
    # Given the flags at version 1 / When a client asks for the seeded state, version 0 (as flagctl revert 0 does)
    response = api.revert(0)
    # Then the request is valid: whatever the store answers, it is not a refusal of the version itself
    error = body_of(response).get("error") or {}
    assert (response["statusCode"], error.get("rule")) != (400, "version")
    assert response["statusCode"] < 500
