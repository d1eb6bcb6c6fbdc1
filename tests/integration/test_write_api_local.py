"""The write function end to end on DynamoDB Local: AWS's engine checks every expression moto might let pass.

The store and reader are built with ``singleton_flags.aws.dynamodb_client`` while ``AWS_ENDPOINT_URL_DYNAMODB``
points at DynamoDB Local, so this also proves that the functions' clients follow botocore's endpoint variable.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from singleton_flags.declarations import Declarations
from singleton_flags.keys import MAINTENANCE_DEADLINE_ATTR, MAINTENANCE_OWNER_ATTR, VERSION_ATTR, singleton_key
from singleton_flags_service.writes.store import FlagStore, Ownership
from tests.support.events import invocation_context, rest_event
from tests.support.tables import read_singleton, read_trail

Call = Callable[..., tuple[int, dict[str, Any], dict[str, str]]]


@pytest.fixture
def call(write_function: ModuleType) -> Call:
    """Invoke the write function (store and reader on a client resolved from the environment)."""
    module = write_function

    def invoke(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, **query: str):
        event = rest_event(method, path, body=body, headers=headers, query=query)
        response = module.handler(event, invocation_context())
        single = {name: values[-1] for name, values in (response.get("multiValueHeaders") or {}).items()}
        return response["statusCode"], json.loads(response["body"]), {**(response.get("headers") or {}), **single}

    return invoke


def patch(call: Call, flags: dict[str, Any], **headers: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    return call("PATCH", "/flags", {"flags": flags, "reason": "integration"}, headers or None)


def test_patch_if_match_and_no_op_on_the_real_engine(call: Call, ddb_local: Any, flags_table: str) -> None:
    status, body, headers = patch(call, {"signup_enabled": False, "api_rate_limit_per_minute": 1200})
    assert (status, body["version"], headers["ETag"]) == (200, 1, '"1"')
    status, body, _ = patch(call, {"signup_enabled": False})
    assert (status, body["applied"], body["version"]) == (200, False, 1)
    status, body, headers = patch(call, {"trace_sample_rate": 0.5}, **{"If-Match": '"0"'})
    assert (status, body["error"]["current_version"], headers["ETag"]) == (412, 1, '"1"')
    status, body, _ = patch(call, {"trace_sample_rate": 0.5}, **{"If-Match": '"1"'})
    assert (status, body["version"], body["flags"]["trace_sample_rate"]) == (200, 2, 0.5)
    assert read_singleton(ddb_local, flags_table)[VERSION_ATTR] == {"N": "2"}
    assert len(read_trail(ddb_local, flags_table)) == 2


def test_history_pages_and_revert_on_the_real_engine(call: Call) -> None:
    for rate in range(701, 706):  # versions 1..5
        patch(call, {"api_rate_limit_per_minute": rate})
    versions, cursor = [], None
    while True:
        status, body, _ = call("GET", "/flags/history", limit="2", **({"cursor": cursor} if cursor else {}))
        assert status == 200
        versions += [record["version"] for record in body["records"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert versions == [5, 4, 3, 2, 1]
    status, body, _ = call("POST", "/flags/revert", {"version": 2, "reason": "back to 702"})
    assert (status, body["version"], body["flags"]["api_rate_limit_per_minute"]) == (200, 6, 702)
    _, body, _ = call("GET", "/flags/history", limit="1")
    assert (body["records"][0]["kind"], body["records"][0]["reverted_to"]) == ("revert", 2)


def test_a_manual_switch_removes_the_windows_ownership_on_the_real_engine(
    call: Call, ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    FlagStore(ddb_local, flags_table, declarations).change(
        {"maintenance_mode": True}, actor="scheduler", reason="window", ownership=Ownership("nightly", 2_000_000_000)
    )
    status, _, _ = patch(call, {"maintenance_mode": False})
    item = read_singleton(ddb_local, flags_table)
    assert status == 200 and item["maintenance_mode"] == {"BOOL": False}
    assert MAINTENANCE_OWNER_ATTR not in item and MAINTENANCE_DEADLINE_ATTR not in item


def test_a_write_after_the_singleton_was_deleted_restores_the_trail_then_applies(
    call: Call, ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given versions 1 and 2, then the item deleted
    patch(call, {"signup_enabled": False})
    patch(call, {"ai_search_enabled": True})
    ddb_local.delete_item(TableName=flags_table, Key=singleton_key())
    # When a PATCH comes / Then one transaction restores version 2's state as version 3 and applies the change as 4
    status, body, headers = patch(call, {"search_ranking": "hybrid"})
    assert (status, body["version"], headers["ETag"]) == (200, 4, '"4"'), body
    expected = {
        **declarations.initials(),
        "signup_enabled": False,
        "ai_search_enabled": True,
        "search_ranking": "hybrid",
    }
    assert body["flags"] == expected
    trail = read_trail(ddb_local, flags_table)
    assert [(int(r["version"]["N"]), r["kind"]["S"]) for r in trail] == [
        (1, "change"),
        (2, "change"),
        (3, "restore"),
        (4, "change"),
    ]
