"""The write function's rules about versions, maintenance ownership, restores and reverts, on moto.

One version names one state: a revert that changes nothing writes nothing, a lost item comes back from its
trail at a new version (never the initial values at an old one), and the maintenance window that holds
maintenance keeps it through reverts that do not change what readers see.
"""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags.keys import (
    AUDIT_PK,
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_OWNER_ATTR,
    PARTITION_KEY,
    VERSION_ATTR,
    singleton_key,
)
from singleton_flags_service.writes.store import FlagStore, Ownership
from tests.support.unit import START, Clock, WriteApi, assert_refused, body_of, headers_of

WINDOW = "nightly"


def start_window(api: WriteApi, deadline: float = START + 3600) -> int:
    """What the maintenance function writes at a window's start; returns the new version."""
    result = api.module.STORE.change(
        {"maintenance_mode": True},
        actor=f"scheduler:{WINDOW}",
        reason="window starts",
        ownership=Ownership(owner=WINDOW, deadline=deadline),
        kind="window-start",
    )
    assert result.applied
    return result.snapshot.version


def end_window(api: WriteApi) -> bool:
    """The window's end, as the maintenance function decides it: only if the window still holds maintenance."""
    result = api.module.STORE.change(
        {"maintenance_mode": False},
        actor=f"scheduler:{WINDOW}",
        reason="window ends",
        ownership=Ownership(owner=None),
        condition=lambda snapshot: snapshot.maintenance_owner == WINDOW,
        kind="window-end",
    )
    return result.applied


def records(api: WriteApi) -> list[dict[str, Any]]:
    _, trail = api.state()
    return sorted(trail, key=lambda record: int(record["version"]["N"]))


# -- audit records -------------------------------------------------------------------------------------


def test_audit_records_live_in_their_own_partition_and_hold_the_maintenance_bookkeeping(api: WriteApi) -> None:
    # Given a window holding maintenance
    version = start_window(api)
    # When its audit record is read / Then it is outside the singleton's partition, and its state names the holder
    record = records(api)[-1]
    # (literally: a read grant on the flags' partition, SETTINGS#APP, must not reach it through dynamodb:LeadingKeys)
    assert record[PARTITION_KEY] == {"S": "AUDIT#APP"} and AUDIT_PK != "SETTINGS#APP"
    assert int(record["version"]["N"]) == version
    state = record["state"]["M"]
    assert state[MAINTENANCE_OWNER_ATTR] == {"S": WINDOW}
    assert state[MAINTENANCE_DEADLINE_ATTR] == {"N": str(int(START + 3600))}
    assert record["token"]["S"]  # the transaction's ClientRequestToken: how a writer learns its own outcome


# -- revert and maintenance ownership ------------------------------------------------------------------


def test_a_revert_to_a_windows_version_leaves_the_window_holding_maintenance(api: WriteApi) -> None:
    # Given a window's start (version S), then an unrelated change
    started = start_window(api)
    api.patch({"search_ranking": "hybrid"})
    # When the flags are reverted to S
    response = api.revert(started)
    # Then search_ranking goes back, maintenance (same effective value) keeps its owner and deadline,
    # and the window's end still switches maintenance off
    assert response["statusCode"] == 200, body_of(response)
    assert body_of(response)["changed"] == {"search_ranking": {"old": "hybrid", "new": "classic"}}
    item, _ = api.state()
    assert item[MAINTENANCE_OWNER_ATTR] == {"S": WINDOW} and MAINTENANCE_DEADLINE_ATTR in item
    assert end_window(api) is True
    item, _ = api.state()
    assert item["maintenance_mode"] == {"BOOL": False}


def test_a_revert_after_a_windows_deadline_does_not_switch_maintenance_back_on(api: WriteApi, clock: Clock) -> None:
    # Given a window that held maintenance, an unrelated change, and the deadline passed (readers see it off)
    start_window(api, deadline=START + 60)
    changed = body_of(api.patch({"search_ranking": "hybrid"}))["version"]
    api.patch({"signup_enabled": False})
    clock.advance(120)
    # When the unrelated flag is reverted to the version before it
    response = api.revert(changed)
    # Then maintenance stays off for every reader: the answer says off, the item still holds the passed window
    body = body_of(response)
    assert response["statusCode"] == 200, body
    assert body["flags"]["maintenance_mode"] is False
    assert set(body["changed"]) == {"signup_enabled"}


def test_a_revert_that_changes_what_readers_see_of_maintenance_is_a_manual_switch(api: WriteApi) -> None:
    # Given maintenance off (version 1), then a window holding it on
    start_window(api)
    # When reverted to version 1 (maintenance off)
    response = api.revert(1)
    # Then maintenance is off by hand: owner and deadline gone, so the window's end finds nothing to end
    assert body_of(response)["changed"]["maintenance_mode"] == {"old": True, "new": False}
    item, _ = api.state()
    assert MAINTENANCE_OWNER_ATTR not in item and MAINTENANCE_DEADLINE_ATTR not in item
    assert end_window(api) is False


def test_a_revert_that_changes_no_value_writes_nothing(api: WriteApi) -> None:
    # Given the flags at version 1
    before = api.state()
    # When reverted to version 1 itself
    response = api.revert(1)
    # Then 200, not applied, same version and ETag, no new record
    body = body_of(response)
    assert (response["statusCode"], body["applied"], body["version"], body["changed"]) == (200, False, 1, {})
    assert headers_of(response)["ETag"] == '"1"'
    assert api.state() == before


def test_a_patch_naming_maintenance_takes_it_from_the_window_even_with_the_same_value(api: WriteApi) -> None:
    # Given a window holding maintenance / When an operator PATCHes maintenance_mode true (unchanged)
    start_window(api)
    response = api.patch({"maintenance_mode": True})
    # Then it is a manual takeover: a new version, owner and deadline removed
    assert body_of(response)["applied"] is True and body_of(response)["changed"] == {}
    item, _ = api.state()
    assert MAINTENANCE_OWNER_ATTR not in item and item["maintenance_mode"] == {"BOOL": True}


def test_revert_to_version_zero_restores_the_seeded_state(api: WriteApi) -> None:
    # Given version 1 (ai_search_enabled switched on) and a later change
    api.patch({"signup_enabled": False})
    # When reverted to 0
    response = api.revert(0)
    # Then every flag is back at its seeded value, as a new version recorded with reverted_to 0
    body = body_of(response)
    assert response["statusCode"] == 200, body
    assert body["flags"] == api.module.DECLARATIONS.initials()
    assert body["version"] == 3 and records(api)[-1]["reverted_to"] == {"N": "0"}


# -- effective state in every answer --------------------------------------------------------------------


def test_a_patch_answer_honours_a_passed_window_deadline(api: WriteApi, clock: Clock) -> None:
    # Given a window whose deadline has passed (GET /flags says maintenance off)
    start_window(api, deadline=START + 60)
    clock.advance(61)
    # When an unrelated flag is PATCHed / Then its answer says maintenance off too
    body = body_of(api.patch({"signup_enabled": False}))
    assert body["flags"]["maintenance_mode"] is False


# -- a lost item ---------------------------------------------------------------------------------------


def delete_item(api: WriteApi) -> None:
    api.client.delete_item(TableName=api.table, Key=singleton_key())


def test_a_refused_write_never_restores_a_lost_item_and_if_match_gets_412_without_an_etag(api: WriteApi) -> None:
    # Given the item deleted
    delete_item(api)
    before = api.state()
    # When a write with If-Match comes, and another with a bad value
    stale = api.patch({"signup_enabled": False}, headers={"If-Match": '"1"'})
    invalid = api.patch({"signup_enabled": "yes"})
    # Then both are refused and nothing is restored
    assert_refused(api, stale, before, 412, "PRECONDITION_FAILED")
    assert "ETag" not in headers_of(stale)
    assert_refused(api, invalid, before, 400, "INVALID_VALUE")


def test_a_no_op_write_on_a_lost_item_restores_it_as_a_new_version(api: WriteApi) -> None:
    # Given version 1 (ai_search_enabled on), then the item deleted
    delete_item(api)
    # When a PATCH asks for the value the trail already holds
    response = api.patch({"ai_search_enabled": True})
    # Then the item is back with version 1's state as version 2, kind restore: the request wrote a version (the
    # restore), and its change itself changed nothing
    body = body_of(response)
    assert (body["version"], body["applied"], body["restored"], body["changed"]) == (2, True, True, {})
    item, _ = api.state()
    assert item["ai_search_enabled"] == {"BOOL": True} and item[VERSION_ATTR] == {"N": "2"}
    assert records(api)[-1]["kind"] == {"S": "restore"} and records(api)[-1]["restored_from"] == {"N": "1"}


def test_a_restore_re_applies_the_window_that_held_maintenance(api: WriteApi) -> None:
    # Given a window holding maintenance, then the item deleted
    start_window(api)
    delete_item(api)
    # When an unrelated write comes
    api.patch({"signup_enabled": False})
    # Then the window still holds maintenance after the restore, and its end still ends it
    item, _ = api.state()
    assert item[MAINTENANCE_OWNER_ATTR] == {"S": WINDOW} and item["maintenance_mode"] == {"BOOL": True}
    assert end_window(api) is True


def test_with_no_trail_left_a_lost_item_comes_back_as_version_zero_with_the_initial_values(
    unseeded_api: WriteApi,
) -> None:
    # Given a table with neither the item nor any audit record
    api, module = unseeded_api, unseeded_api.module
    # When a PATCH comes
    response = api.patch({"signup_enabled": False})
    # Then the initial values (what version 0 names) with the change on top are version 1, one record
    body = body_of(response)
    assert body["version"] == 1 and body["flags"] == {**module.DECLARATIONS.initials(), "signup_enabled": False}
    assert [int(r["version"]["N"]) for r in records(api)] == [1]


# -- our own faults -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code", ["ValidationException", "ResourceNotFoundException", "AccessDeniedException", "SomethingNew"]
)
def test_dynamodb_refusing_what_no_client_input_explains_is_a_500_that_pages(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    # Given DynamoDB answering the write's first read with an error that means a bug or a broken deployment
    from botocore.exceptions import ClientError

    def refuse(**_: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": code, "Message": "no"}, "ResponseMetadata": {"RequestId": "R1"}}, "GetItem"
        )

    store = api.use_store(monkeypatch, api.client)
    before = api.state()
    monkeypatch.setattr(store, "_client", type("Refusing", (), {"get_item": staticmethod(refuse)})())
    # When a PATCH comes / Then 500 INTERNAL_ERROR (never a 503 a client would retry forever), nothing written
    response = api.patch({"signup_enabled": False})
    assert_refused(api, response, before, 500, "INTERNAL_ERROR")
    assert "Retry-After" not in headers_of(response)


# -- room for a window's bookkeeping ---------------------------------------------------------------------


def test_a_write_that_would_leave_no_room_for_a_window_start_is_refused(
    ddb: Any, table_name: str, clock: Clock
) -> None:
    # Given a string flag and the longest configured window name
    import json as _json

    from singleton_flags.declarations import parse_declarations
    from singleton_flags_service.contract import DECLARATIONS_FILE
    from singleton_flags_service.errors import ItemTooLarge
    from singleton_flags_service.writes.itemsize import READ_BLOCK_BYTES, item_size

    document = _json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
    document["flags"].append(
        {"name": "banner_text", "type": "string", "initial": "", "fallback": "", "max_length": 5000}
    )
    declarations = parse_declarations(document)
    window = "quarterly-database-engine-upgrade"
    reserving = FlagStore(ddb, table_name, declarations, clock=clock, reserve_owner=window)
    plain = FlagStore(ddb, table_name, declarations, clock=clock)
    reserving.seed(actor="test", reason="seed")
    # And a banner that leaves the item 8 bytes under 4 KB once written (but not the room a start needs)
    item = ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True)["Item"]
    written = {
        **item,
        "banner_text": {"S": ""},
        "schema_version": {"N": "1"},
        "updated_by": {"S": "op"},
        "updated_at": {"S": "2023-11-14T22:13:20.000+00:00"},
    }
    length = READ_BLOCK_BYTES - 8 - item_size(written)
    # When it is written by a store that keeps room for the window / Then 413-class refusal, nothing written
    with pytest.raises(ItemTooLarge, match="maintenance window"):
        reserving.change({"banner_text": "x" * length}, actor="op", reason="banner")
    assert ddb.get_item(TableName=table_name, Key=singleton_key())["Item"]["schema_version"] == {"N": "0"}
    # And the same write without the reservation fits: the refusal is the room kept, not the 4 KB itself
    assert plain.change({"banner_text": "x" * length}, actor="op", reason="banner").applied
