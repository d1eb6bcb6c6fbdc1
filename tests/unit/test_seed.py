"""The seed (``FlagStore.seed``, what the stack runs when the declarations change, and the local runner at start).

It adds every declared flag the item lacks as one new version of kind ``seed``, never changes a live value,
never reuses a version, and restores a lost item from its trail by the same rule as every write.
"""

from __future__ import annotations

import json
from typing import Any

from singleton_flags.codec import decode
from singleton_flags.declarations import Declarations, parse_declarations
from singleton_flags.keys import VERSION_ATTR, singleton_key
from singleton_flags_service.contract import DECLARATIONS_FILE
from singleton_flags_service.writes.store import FlagStore
from tests.support.unit import Output, warnings_in


def stored(ddb: Any, table_name: str) -> dict[str, Any] | None:
    return ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True).get("Item")


def seed(ddb: Any, table_name: str, declarations: Declarations) -> Any:
    return FlagStore(ddb, table_name, declarations).seed(actor="deploy", reason="declarations changed")


def kinds(ddb: Any, table_name: str, declarations: Declarations) -> list[tuple[int, str]]:
    records, _ = FlagStore(ddb, table_name, declarations).history(limit=100)
    return [(record["version"], record["kind"]) for record in reversed(records)]


def with_new_flag(declarations: Declarations) -> Declarations:
    document = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
    document["flags"].append(
        {"name": "beta_banner", "type": "bool", "initial": True, "fallback": False, "description": "new"}
    )
    return parse_declarations(document)


def test_a_fresh_table_gets_every_initial_value_at_version_zero_without_a_record(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    # Given an empty table / When the seed runs
    result = seed(ddb, table_name, declarations)
    # Then the singleton holds every initial value at version 0 (what version 0 always names), no record
    item = stored(ddb, table_name)
    assert item is not None and item[VERSION_ATTR] == {"N": "0"}
    assert {name: decode(spec, item[name]) for name, spec in declarations.items()} == declarations.initials()
    assert result.snapshot.version == 0 and kinds(ddb, table_name, declarations) == []


def test_seeding_a_new_table_is_no_warning_but_a_write_finding_nothing_left_is(
    ddb: Any, table_name: str, declarations: Declarations, stdout: Output
) -> None:
    # Given an empty table / When the deploy-time seed creates version 0
    seed(ddb, table_name, declarations)
    # Then that is a new table said at INFO, not a lost item
    records = stdout.records()
    assert warnings_in(records) == []
    assert any(r.get("level") == "INFO" and "a new table" in r.get("message", "") for r in records)
    # When the item is then lost with no record left, and a change restores it
    ddb.delete_item(TableName=table_name, Key=singleton_key())
    FlagStore(ddb, table_name, declarations).change({"signup_enabled": False}, actor="alice", reason="after a loss")
    # Then that one is a warning
    (warning,) = warnings_in(stdout.records())
    assert "no audit record remains" in warning["message"]


def test_seeding_again_changes_nothing_and_writes_no_version(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    # Given a seeded table whose values an operator then changed (version 1)
    seed(ddb, table_name, declarations)
    FlagStore(ddb, table_name, declarations).change(
        {"signup_enabled": False, "api_rate_limit_per_minute": 1234}, actor="op", reason="live change"
    )
    before = stored(ddb, table_name)
    # When the seed runs again / Then the live values, the version and the trail are untouched
    result = seed(ddb, table_name, declarations)
    assert result.applied is False and stored(ddb, table_name) == before
    assert kinds(ddb, table_name, declarations) == [(1, "change")]


def test_a_newly_declared_flag_is_a_version_of_its_own_and_live_values_stay(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    # Given a live item (maintenance on by hand at version 1) and a deploy that declares one more flag
    seed(ddb, table_name, declarations)
    FlagStore(ddb, table_name, declarations).change({"maintenance_mode": True}, actor="op", reason="incident")
    grown = with_new_flag(declarations)
    # When the seed runs
    result = seed(ddb, table_name, grown)
    # Then version 2 (kind seed) adds the new flag with its initial value; nothing live changed
    item = stored(ddb, table_name)
    assert item is not None and item["beta_banner"] == {"BOOL": True} and item["maintenance_mode"] == {"BOOL": True}
    assert result.changed == {"beta_banner": {"old": None, "new": True}}
    assert kinds(ddb, table_name, grown) == [(1, "change"), (2, "seed")]


def test_a_lost_item_is_restored_from_the_trail_and_then_seeded(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    # Given version 1 (signup off), then the item deleted by hand, and a deploy that declares one more flag
    seed(ddb, table_name, declarations)
    FlagStore(ddb, table_name, declarations).change({"signup_enabled": False}, actor="op", reason="off")
    ddb.delete_item(TableName=table_name, Key=singleton_key())
    grown = with_new_flag(declarations)
    # When the seed runs
    seed(ddb, table_name, grown)
    # Then version 2 restores version 1's state (signup stays off), version 3 adds the flag: no version reused
    item = stored(ddb, table_name)
    assert item is not None and item["signup_enabled"] == {"BOOL": False} and item["beta_banner"] == {"BOOL": True}
    assert item[VERSION_ATTR] == {"N": "3"}
    assert kinds(ddb, table_name, grown) == [(1, "change"), (2, "restore"), (3, "seed")]


def test_a_stored_value_of_the_wrong_type_is_left_for_the_operators(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    # Given signup_enabled stored as a string (readers serve its fallback)
    seed(ddb, table_name, declarations)
    ddb.update_item(
        TableName=table_name,
        Key=singleton_key(),
        UpdateExpression="SET signup_enabled = :s",
        ExpressionAttributeValues={":s": {"S": "yes"}},
    )
    # When the seed runs / Then it does not overwrite a live attribute: the seed only adds what is absent
    assert seed(ddb, table_name, declarations).applied is False
    item = stored(ddb, table_name)
    assert item is not None and item["signup_enabled"] == {"S": "yes"}
