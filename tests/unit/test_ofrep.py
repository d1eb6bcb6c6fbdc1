"""OFREP on the read function: POST /ofrep/v1/evaluate/flags/{key} and POST /ofrep/v1/evaluate/flags.

Any OpenFeature SDK's OFREP provider reads the flags: the value the reader serves (a fallback is a value,
reason DEFAULT), our OpenFeature reason, a variant, flat metadata; the context is accepted and ignored; a bad
body is a 400 in OFREP's error shape, an unknown key a 404; never a 5xx, one GetItem per cache age.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

import pytest
from botocore.stub import Stubber

from singleton_flags_service.vocabulary import CACHED, DEFAULT, STALE, STATIC
from tests.support.unit import START, CallCount, Output, ReadApi, body_of, expire, headers_of

ONE = "/ofrep/v1/evaluate/flags/{key}"
BULK = "/ofrep/v1/evaluate/flags"
METADATA_VALUE_TYPES = (bool, str, int, float)


def evaluate(read_api: ReadApi, key: str, body: Any = None, **options: Any) -> dict[str, Any]:
    return read_api("POST", f"{BULK}/{key}", resource=ONE, path_parameters={"key": key}, body=body, **options)


def evaluate_all(read_api: ReadApi, body: Any = None, **options: Any) -> dict[str, Any]:
    return read_api("POST", BULK, body=body, **options)


class TestOneFlag:
    @pytest.mark.parametrize(
        ("key", "stored", "flag_type"),
        [
            pytest.param("signup_enabled", False, "bool", id="bool"),
            pytest.param("api_rate_limit_per_minute", 1200, "int", id="int"),
            pytest.param("trace_sample_rate", 0.25, "float", id="float"),
            pytest.param("search_ranking", "semantic", "string", id="string"),
        ],
    )
    def test_200_with_key_value_reason_variant_and_flat_metadata(
        self, read_api: ReadApi, put_flags: Any, key: str, stored: Any, flag_type: str
    ) -> None:
        # Given version 3 with the flag changed
        put_flags(version=3, **{key: stored})
        # When an OFREP provider evaluates it (no context)
        response = evaluate(read_api, key, {})
        # Then 200 JSON: the stored value, STATIC, variant "stored", flat metadata
        assert response["statusCode"] == 200
        assert headers_of(response)["Content-Type"] == "application/json"
        body = body_of(response)
        assert set(body) == {"key", "value", "reason", "variant", "metadata"}
        assert (body["key"], body["value"], body["reason"], body["variant"]) == (key, stored, STATIC, "stored")
        assert type(body["value"]) is type(stored)
        metadata = body["metadata"]
        assert set(metadata) == {"flagSetId", "version", "fetchedAt", "type", "contextIgnored"}
        assert (metadata["version"], metadata["type"], metadata["contextIgnored"]) == (3, flag_type, True)
        assert metadata["flagSetId"] == "singleton-flags"
        assert datetime.fromisoformat(metadata["fetchedAt"]).timestamp() == START
        assert all(isinstance(value, METADATA_VALUE_TYPES) for value in metadata.values())

    @pytest.mark.parametrize(
        "body",
        [
            pytest.param(None, id="no-body"),
            pytest.param("", id="empty-body"),
            pytest.param({}, id="empty-object"),
            pytest.param({"context": {}}, id="empty-context"),
            pytest.param({"context": {"region": "eu", "plan": "pro"}}, id="no-targeting-key"),
            pytest.param({"context": {"targetingKey": "user-1", "nested": {"a": [1, 2]}}}, id="targeting-key"),
            pytest.param({"context": {}, "extra": 1}, id="unknown-member"),
        ],
    )
    def test_the_context_is_accepted_and_ignored(self, read_api: ReadApi, put_flags: Any, body: Any) -> None:
        # Given version 2
        put_flags(version=2, signup_enabled=False)
        # When evaluated with any evaluation context (or none)
        response = evaluate(read_api, "signup_enabled", body)
        # Then the same answer: the flags are application-wide
        assert response["statusCode"] == 200
        assert body_of(response)["value"] is False

    def test_a_base64_encoded_body_is_read(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(version=2)
        text = base64.b64encode(b'{"context": 7}').decode()
        response = evaluate(read_api, "signup_enabled", text, base64_body=True)
        assert (response["statusCode"], body_of(response)["errorCode"]) == (400, "INVALID_CONTEXT")

    def test_the_second_evaluation_is_cached_one_getitem(
        self, read_api: ReadApi, put_flags: Any, get_item_calls: CallCount
    ) -> None:
        # Given a warm environment
        put_flags(version=2)
        evaluate(read_api, "signup_enabled")
        # When 50 more evaluations arrive within the cache age, GET and bulk mixed in
        for _ in range(50):
            answer = body_of(evaluate(read_api, "signup_enabled", {"context": {"targetingKey": "u"}}))
        read_api.get()
        evaluate_all(read_api)
        # Then one GetItem in all, and the evaluations say CACHED
        assert answer["reason"] == CACHED
        assert get_item_calls.calls == 1

    def test_a_cached_evaluation_prints_nothing(self, read_api: ReadApi, put_flags: Any, stdout: Output) -> None:
        # Given a warm environment that has fetched the item
        put_flags()
        evaluate(read_api, "signup_enabled")
        stdout.text()
        # When 100 cached OFREP evaluations arrive (single and bulk, a 304 among them)
        for _ in range(100):
            assert evaluate(read_api, "signup_enabled", {"context": {}})["statusCode"] == 200
        assert evaluate_all(read_api, headers={"If-None-Match": '"1"'})["statusCode"] == 304
        # Then not one byte was printed
        assert stdout.text() == ""

    def test_the_item_missing_serves_the_fallback_as_a_value_with_reason_default(
        self, read_api: ReadApi, ddb: Any
    ) -> None:
        # Given an empty table
        # When maintenance_mode is evaluated
        response = evaluate(read_api, "maintenance_mode")
        # Then 200 with the fail-closed fallback (maintenance ON), reason DEFAULT, variant fallback, no version
        assert response["statusCode"] == 200
        body = body_of(response)
        assert (body["value"], body["reason"], body["variant"]) == (True, DEFAULT, "fallback")
        assert "version" not in body["metadata"]
        assert "errorCode" not in body

    def test_dynamodb_failing_cold_answers_200_with_the_fallback(self, read_api: ReadApi, ddb: Any) -> None:
        with Stubber(ddb) as stubber:
            stubber.add_client_error("get_item", service_error_code="InternalServerError", http_status_code=500)
            response = evaluate(read_api, "signup_enabled")
        assert response["statusCode"] == 200
        assert (body_of(response)["reason"], body_of(response)["variant"]) == (DEFAULT, "fallback")

    def test_a_stale_value_keeps_its_version_and_says_stale(self, read_api: ReadApi, put_flags: Any, ddb: Any) -> None:
        put_flags(version=4, signup_enabled=False)
        evaluate(read_api, "signup_enabled")
        expire(read_api.provider)
        with Stubber(ddb) as stubber:
            stubber.add_client_error("get_item", service_error_code="ProvisionedThroughputExceededException")
            read_api.clock.advance(10)
            body = body_of(evaluate(read_api, "signup_enabled"))
        assert (body["value"], body["reason"], body["variant"], body["metadata"]["version"]) == (
            False,
            STALE,
            "stored",
            4,
        )

    def test_an_unusable_stored_value_is_served_as_its_fallback_variant(
        self, read_api: ReadApi, put_flags: Any
    ) -> None:
        # Given version 5 whose search_ranking is not one of its declared choices
        put_flags(version=5, search_ranking={"S": "no-such-ranking"})
        # When evaluated
        body = body_of(evaluate(read_api, "search_ranking"))
        # Then the declared fallback, variant fallback, at that version, its own reason DEFAULT (as GET /flags/{name})
        assert (body["variant"], body["metadata"]["version"], body["reason"]) == ("fallback", 5, DEFAULT)

    def test_a_window_ended_by_its_deadline_serves_maintenance_off(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(
            version=9,
            maintenance_mode=True,
            maintenance_owner={"S": "w1"},
            maintenance_deadline={"N": str(int(START) - 1)},
        )
        body = body_of(evaluate(read_api, "maintenance_mode"))
        assert (body["value"], body["variant"]) == (False, "deadline_ended")


class TestOneFlagRefusals:
    @pytest.mark.parametrize(
        "key", ["no_such_flag", "history", "PK", "%20", "Signup_Enabled", 'a"b', "a\\b", "a`b", '"', "\\", "`"]
    )
    def test_an_unknown_key_is_404_flag_not_found_without_a_read(
        self, read_api: ReadApi, put_flags: Any, get_item_calls: CallCount, key: str
    ) -> None:
        put_flags()
        response = evaluate(read_api, key, {})
        assert response["statusCode"] == 404
        body = body_of(response)
        assert set(body) == {"key", "errorCode", "errorDetails"}
        assert (body["key"], body["errorCode"]) == (key, "FLAG_NOT_FOUND")
        assert key in body["errorDetails"]
        assert get_item_calls.calls == 0

    @pytest.mark.parametrize(
        ("body", "code"),
        [
            pytest.param("not json", "PARSE_ERROR", id="not-json"),
            pytest.param("{", "PARSE_ERROR", id="truncated"),
            pytest.param("   ", "PARSE_ERROR", id="blank"),
            pytest.param("[]", "PARSE_ERROR", id="array"),
            pytest.param('"context"', "PARSE_ERROR", id="string"),
            pytest.param("null", "PARSE_ERROR", id="null"),
            pytest.param('{"context": {}, "context": {}}', "PARSE_ERROR", id="duplicate-key"),
            pytest.param('{"context": {"a": NaN}}', "PARSE_ERROR", id="nan"),
            pytest.param('{"context": "\\ud800"}', "PARSE_ERROR", id="lone-surrogate"),
            pytest.param("[" * 40 + "]" * 40, "PARSE_ERROR", id="too-deep"),
            pytest.param('{"context": "' + "x" * 70_000 + '"}', "PARSE_ERROR", id="over-64-KiB"),
            pytest.param('{"context": null}', "INVALID_CONTEXT", id="context-null"),
            pytest.param('{"context": "user-1"}', "INVALID_CONTEXT", id="context-string"),
            pytest.param('{"context": [1]}', "INVALID_CONTEXT", id="context-array"),
            pytest.param('{"context": 7}', "INVALID_CONTEXT", id="context-number"),
        ],
    )
    def test_a_bad_body_is_400_with_the_ofrep_error_code(
        self, read_api: ReadApi, put_flags: Any, get_item_calls: CallCount, body: str, code: str
    ) -> None:
        # Given a seeded item
        put_flags()
        # When evaluated with a body that is not an evaluation request
        response = evaluate(read_api, "signup_enabled", body)
        # Then 400 in OFREP's shape, naming the key; nothing was read
        assert response["statusCode"] == 400
        assert headers_of(response)["Content-Type"] == "application/json"
        answer = body_of(response)
        assert set(answer) == {"key", "errorCode", "errorDetails"}
        assert (answer["key"], answer["errorCode"]) == ("signup_enabled", code)
        assert isinstance(answer["errorDetails"], str) and answer["errorDetails"]
        assert get_item_calls.calls == 0

    def test_the_body_is_checked_before_the_key(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags()
        assert body_of(evaluate(read_api, "no_such_flag", "nope"))["errorCode"] == "PARSE_ERROR"

    @pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
    def test_another_method_is_405_with_allow_post(self, read_api: ReadApi, ddb: Any, method: str) -> None:
        response = read_api(method, f"{BULK}/signup_enabled", resource=ONE, path_parameters={"key": "signup_enabled"})
        assert response["statusCode"] == 405
        assert headers_of(response)["Allow"] == "POST"


class TestBulk:
    def test_every_declared_flag_in_declaration_order_with_etag(
        self, read_api: ReadApi, put_flags: Any, declarations: Any
    ) -> None:
        # Given version 7
        put_flags(version=7, signup_enabled=False)
        # When the bulk route is called with a context
        response = evaluate_all(read_api, {"context": {"targetingKey": "user-1"}})
        # Then every declared flag, each an evaluation, and the version as ETag
        assert response["statusCode"] == 200
        flags = body_of(response)["flags"]
        assert [flag["key"] for flag in flags] == list(declarations)
        values = {flag["key"]: flag["value"] for flag in flags}
        assert values == {**declarations.initials(), "signup_enabled": False}
        assert {flag["reason"] for flag in flags} == {STATIC}
        assert all(flag["metadata"]["version"] == 7 for flag in flags)
        assert headers_of(response)["ETag"] == '"7"'
        assert headers_of(response)["Cache-Control"] == "no-cache"

    @pytest.mark.parametrize(
        ("if_none_match", "status"),
        [('"7"', 304), ('W/"7"', 304), ('"3", "7"', 304), ("*", 304), ('"6"', 200), ("garbage", 200)],
    )
    def test_if_none_match_answers_304_while_the_version_holds(
        self, read_api: ReadApi, put_flags: Any, if_none_match: str, status: int
    ) -> None:
        put_flags(version=7)
        response = evaluate_all(read_api, {}, headers={"If-None-Match": if_none_match})
        assert response["statusCode"] == status
        assert headers_of(response)["ETag"] == '"7"'
        assert bool(response.get("body")) is (status == 200)

    def test_fallbacks_carry_no_etag_and_never_a_304(self, read_api: ReadApi, ddb: Any, declarations: Any) -> None:
        # Given an empty table
        # When the bulk route is called with a wildcard If-None-Match
        response = evaluate_all(read_api, headers={"If-None-Match": "*"})
        # Then 200, the fallbacks as values with reason DEFAULT, no ETag, not storable
        assert response["statusCode"] == 200
        flags = body_of(response)["flags"]
        assert {flag["key"]: flag["value"] for flag in flags} == declarations.fallbacks()
        assert {(flag["reason"], flag["variant"]) for flag in flags} == {(DEFAULT, "fallback")}
        assert "ETag" not in headers_of(response)
        assert headers_of(response)["Cache-Control"] == "no-store"

    def test_a_window_ended_by_its_deadline_carries_no_etag(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(
            version=9,
            maintenance_mode=True,
            maintenance_owner={"S": "w1"},
            maintenance_deadline={"N": str(int(START) - 1)},
        )
        response = evaluate_all(read_api, headers={"If-None-Match": '"9"'})
        assert response["statusCode"] == 200
        assert "ETag" not in headers_of(response)

    @pytest.mark.parametrize(
        ("body", "code"),
        [("nope", "PARSE_ERROR"), ("[]", "PARSE_ERROR"), ('{"context": false}', "INVALID_CONTEXT")],
    )
    def test_a_bad_body_is_400_without_a_key(self, read_api: ReadApi, ddb: Any, body: str, code: str) -> None:
        response = evaluate_all(read_api, body)
        assert response["statusCode"] == 400
        assert set(body_of(response)) == {"errorCode", "errorDetails"}
        assert body_of(response)["errorCode"] == code

    def test_the_bulk_body_is_json_the_providers_parse(self, read_api: ReadApi, put_flags: Any) -> None:
        put_flags(version=1)
        text = evaluate_all(read_api)["body"]
        assert json.loads(text)["flags"][0]["variant"] == "stored"


class TestTheSameBodyAgain:
    def test_a_body_accepted_once_is_accepted_again_and_a_bad_one_still_refused(
        self, read_api: ReadApi, put_flags: Any
    ) -> None:
        # Given a provider that resends the same context, then a bad one, then the first again
        put_flags(version=2)
        good, bad = {"context": {"targetingKey": "u1"}}, {"context": "u1"}
        answers = [evaluate(read_api, "signup_enabled", body)["statusCode"] for body in (good, good, bad, bad, good)]
        # Then each is judged on its own: the bad one is refused every time
        assert answers == [200, 200, 400, 400, 200]
