"""The superseded marker: an item whose table was replaced says so, and everything that reads or writes it obeys.

Readers serve the declared fallbacks (DEFAULT), never the item's values, not even as STALE; operators' writes are
refused with a 409 naming the successor; the automatic safety writes go on; the seed of a new table marks the old
one's item (conditioned, idempotent), and what it cannot mark it says, without failing the deploy.
"""

from __future__ import annotations

import logging
from typing import Any

import boto3
import pytest

from singleton_flags.declarations import Declarations
from singleton_flags.keys import MAINTENANCE_FLAG, SUPERSEDED_BY_ATTR, singleton_key
from singleton_flags.reader import FlagReader
from singleton_flags.vocabulary import DEFAULT, STATIC, ReadCause
from singleton_flags_service.errors import FlagsSuperseded
from singleton_flags_service.vocabulary import KIND_WINDOW_START
from singleton_flags_service.writes.store import FlagStore, Ownership
from singleton_flags_service.writes.supersede import (
    MARKED,
    NOT_MARKED,
    NOTHING_TO_MARK,
    mark_replaced_table,
    mark_superseded,
)
from tests.support.unit import WriteApi, body_of, expire

OWN = "arn:aws:dynamodb:us-east-1:123456789012:table/flags-prod-TableNew-BBBB"
SUCCESSOR = OWN
PARAMETER = "/singleton-flags/prod/table-arn"


def mark(ddb: Any, table_name: str) -> None:
    assert mark_superseded(ddb, table_name, SUCCESSOR, "table replaced", now=1_700_000_000.0)


def test_a_reader_that_served_the_item_serves_the_fallbacks_once_it_is_marked_never_the_stale_values(
    reader: FlagReader,
    put_flags: Any,
    ddb: Any,
    table_name: str,
    declarations: Declarations,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a reader that served the live item (maintenance off)
    put_flags(version=3, **{MAINTENANCE_FLAG: False})
    assert reader.read().reason == STATIC
    # When the item is marked superseded and the cache has expired
    mark(ddb, table_name)
    expire(reader.provider)
    caplog.set_level(logging.DEBUG, logger="singleton_flags")
    state = reader.read()
    again = reader.read()  # cached
    # Then the declared fallbacks are served, DEFAULT (maintenance ON), not the last good values as STALE
    for read in (state, again):
        assert read.reason == DEFAULT and read.version is None
        assert dict(read.values) == declarations.fallbacks() and read.values[MAINTENANCE_FLAG] is True
    # And the warning names the cause and the successor
    [warning] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.__dict__["cause"] == ReadCause.SUPERSEDED
    assert "table was replaced" in warning.getMessage() and SUCCESSOR in warning.getMessage()


def test_an_operators_change_of_a_superseded_item_is_refused_and_a_window_start_is_not(
    ddb: Any, table_name: str, declarations: Declarations, put_flags: Any
) -> None:
    put_flags(version=2, **{MAINTENANCE_FLAG: False})
    mark(ddb, table_name)
    store = FlagStore(ddb, table_name, declarations, sleep=lambda _: None)
    # When an operator changes a flag on the superseded item / Then it is refused, naming its successor
    with pytest.raises(FlagsSuperseded) as refused:
        store.change({MAINTENANCE_FLAG: True}, actor="ops", reason="x")
    assert refused.value.details["superseded_by"] == SUCCESSOR and int(refused.value.status) == 409
    # And the seed (a deploy of the old stack, or CloudFormation's rollback of one) writes nothing and does not fail
    before = ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True)["Item"]
    assert not store.seed(actor="cloudformation:old", reason="deploy").applied
    assert ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True)["Item"] == before
    # And a window's start, a safety write, is applied on what the item stores, the marker kept
    result = store.change(
        {MAINTENANCE_FLAG: True},
        actor="scheduler:nightly",
        reason="window",
        kind=KIND_WINDOW_START,
        ownership=Ownership(owner="nightly", deadline=2_000_000_000),
    )
    assert result.applied and result.snapshot.version == 3
    item = ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True)["Item"]
    assert item[SUPERSEDED_BY_ATTR] == {"S": SUCCESSOR} and item[MAINTENANCE_FLAG] == {"BOOL": True}


def test_a_marker_set_between_a_writes_read_and_its_commit_refuses_it(
    ddb: Any, table_name: str, declarations: Declarations, put_flags: Any
) -> None:
    # Given a write that read the item before the marker was set
    put_flags(version=2, **{MAINTENANCE_FLAG: False})
    store = FlagStore(ddb, table_name, declarations, sleep=lambda _: None)
    marked: list[bool] = []

    def mark_once(snapshot: Any) -> bool:
        if not marked:
            mark(ddb, table_name)
            marked.append(True)
        return True

    # When it commits / Then its condition fails, the re-read finds the marker, and it is refused
    with pytest.raises(FlagsSuperseded):
        store.change({MAINTENANCE_FLAG: True}, actor="ops", reason="x", condition=mark_once)
    item = ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True)["Item"]
    assert item[MAINTENANCE_FLAG] == {"BOOL": False}


def test_the_write_api_answers_409_flags_superseded(seeded_api: WriteApi) -> None:
    mark(seeded_api.client, seeded_api.table)
    response = seeded_api.patch({MAINTENANCE_FLAG: True})
    assert response["statusCode"] == 409
    body = body_of(response)
    assert body["error"]["code"] == "FLAGS_SUPERSEDED"
    assert SUCCESSOR in body["error"]["message"]


def test_marking_is_conditioned_and_idempotent(ddb: Any, table_name: str, put_flags: Any) -> None:
    # An absent item is not created, a marked item keeps its first successor
    assert not mark_superseded(ddb, table_name, SUCCESSOR, "r", now=0.0)
    assert "Item" not in ddb.get_item(TableName=table_name, Key=singleton_key())
    put_flags(version=1)
    assert mark_superseded(ddb, table_name, SUCCESSOR, "r", now=0.0)
    assert not mark_superseded(ddb, table_name, "arn:aws:dynamodb:us-east-1:123456789012:table/third", "r", now=1.0)
    item = ddb.get_item(TableName=table_name, Key=singleton_key())["Item"]
    assert item[SUPERSEDED_BY_ATTR] == {"S": SUCCESSOR}


def test_the_seed_marks_the_table_the_stage_published_before(ddb: Any, table_name: str, put_flags: Any) -> None:
    ssm = boto3.client("ssm", region_name="us-east-1")
    old_arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{table_name}"
    put_flags(version=4)

    def run(own: str = OWN) -> Any:
        return mark_replaced_table(ssm, ddb, parameter_name=PARAMETER, own_table_arn=own, reason="r", now=0.0)

    # No parameter: a first deploy, nothing to mark
    assert run().status == NOTHING_TO_MARK
    # The parameter names this very table: nothing to mark
    ssm.put_parameter(Name=PARAMETER, Value=OWN, Type="String")
    assert run().status == NOTHING_TO_MARK
    # It names another table of this account and region: its item is marked superseded by this one, once
    ssm.put_parameter(Name=PARAMETER, Value=old_arn, Type="String", Overwrite=True)
    assert run().status == MARKED
    item = ddb.get_item(TableName=table_name, Key=singleton_key())["Item"]
    assert item[SUPERSEDED_BY_ATTR] == {"S": OWN}
    assert run().status == NOTHING_TO_MARK
    # In another account: not marked, said (never a failed deploy)
    assert run("arn:aws:dynamodb:us-east-1:999999999999:table/x").status == NOT_MARKED
