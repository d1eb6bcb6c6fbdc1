"""Unaudited writes on DynamoDB Local with the table's stream on, as the local runner reads it (``GET /_events``):
a write through the API commits its audit record and is quiet; an UpdateItem around the API, bumping the version
with no record, is reported with its version.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from local.api import LocalApi, Request
from local.events import StreamEvents
from local.functions import Functions
from singleton_flags.keys import VERSION_ATTR, singleton_key
from singleton_flags_infra.config import load_config
from tests.support.events import invocation_context, rest_event


@pytest.fixture
def patch(write_function: ModuleType) -> Callable[..., dict[str, Any]]:
    def call(body: dict[str, Any]) -> dict[str, Any]:
        response = write_function.handler(rest_event("PATCH", "/flags", body=body), invocation_context())
        assert response["statusCode"] == 200, response["body"]
        answer: dict[str, Any] = json.loads(response["body"])
        return answer

    return call


@pytest.fixture
def runner_events(flags_table: str, local_endpoint: str) -> LocalApi:
    stream = StreamEvents(flags_table, "prod", endpoint_url=local_endpoint)
    return LocalApi(Functions({}), load_config(), {"openapi": "3.1.0", "paths": {}}, events=stream)


def read_events(api: LocalApi) -> dict[str, Any]:
    response = api.handle(Request(method="GET", raw_path="/_events", query="", headers=[], body=b""))
    assert response.status == 200, response.body
    body: dict[str, Any] = json.loads(response.body)
    return body


def test_an_update_around_the_api_is_reported_and_an_audited_patch_is_not(
    patch: Callable[..., dict[str, Any]], runner_events: LocalApi, ddb_local: Any, flags_table: str
) -> None:
    # Given a PATCH through the API (version 1, audited in its transaction)
    assert patch({"flags": {"signup_enabled": False}, "reason": "launch"})["version"] == 1
    first = read_events(runner_events)
    assert [event["detail"]["version"] for event in first["events"]] == [1]
    assert first["errors"] == []
    # When someone with table rights bumps the version with UpdateItem, around the API
    ddb_local.update_item(
        TableName=flags_table,
        Key=singleton_key(),
        UpdateExpression=f"SET {VERSION_ATTR} = :two, signup_enabled = :on",
        ExpressionAttributeValues={":two": {"N": "2"}, ":on": {"BOOL": True}},
    )
    # Then it is no event, and it is reported as an unaudited write of version 2 with no record
    after = read_events(runner_events)
    assert [event["detail"]["version"] for event in after["events"]] == [1]
    (reported,) = after["errors"]
    assert reported.startswith("unaudited write to the flags item: ")
    fields = json.loads(reported.split(": ", 1)[1])
    assert (fields["version"], fields["record_missing"]) == (2, True)
