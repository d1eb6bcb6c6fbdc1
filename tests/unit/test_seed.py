"""The seed: adds every declared flag with its initial value and leaves live values alone."""

from __future__ import annotations

import re
from typing import Any

from flags.codec import decode
from flags.declarations import Declarations
from flags.keys import SINGLETON_SK, VERSION_ATTR, singleton_key
from flags.seed import seed_update_params

CLAUSE = re.compile(r"(#\w+) = if_not_exists\(\1, (:\w+)\)")


def stored(ddb: Any, table_name: str) -> dict[str, Any]:
    return ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True)["Item"]


def test_params_set_every_flag_and_the_version_only_if_absent(declarations: Declarations) -> None:
    # Given the declarations
    # When the seed's UpdateItem parameters are built
    params = seed_update_params("flags-table", declarations)
    # Then they address the singleton by its literal full key
    assert params["TableName"] == "flags-table"
    assert params["Key"] == {"PK": {"S": "SETTINGS#APP"}, "SK": {"S": SINGLETON_SK}}
    # And SET each flag and schema_version through if_not_exists, and nothing else
    names = params["ExpressionAttributeNames"]
    values = params["ExpressionAttributeValues"]
    clauses = CLAUSE.findall(params["UpdateExpression"].removeprefix("SET "))
    assert ", ".join(f"{n} = if_not_exists({n}, {v})" for n, v in clauses) == params["UpdateExpression"][4:]
    assert {names[name] for name, _ in clauses} == {*declarations, VERSION_ATTR}
    # And each placeholder holds the flag's initial value (version 0)
    for name, value in clauses:
        attribute = names[name]
        if attribute == VERSION_ATTR:
            assert values[value] == {"N": "0"}
        else:
            assert decode(declarations[attribute], values[value]) == declarations[attribute].initial


def test_a_fresh_table_gets_every_initial_value(ddb: Any, table_name: str, declarations: Declarations) -> None:
    # Given an empty table
    # When the seed runs
    ddb.update_item(**seed_update_params(table_name, declarations))
    # Then the singleton holds every initial value at version 0
    item = stored(ddb, table_name)
    assert item[VERSION_ATTR] == {"N": "0"}
    assert {name: decode(spec, item[name]) for name, spec in declarations.items()} == declarations.initials()


def test_seeding_twice_keeps_live_values(ddb: Any, table_name: str, declarations: Declarations) -> None:
    # Given a seeded table whose values an operator then changed
    ddb.update_item(**seed_update_params(table_name, declarations))
    ddb.update_item(
        TableName=table_name,
        Key=singleton_key(),
        UpdateExpression="SET signup_enabled = :off, api_rate_limit_per_minute = :rate, #v = :v",
        ExpressionAttributeNames={"#v": VERSION_ATTR},
        ExpressionAttributeValues={":off": {"BOOL": False}, ":rate": {"N": "1234"}, ":v": {"N": "7"}},
    )
    # When the seed runs again (every deploy runs it)
    ddb.update_item(**seed_update_params(table_name, declarations))
    # Then the changed values and the version are untouched
    item = stored(ddb, table_name)
    assert item["signup_enabled"] == {"BOOL": False}
    assert item["api_rate_limit_per_minute"] == {"N": "1234"}
    assert item[VERSION_ATTR] == {"N": "7"}


def test_a_newly_declared_flag_is_added_without_touching_the_others(
    ddb: Any, table_name: str, declarations: Declarations
) -> None:
    # Given a live item that predates one declared flag
    ddb.update_item(**seed_update_params(table_name, declarations))
    ddb.update_item(
        TableName=table_name,
        Key=singleton_key(),
        UpdateExpression="SET maintenance_mode = :on REMOVE search_ranking",
        ExpressionAttributeValues={":on": {"BOOL": True}},
    )
    # When the seed runs (the deploy that adds the flag)
    ddb.update_item(**seed_update_params(table_name, declarations))
    # Then the new flag has its initial value and the live one is kept
    item = stored(ddb, table_name)
    assert item["search_ranking"] == {"S": declarations["search_ranking"].initial}
    assert item["maintenance_mode"] == {"BOOL": True}
