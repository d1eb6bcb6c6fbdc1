"""The local runner's ``GET /_events`` on the embedded moto: the table's stream read through the deployed
publisher, each audit record once; a table without a stream is said, not a crash (DynamoDB Local:
tests/integration/test_change_events_local.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from local.api import LocalApi, Request
from local.backend import prepare_table
from local.events import StreamEvents
from local.functions import Functions
from singleton_flags.declarations import Declarations
from singleton_flags_infra.config import load_config
from singleton_flags_infra.table import table_definition
from singleton_flags_service.writes.store import FlagStore


def api_over(stream: StreamEvents | None) -> LocalApi:
    return LocalApi(Functions({}), load_config(), {"openapi": "3.1.0", "paths": {}}, events=stream)


def get(api: LocalApi, method: str = "GET") -> tuple[int, dict[str, Any], dict[str, str]]:
    response = api.handle(Request(method=method, raw_path="/_events", query="", headers=[], body=b""))
    return response.status, json.loads(response.body), dict(response.headers)


def test_each_committed_version_is_one_event_however_often_the_runner_is_asked(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    store = FlagStore(ddb, table_name, declarations)
    store.seed(actor="local-runner", reason="start")
    api = api_over(StreamEvents(table_name, "local"))
    store.change({"ai_search_enabled": True}, actor="local-admin", reason="demo")
    status, body, _ = get(api)
    assert status == 200
    assert [event["detail"]["version"] for event in body["events"]] == [1]
    (event,) = body["events"]
    assert event["detail"]["changes"] == {"ai_search_enabled": {"old": False, "new": True}}
    assert (event["event-bus-name"], event["detail"]["stage"]) == ("singleton-flags-local", "local")
    store.revert(0, actor="local-admin", reason="undo")
    _, body, _ = get(api)
    assert [event["detail"]["version"] for event in body["events"]] == [1, 2]
    _, again, _ = get(api)
    assert again == body


def test_a_table_without_a_stream_is_a_503_that_says_so(ddb: Any, declarations: Declarations) -> None:
    params = table_definition().create_table_params("no-stream")
    del params["StreamSpecification"]
    ddb.create_table(**params)
    status, body, _ = get(api_over(StreamEvents("no-stream", "local")))
    assert status == 503
    assert body["error"]["code"] == "EVENTS_UNAVAILABLE"
    assert "has no NEW_IMAGE stream" in body["error"]["message"]


def test_the_runner_turns_on_the_stream_of_a_table_made_without_one(ddb: Any, declarations: Declarations) -> None:
    params = table_definition().create_table_params("older")
    del params["StreamSpecification"]
    ddb.create_table(**params)
    assert prepare_table("older", "FLAGS#V1", declarations, "moto") is False
    assert ddb.describe_table(TableName="older")["Table"]["StreamSpecification"] == {
        "StreamEnabled": True,
        "StreamViewType": "NEW_IMAGE",
    }
    FlagStore(ddb, "older", declarations).change({"ai_search_enabled": True}, actor="a", reason="r")
    _, body, _ = get(api_over(StreamEvents("older", "local")))
    assert [event["detail"]["version"] for event in body["events"]] == [1]


@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_events_is_read_only(method: str) -> None:
    status, body, headers = get(api_over(None), method)
    assert (status, body["error"]["code"], headers["Allow"]) == (405, "METHOD_NOT_ALLOWED", "GET")
