"""The write function through ``singleton_flags_service.handlers.write_api.handler`` with API Gateway REST proxy events,
on moto:
what an accepted write, a history page and a revert store and answer (refusals: test_write_refusals.py,
limits and failures: test_write_failures.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags.keys import (
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_OWNER_ATTR,
    SORT_KEY,
    TTL_ATTR,
    UPDATED_BY_ATTR,
    VERSION_ATTR,
    singleton_key,
)
from singleton_flags_service.vocabulary import CACHED
from singleton_flags_service.writes.store import Ownership
from tests.support.unit import (
    CALLER,
    REASON,
    RETENTION_SECONDS,
    START,
    Clock,
    WriteApi,
    body_of,
    count_calls,
    headers_of,
)

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
    assert update["ConditionExpression"] == "#version = :current AND attribute_not_exists(#superseded)"
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


def test_a_write_to_a_missing_singleton_reseeds_it_whole_first(unseeded_api: WriteApi) -> None:
    # Given a table without the singleton (and no history)
    api, module = unseeded_api, unseeded_api.module
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
