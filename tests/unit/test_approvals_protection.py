"""A deploy that lowers a flag's protection is recorded by the seed as its own audit kind, never silently."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from local.backend import prepare_table
from singleton_flags.codec import decode_plain
from singleton_flags.declarations import parse_declarations
from singleton_flags.keys import PROTECTION_PK
from singleton_flags_service.approvals.protection import LOWERED_SK_PREFIX, lowered, record_protection
from tests.support.approvals import ACCOUNT, DOCUMENT, ON_CALL


def deploy(ddb: Any, table: str, document: dict[str, Any], now: float = 1.0) -> dict[str, Any]:
    return record_protection(
        ddb,
        table,
        parse_declarations(document),
        actor="cloudformation:s",
        reason="deploy",
        now=now,
        retention_seconds=86400,
    )


def records(ddb: Any, table: str) -> list[dict[str, Any]]:
    items = ddb.query(
        TableName=table,
        KeyConditionExpression="PK = :pk AND begins_with(SK, :prefix)",
        ExpressionAttributeValues={":pk": {"S": PROTECTION_PK}, ":prefix": {"S": LOWERED_SK_PREFIX}},
    )["Items"]
    return [{"kind": item["kind"]["S"], "changes": decode_plain(item["changes"])} for item in items]


def changed(edit: Any) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    edit(document["flags"][0]["protection"])
    return document


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p.update(approvals=1),
        lambda p: p.update(approvers=[]),
        lambda p: p["approvers"].append("arn:aws:iam::*:user/*"),
        lambda p: p["break_glass"].append(f"arn:aws:iam::{ACCOUNT}:role/Anyone"),
    ],
    ids=["fewer-approvals", "approvers-emptied", "approvers-widened", "break-glass-widened"],
)
def test_a_deploy_lowering_protection_is_recorded_as_its_own_kind(ddb: Any, table_name: str, edit: Any):
    # Given the protection deployed before
    assert deploy(ddb, table_name, DOCUMENT) == {}
    # When a deploy lowers kill_switch's protection
    found = deploy(ddb, table_name, changed(edit), now=2.0)
    # Then it is recorded, with the old and the new protection
    assert list(found) == ["kill_switch"]
    (record,) = records(ddb, table_name)
    assert record["kind"] == "protection_lowered"
    assert record["changes"]["kill_switch"]["old"]["approvals"] == 2


def test_raising_protection_or_deploying_it_again_records_nothing(ddb: Any, table_name: str):
    deploy(ddb, table_name, DOCUMENT)
    assert deploy(ddb, table_name, DOCUMENT, now=2.0) == {}
    assert deploy(ddb, table_name, changed(lambda p: p.update(approvals=3, break_glass=[])), now=3.0) == {}
    assert records(ddb, table_name) == []


def test_a_protected_flag_no_longer_declared_is_a_lowering():
    before = {"kill_switch": {"approvals": 2, "approvers": [], "break_glass": [ON_CALL]}}
    assert lowered(before, {}) == {"kill_switch": {"old": before["kill_switch"], "new": None}}


def test_the_local_runner_records_a_lowered_protection_between_its_starts_as_the_deployed_seed_does(ddb: Any):
    # Given the runner started on a table with kill_switch needing 2 approvals
    assert prepare_table("runner-table", "FLAGS#V1", parse_declarations(DOCUMENT), "moto") is True
    # When it starts again with declarations that lower it to 1
    prepare_table("runner-table", "FLAGS#V1", parse_declarations(changed(lambda p: p.update(approvals=1))), "moto")
    # Then the lowering is recorded as its own kind, as a deploy's seed records it
    (record,) = records(ddb, "runner-table")
    assert (record["kind"], record["changes"]["kill_switch"]["new"]["approvals"]) == ("protection_lowered", 1)
