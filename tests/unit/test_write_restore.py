"""POST /flags/restore (what `flagctl restore` sends): a missing flags item back now, by the restore rule."""

from __future__ import annotations

from singleton_flags.keys import VERSION_ATTR, singleton_key
from tests.support.unit import WriteApi, assert_refused, body_of


def restore(api: WriteApi, reason: str = "item deleted by mistake") -> dict:
    return api("POST", "/flags/restore", body={"reason": reason})


def test_restore_brings_a_missing_item_back_from_its_newest_record_at_a_new_version(api: WriteApi) -> None:
    # Given version 1 (ai_search_enabled on), then the item deleted by hand
    api.client.delete_item(TableName=api.table, Key=singleton_key())
    # When an operator restores it
    response = restore(api)
    # Then version 2 holds version 1's state, recorded as kind restore by the operator
    body = body_of(response)
    assert response["statusCode"] == 200, body
    assert (body["version"], body["restored"], body["applied"]) == (2, True, True)
    assert body["flags"]["ai_search_enabled"] is True
    item, trail = api.state()
    assert item is not None and item[VERSION_ATTR] == {"N": "2"}
    newest = max(trail, key=lambda record: int(record["version"]["N"]))
    assert (newest["kind"], newest["reason"]) == ({"S": "restore"}, {"S": "item deleted by mistake"})


def test_restore_of_an_item_that_exists_changes_nothing(api: WriteApi) -> None:
    before = api.state()
    response = restore(api)
    assert response["statusCode"] == 200 and body_of(response)["applied"] is False
    assert "restored" not in body_of(response) and api.state() == before


def test_restore_without_a_reason_is_refused(api: WriteApi) -> None:
    api.client.delete_item(TableName=api.table, Key=singleton_key())
    before = api.state()
    response = api("POST", "/flags/restore", body={})
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule="reason")
