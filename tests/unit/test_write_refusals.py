"""Refusals of the write function (PATCH /flags, history, revert, unsupported routes), on moto.

Every refusal checks its status, its error code (and the flag and rule where there is one) and that the
singleton and the audit trail are exactly as they were (a consistent GetItem + Query before and after).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags_service.writes.audit import encode_cursor
from tests.support.unit import (
    REASON,
    WriteApi,
    assert_refused,
    body_of,
    headers_of,
)

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


# -- history and revert refusals -----------------------------------------------------------------------


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "1.5", "", "000", "00101", "\u0665", "+5"])
def test_history_refuses_a_bad_limit(api: WriteApi, limit: str) -> None:
    before = api.state()
    response = api.history(limit=limit)
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule="limit")


@pytest.mark.parametrize(("limit", "records"), [("00001", 1), ("0" * 200 + "2", 2), ("0100", 2)])
def test_a_limit_in_ascii_digits_may_have_leading_zeros(api: WriteApi, limit: str, records: int) -> None:
    api.patch({"signup_enabled": False})
    response = api.history(limit=limit)
    assert response["statusCode"] == 200, response["body"]
    assert len(body_of(response)["records"]) == records


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


# -- the fields of a request -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "model"),
    [
        ("PATCH", "/flags", "PatchRequest"),
        ("POST", "/flags/revert", "RevertRequest"),
        ("POST", "/flags/restore", "RestoreRequest"),
        ("POST", "/flags/schedules", "ScheduleRequest"),
    ],
)
def test_an_unknown_field_is_refused_naming_the_fields_the_requests_model_declares(
    api: WriteApi, method: str, path: str, model: str
) -> None:
    # Given a body with a field no request of that route has
    before = api.state()
    response = api(method, path, body={"reason": REASON, "force": True})
    # Then it is refused by the fields rule, which lists the request model's own fields (their one statement)
    error = assert_refused(api, response, before, 400, "INVALID_REQUEST", rule="fields")
    expected = sorted(api.module.MODELS[model].model_fields)
    assert error["message"] == f"unknown field(s) ['force']; expected {expected}"
