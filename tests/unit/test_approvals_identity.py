"""Who is calling, locally and deployed: the runner's X-Local-Actor header sets the caller API Gateway would
report, and never reaches a function (a deployed function reads the caller from the request context alone:
``tests/unit/test_approvals_routes.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from local.api import LOCAL_ACTOR_HEADER, LocalApi
from local.gateway import Request
from singleton_flags_infra.config import load_config
from tests.support.approvals import ALICE, BOB

REQUESTS = "/flags/change-requests"


class RecordingFunctions:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def invoke(self, function: str, event: Any, request_id: str | None = None) -> Any:
        self.events.append(event)
        return {"statusCode": 200, "headers": {}, "body": "{}"}


def send(headers: list[tuple[str, str]]) -> tuple[Any, RecordingFunctions]:
    functions = RecordingFunctions()
    api = LocalApi(functions, load_config(), {"openapi": "3.1.0", "paths": {}})  # type: ignore[arg-type]
    answer = api.handle(Request(method="GET", raw_path=REQUESTS, query="", headers=headers, body=b""))
    return answer, functions


def test_the_runner_acts_as_the_identity_its_header_names_and_forwards_no_header():
    answer, functions = send([(LOCAL_ACTOR_HEADER.lower(), BOB), ("Accept", "application/json")])
    assert answer.status == 200
    (event,) = functions.events
    assert event["requestContext"]["identity"]["userArn"] == BOB
    assert LOCAL_ACTOR_HEADER.lower() not in {name.lower() for name in event["multiValueHeaders"]}
    assert LOCAL_ACTOR_HEADER.lower() not in {name.lower() for name in event["headers"]}


def test_without_the_header_the_runner_is_its_local_admin():
    _, functions = send([])
    (event,) = functions.events
    assert event["requestContext"]["identity"]["userArn"].endswith(":user/local-admin")


@pytest.mark.parametrize(
    "headers",
    [
        [(LOCAL_ACTOR_HEADER, "bob")],
        [(LOCAL_ACTOR_HEADER, BOB), (LOCAL_ACTOR_HEADER, ALICE)],
        [(LOCAL_ACTOR_HEADER, "")],
    ],
)
def test_a_bad_local_actor_is_400_and_invokes_nothing(headers: list[tuple[str, str]]):
    answer, functions = send(headers)
    assert answer.status == 400
    assert functions.events == []
