"""The write API reads JSON bodies only: any other Content-Type is a 415 in the error contract, never a 5xx."""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags.keys import singleton_key

BODY = json.dumps({"flags": {"signup_enabled": False}, "reason": "content type test"})


def _version(ddb: Any, table_name: str) -> str:
    item = ddb.get_item(TableName=table_name, Key=singleton_key())["Item"]
    return item["schema_version"]["N"]


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", BODY),
        ("multipart/form-data", BODY),  # no boundary: Powertools' parser raises ValueError
        ("multipart/form-data; boundary=x", '--x\r\nContent-Disposition: form-data; name="reason"\r\n\r\nr\r\n--x--'),
        ("application/x-www-form-urlencoded", "reason=x&flags=1"),
        ("application/xml", "<flags/>"),
    ],
)
@pytest.mark.parametrize(("method", "path"), [("PATCH", "/flags"), ("POST", "/flags/revert")])
def test_a_body_that_is_not_json_is_415_and_writes_nothing(
    write_api, ddb, table_name, make_event, lambda_context, content_type, body, method, path
) -> None:
    # Given a seeded table / When a write arrives with a non-JSON Content-Type
    before = _version(ddb, table_name)
    event = make_event(method, path, headers={"Content-Type": content_type}, body=body)
    response = write_api.handler(event, lambda_context)
    # Then it is refused with 415 in the error contract, and nothing changed
    assert response["statusCode"] == 415
    error = json.loads(response["body"])["error"]
    assert error["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert content_type.split(";")[0] in error["message"]
    assert _version(ddb, table_name) == before


@pytest.mark.parametrize("content_type", [None, "application/json", "application/json; charset=utf-8"])
def test_json_bodies_are_accepted(write_api, make_event, lambda_context, content_type) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = write_api.handler(make_event("PATCH", "/flags", headers=headers, body=BODY), lambda_context)
    assert response["statusCode"] == 200
