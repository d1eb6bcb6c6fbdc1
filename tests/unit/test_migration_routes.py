"""The migration of the flags item through the write function (moto): POST /flags/migration writes FLAGS#V2 at
L+1 and answers what V1 readers serve as fallbacks, GET /flags/migration shows the migration from either side,
POST /flags/migration/finalise supersedes V1; every bad body and every refusal changes nothing."""

from __future__ import annotations

import copy
import time
from typing import Any

import boto3
import pytest

from singleton_flags.declarations import Declarations
from singleton_flags.keys import MIGRATED_TO_ATTR, SUPERSEDED_BY_ATTR, singleton_key
from singleton_flags_service import work
from singleton_flags_service.guards.items import GuardSpec
from singleton_flags_service.guards.writes import NewGuard
from singleton_flags_service.schedules.apply import ScheduledChangeRunner
from singleton_flags_service.schedules.changes import ScheduleItems
from singleton_flags_service.schedules.timing import parse_schedule_time
from tests.conftest import REGION, SCHEDULE_GROUP
from tests.support.migration import GOOD, new_declarations
from tests.support.unit import WriteApi, body_of

MIGRATION = "/flags/migration"
V1, V2 = "FLAGS#V1", "FLAGS#V2"


def migrate(api: WriteApi, service: Declarations, **body: Any) -> dict[str, Any]:
    """POST /flags/migration of the service's declarations to GOOD's new shape, with ``body``'s fields instead."""
    sent = {"declarations": new_declarations(service).document(), "mapping": GOOD, "reason": "to V2"}
    sent.update(body)
    return api("POST", MIGRATION, body=sent)


def table_items(api: WriteApi) -> list[dict[str, Any]]:
    return sorted(api.client.scan(TableName=api.table)["Items"], key=lambda item: (item["PK"]["S"], item["SK"]["S"]))


def item(api: WriteApi, sort_key: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = api.client.get_item(
        TableName=api.table, Key=singleton_key(sort_key), ConsistentRead=True
    ).get("Item")
    return found


def error_of(response: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = body_of(response)["error"]
    return {"status": response["statusCode"], **error}


def test_a_migration_answers_v2_at_l_plus_1_its_values_and_the_v1_readers_fallbacks(
    api: WriteApi, declarations: Declarations
) -> None:
    # Given V1 with live values at version 2
    api.patch({"api_rate_limit_per_minute": 1200, "search_ranking": "semantic"})
    # When the service's V1 is migrated to V2 (one rename, one int -> float, one removal, one new flag)
    response = migrate(api, declarations)
    # Then 201: V2 at version 3, in the new shape
    assert response["statusCode"] == 201, body_of(response)
    answer = body_of(response)
    assert (answer["version"], answer["item"], answer["attempts"]) == (3, V2, 1)
    assert answer["flags"]["ranking_strategy"] == "semantic"
    assert answer["flags"]["api_rate_limit_per_minute"] == 1200.0
    assert answer["flags"]["assistant_enabled"] is True
    assert "ai_search_enabled" not in answer["flags"] and "search_ranking" not in answer["flags"]
    # And the removed flag is the one a V1 reader serves as its fallback, with why
    (fallback,) = answer["v1_reader_fallbacks"]
    assert (fallback["flag"], fallback["fallback"]) == ("ai_search_enabled", declarations["ai_search_enabled"].fallback)
    assert "removed" in fallback["why"]
    # And the migration is expanding, from V1 at version 3, by the caller, with the mapping as sent
    migration = answer["migration"]
    assert (migration["source"], migration["target"], migration["state"], migration["migrated_at"]) == (
        V1,
        V2,
        "expanding",
        3,
    )
    assert (migration["reason"], migration["mapping"], migration["ended_at"]) == ("to V2", GOOD, None)
    assert migration["actor"].startswith("arn:aws:")
    # And V1 points to V2 in the table
    v1 = item(api, V1)
    assert v1 is not None and v1[MIGRATED_TO_ATTR] == {"S": V2}


def test_get_migration_shows_it_from_v1_until_and_after_it_is_finalised(
    api: WriteApi, declarations: Declarations
) -> None:
    # Given no migration: 404 naming the service's item
    missing = api("GET", MIGRATION)
    assert (error_of(missing)["status"], error_of(missing)["code"], error_of(missing)["item"]) == (
        404,
        "MIGRATION_NOT_FOUND",
        V1,
    )
    # When V1 is migrated
    assert migrate(api, declarations)["statusCode"] == 201
    # Then GET shows it expanding, seen from V1
    expanding = body_of(api("GET", MIGRATION))["migration"]
    assert (expanding["item"], expanding["target"], expanding["state"]) == (V1, V2, "expanding")
    # When it is finalised
    finalised = api("POST", MIGRATION + "/finalise", body={"reason": "every reader on V2"})
    # Then it is finalised, by whom and why, and V1 is superseded by V2
    assert finalised["statusCode"] == 200, body_of(finalised)
    record = body_of(finalised)["migration"]
    assert (record["state"], record["end_reason"]) == ("finalised", "every reader on V2")
    assert record["ended_by"] == expanding["actor"] and record["ended_at"]
    v1 = item(api, V1)
    assert v1 is not None and v1[SUPERSEDED_BY_ATTR] == {"S": V2}
    # And GET still shows it from V1 (its pointer names the record)
    assert body_of(api("GET", MIGRATION))["migration"]["state"] == "finalised"


def test_get_migration_finds_it_from_the_later_item_too(api: WriteApi, declarations: Declarations) -> None:
    from singleton_flags_service.api import migration_routes

    # Given V1 migrated to V2
    assert migrate(api, declarations)["statusCode"] == 201
    # When the migration is looked up as a service configured for V2 does
    record = migration_routes.find_migration(api.client, api.table, V2)
    # Then it finds the same record, keyed by V2
    assert record is not None
    view = migration_routes.migration_view(record, V2)
    assert (view["item"], view["source"], view["target"], view["state"]) == (V2, V1, V2, "expanding")


def test_get_migration_finds_it_while_the_configured_item_is_missing(api: WriteApi, declarations: Declarations) -> None:
    # Given V1 migrated to V2, then V1 deleted while the migration expands
    assert migrate(api, declarations)["statusCode"] == 201
    api.client.delete_item(TableName=api.table, Key=singleton_key(V1))
    # When GET /flags/migration is asked through the V1 stack
    answer = api("GET", MIGRATION)
    # Then it names the migration the newest version was written through, expanding
    assert answer["statusCode"] == 200, body_of(answer)
    assert (body_of(answer)["migration"]["target"], body_of(answer)["migration"]["state"]) == (V2, "expanding")


@pytest.mark.parametrize(
    ("body", "rule", "field", "says"),
    [
        ({"declarations": {"flags": "nope"}}, "declarations", "declarations", "declarations: "),
        ({"declarations": None}, "declarations", "declarations", "declarations: "),
        ({"mapping": {**GOOD, "mapping_version": 2}}, "mapping", "mapping", "mapping: 'mapping_version' must be 1"),
        (
            {"mapping": {**GOOD, "flags": {**GOOD["flags"], "search_ranking": {"rename": "nowhere"}}}},
            "mapping",
            None,
            "nowhere",
        ),
        ({"mapping": {**GOOD, "from": "FLAGS#V3", "to": "FLAGS#V4"}}, "mapping", None, "FLAGS#V3"),
        ({"reason": "  "}, "reason", None, "'reason' is required"),
        ({"dry_run": True}, "dry_run", "dry_run", "flagctl migrate --dry-run"),
        ({"dry_run": False}, "dry_run", "dry_run", "flagctl migrate --dry-run"),
        ({"extra": 1}, "fields", None, "unknown field(s) ['extra']"),
    ],
)
def test_a_bad_migration_body_is_400_naming_the_field_and_writes_nothing(
    api: WriteApi, declarations: Declarations, body: dict[str, Any], rule: str, field: str | None, says: str
) -> None:
    # Given the table as it is
    before = copy.deepcopy(table_items(api))
    # When a migration is sent with one thing wrong
    error = error_of(migrate(api, declarations, **body))
    # Then 400 INVALID_REQUEST naming the rule (and the field), and nothing was written
    assert (error["status"], error["code"], error["rule"]) == (400, "INVALID_REQUEST", rule), error
    if field is not None:
        assert error["field"] == field
    assert says in error["message"]
    assert table_items(api) == before


def test_a_value_that_does_not_convert_refuses_the_migration_naming_each_cause(
    api: WriteApi, declarations: Declarations
) -> None:
    # Given a mapping that turns the float sample rate into an int, exactly, while it holds 0.05
    new = new_declarations(
        declarations, trace_sample_rate={"name": "trace_sample_rate", "type": "int", "initial": 0, "fallback": 0}
    )
    mapping = {**GOOD, "flags": {**GOOD["flags"], "trace_sample_rate": {"convert": "float_to_int"}}}
    before = copy.deepcopy(table_items(api))
    # When it is sent
    error = error_of(migrate(api, declarations, declarations=new.document(), mapping=mapping))
    # Then 409 MIGRATION_REFUSED lists the value that does not convert, and nothing was written
    assert (error["status"], error["code"]) == (409, "MIGRATION_REFUSED")
    (cause,) = error["refused"]
    assert (cause["cause"], cause["flag"]) == ("not_convertible", "trace_sample_rate")
    assert table_items(api) == before


def test_a_pending_scheduled_change_refuses_the_migration(api: WriteApi, declarations: Declarations) -> None:
    # Given a pending scheduled change (its item in the table)
    schedule = "20990101T000000Z-3f9a1c2b"
    ScheduleItems(api.client, api.table, retention_seconds=86400).put_pending(
        schedule,
        {"ai_search_enabled": False},
        "later",
        parse_schedule_time("2099-01-01T00:00:00Z", None),
        None,
        "alice",
        0.0,
    )
    # When a migration is sent
    error = error_of(migrate(api, declarations))
    # Then it is refused, naming the scheduled change, and V2 was not written
    assert (error["status"], error["code"]) == (409, "MIGRATION_REFUSED")
    assert [(cause["cause"], cause["schedule"]) for cause in error["refused"]] == [
        ("scheduled_change_pending", schedule)
    ]
    assert item(api, V2) is None


def test_a_write_through_v1_while_it_expands_never_labels_the_removed_flags_fallback_static(
    api: WriteApi, declarations: Declarations
) -> None:
    # Given V1 migrated to V2, which no longer holds ai_search_enabled
    assert migrate(api, declarations)["statusCode"] == 201
    # When a flag is changed through the stack still deployed for V1
    answer = api("PATCH", "/flags", body={"flags": {"signup_enabled": False}, "reason": "r"})
    # Then the answer names the removed flag as served from its fallback, as a V1 reader reads it
    body = body_of(answer)
    assert (answer["statusCode"], body["reason"], body["fallen_back"]) == (200, "STATIC", ["ai_search_enabled"])
    assert body["flags"]["ai_search_enabled"] == declarations["ai_search_enabled"].fallback


def test_while_it_expands_a_schedule_of_a_flag_the_migration_removed_is_refused_at_creation(
    api: WriteApi, declarations: Declarations
) -> None:
    # Given V1 migrated to V2 (which no longer has ai_search_enabled), the stack still deployed for V1
    boto3.client("scheduler", region_name=REGION).create_schedule_group(Name=SCHEDULE_GROUP)
    assert migrate(api, declarations)["statusCode"] == 201
    before = table_items(api)
    # When a change of the removed flag is scheduled through it
    at = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(time.time() + 30 * 86400))
    answer = api("POST", "/flags/schedules", body={"flags": {"ai_search_enabled": True}, "reason": "r", "at": at})
    # Then it is refused as the write itself would be, naming V2, and nothing is stored
    error = error_of(answer)
    assert (error["status"], error["code"], error["migrated_to"]) == (409, "FLAGS_MIGRATED", V2)
    assert "ai_search_enabled" in error["message"] and table_items(api) == before


LOWER_LIMIT = {"name": "api_rate_limit_per_minute", "type": "float", "initial": 600.0, "fallback": 60.0, "max": 1000.0}


@pytest.mark.parametrize(
    ("flags", "cause"),
    [
        ({"ai_search_enabled": True}, "removed by the migration"),
        ({"api_rate_limit_per_minute": 5000}, "which refuses it"),  # V2 declares at most 1000
    ],
    ids=["removed-flag", "value-the-later-item-refuses"],
)
def test_a_scheduled_delivery_that_cannot_land_ends_failed_with_its_cause(
    api: WriteApi, declarations: Declarations, flags: dict[str, Any], cause: str
) -> None:
    # Given V1 migrated to V2, and a change scheduled through the V1 stack while the migration committed
    v2 = new_declarations(declarations, api_rate_limit_per_minute=LOWER_LIMIT)
    assert migrate(api, declarations, declarations=v2.document())["statusCode"] == 201
    schedule = "20990101T000000Z-3f9a1c2b"
    items = ScheduleItems(api.client, api.table, retention_seconds=86400)
    when = parse_schedule_time("2099-01-01T00:00:00Z", None)
    items.put_pending(schedule, flags, "later", when, None, "alice", 0.0)
    # When it is delivered
    runner = ScheduledChangeRunner(api.module.STORE, items, api.module.DECLARATIONS)
    outcome = runner.handle({"scheduled_change": schedule})
    # Then it ends failed, saying why, and a second delivery does nothing
    found = items.get(schedule)
    assert (outcome.status, found.status if found else None) == ("failed", "failed"), outcome
    assert cause in outcome.detail
    assert runner.handle({"scheduled_change": schedule}).status == "not_pending"


def test_work_created_while_the_migrations_transaction_is_in_flight_never_escapes_it(
    api: WriteApi, declarations: Declarations, monkeypatch: pytest.MonkeyPatch
) -> None:
    from singleton_flags_service.api import migration_routes

    # Given a scheduled change created right after the migration looked for pending work, before it commits
    schedule = "20990101T000000Z-3f9a1c2b"
    items = ScheduleItems(api.client, api.table, retention_seconds=86400)
    look = migration_routes.pending_work

    def looked_then_created(schedules: Any, guards: Any) -> list[dict[str, Any]]:
        found = look(schedules, guards)
        if items.get(schedule) is None:
            when = parse_schedule_time("2099-01-01T00:00:00Z", None)
            items.put_pending(schedule, {"signup_enabled": False}, "in flight", when, None, "bob", 0.0)
        return found

    monkeypatch.setattr(migration_routes, "pending_work", looked_then_created)
    # When the migration is sent
    error = error_of(migrate(api, declarations))
    # Then its transaction does not commit past the new work: read again, it is refused naming it
    assert (error["status"], error["code"]) == (409, "MIGRATION_REFUSED"), error
    assert [(cause["cause"], cause["schedule"]) for cause in error["refused"]] == [
        ("scheduled_change_pending", schedule)
    ]
    assert item(api, V2) is None


def test_each_kind_of_pending_work_counts_itself_created() -> None:
    guard = NewGuard(GuardSpec(("an-alarm",), 30), "t", "alice", 0.0, 86400, None)  # type: ignore[arg-type]
    assert work.created("t") in guard.companions(3, 0.0)
    assert work.none_created_since("t", 2)["ConditionCheck"]["ExpressionAttributeValues"] == {":count": {"N": "2"}}


def test_a_second_migration_is_refused_naming_the_first(api: WriteApi, declarations: Declarations) -> None:
    assert migrate(api, declarations)["statusCode"] == 201
    error = error_of(migrate(api, declarations))
    assert (error["status"], error["code"], error["migrated_to"]) == (409, "FLAGS_MIGRATED", V2)


def test_finalising_without_a_migration_is_refused(api: WriteApi) -> None:
    error = error_of(api("POST", MIGRATION + "/finalise", body={"reason": "nothing to do"}))
    assert (error["status"], error["code"], error["refused"][0]["cause"]) == (409, "MIGRATION_REFUSED", "no_migration")


def test_finalising_needs_a_reason(api: WriteApi, declarations: Declarations) -> None:
    assert migrate(api, declarations)["statusCode"] == 201
    error = error_of(api("POST", MIGRATION + "/finalise", body={}))
    assert (error["status"], error["code"], error["rule"]) == (400, "INVALID_REQUEST", "reason")
    assert body_of(api("GET", MIGRATION))["migration"]["state"] == "expanding"


def test_a_rollback_makes_v1_live_again_and_get_migration_says_rolled_back(
    api: WriteApi, declarations: Declarations
) -> None:
    # Given V1 migrated
    assert migrate(api, declarations)["statusCode"] == 201
    # When it is rolled back
    rolled = api("POST", MIGRATION + "/rollback", body={"reason": "not yet"})
    # Then the record says so, V1 points nowhere and V2 is superseded by V1
    assert rolled["statusCode"] == 200, body_of(rolled)
    assert (body_of(rolled)["migration"]["state"], body_of(rolled)["migration"]["end_reason"]) == (
        "rolled_back",
        "not yet",
    )
    v1, v2 = item(api, V1), item(api, V2)
    assert v1 is not None and MIGRATED_TO_ATTR not in v1
    assert v2 is not None and v2[SUPERSEDED_BY_ATTR] == {"S": V1}
    # And a second rollback is refused: nothing expands any more
    again = api("POST", MIGRATION + "/rollback", body={"reason": "twice"})
    assert (error_of(again)["status"], error_of(again)["code"]) == (409, "MIGRATION_REFUSED")
