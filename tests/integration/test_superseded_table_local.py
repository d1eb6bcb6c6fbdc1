"""A reader bound to a replaced table fails closed and says why, on DynamoDB Local.

Given two tables of one stage, the old one's flags item marked superseded by the new one (as the new table's seed
marks it), a reader still bound to the old table serves the declared fallbacks with reason DEFAULT, never the old
values, logs the cause once with where the new table is, and counts it; operators' writes to the old item are
refused with a 409 naming the successor.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from bench.workload import seed_table
from local.dynamodb_local import create_table
from local.functions import load_module
from singleton_flags import Flags
from singleton_flags.declarations import Declarations
from singleton_flags.emf import EmfPrinter, ReadCounter
from singleton_flags.keys import MAINTENANCE_FLAG, singleton_key
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags.vocabulary import DEFAULT, NEVER_READ_FAILURES, ReadCause
from singleton_flags_service.errors import FlagsSuperseded
from singleton_flags_service.writes.store import FlagStore
from singleton_flags_service.writes.supersede import MARKED, mark_replaced_table

pytestmark = pytest.mark.integration

REGION_ACCOUNT = "arn:aws:dynamodb:us-east-1:123456789012"
PARAMETER = "/singleton-flags/prod/table-arn"


class PublishedArn:
    """The SSM client's one call the seed makes: the stage's ``table-arn`` parameter, as published before."""

    def __init__(self, value: str) -> None:
        self.value = value

    def get_parameter(self, *, Name: str) -> dict[str, Any]:  # noqa: N803 - boto3's argument name
        assert Name == PARAMETER
        return {"Parameter": {"Name": Name, "Value": self.value}}


@pytest.fixture
def replaced(ddb_local: Any, flags_table: str, declarations: Declarations) -> Iterator[SimpleNamespace]:
    """``flags_table`` is the old table, with maintenance switched off by an operator; a new table replaced it and
    its seed marked the old item superseded."""
    FlagStore(ddb_local, flags_table, declarations).change({MAINTENANCE_FLAG: False}, actor="ops", reason="live")
    new_table = f"{flags_table}-new"
    create_table(ddb_local, new_table)
    seed_table(ddb_local, new_table, declarations)
    old_arn, new_arn = f"{REGION_ACCOUNT}:table/{flags_table}", f"{REGION_ACCOUNT}:table/{new_table}"
    outcome = mark_replaced_table(
        PublishedArn(old_arn), ddb_local, parameter_name=PARAMETER, own_table_arn=new_arn, reason="replaced", now=0.0
    )
    assert outcome.status == MARKED
    yield SimpleNamespace(old=flags_table, new=new_table, new_arn=new_arn)
    ddb_local.delete_table(TableName=new_table)


def superseded_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and "table was replaced" in r.getMessage()]


def test_the_embedded_client_bound_to_the_old_table_serves_the_fallbacks_and_says_where_the_new_one_is(
    ddb_local: Any, replaced: SimpleNamespace, declarations: Declarations, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a consumer's client still bound to the replaced table (the item there says maintenance is off)
    stream = io.StringIO()
    flags = Flags(table_name=replaced.old, declarations=declarations, client=ddb_local, max_age=0)
    counter = ReadCounter(EmfPrinter("SingletonFlags", "orders", stream))
    flags._reader._counter, flags._reader._counting = counter, True
    caplog.set_level(logging.DEBUG, logger="singleton_flags")
    # When it reads twice (each a fetch of the item)
    first, second = flags.all_details(), flags.all_details()
    # Then every flag is its declared fallback with reason DEFAULT (maintenance ON), never the old item's values
    for details in (first, second):
        assert {name: d.value for name, d in details.items()} == declarations.fallbacks()
        assert {d.reason for d in details.values()} == {DEFAULT}
        assert details[MAINTENANCE_FLAG].value is True and details[MAINTENANCE_FLAG].version is None
    # And the cause is told once, naming the new table
    [warning] = superseded_warnings(caplog)
    assert replaced.new_arn in warning.getMessage()
    assert warning.__dict__["cause"] == ReadCause.SUPERSEDED
    # And every fetch that found the marker is counted under its cause
    blobs = [json.loads(line) for line in stream.getvalue().splitlines()]
    never = [(blob[NEVER_READ_FAILURES], blob["cause"]) for blob in blobs if NEVER_READ_FAILURES in blob]
    assert sum(count for count, _ in never) == 2 and {cause for _, cause in never} == {"SUPERSEDED"}


def test_the_read_function_bound_to_the_old_table_answers_the_fallbacks_with_reason_default(
    ddb_local: Any,
    replaced: SimpleNamespace,
    make_event: Any,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given the read function of a stack still bound to the replaced table
    monkeypatch.setenv("TABLE_NAME", replaced.old)
    module = load_module("singleton_flags_service.handlers.read_api")
    provider = SingletonProvider(client=ddb_local, table_name=replaced.old, declarations=module.DECLARATIONS)
    monkeypatch.setattr(module, "PROVIDER", provider)
    monkeypatch.setattr(module, "READER", FlagReader(provider, module.DECLARATIONS))
    caplog.set_level(logging.INFO, logger="singleton_flags")
    # When GET /flags and an OFREP evaluation are asked
    flags = json.loads(module.handler(make_event("GET", "/flags"), lambda_context)["body"])
    ofrep_event = make_event("POST", f"/ofrep/v1/evaluate/flags/{MAINTENANCE_FLAG}", body={"context": {}})
    ofrep = json.loads(module.handler(ofrep_event, lambda_context)["body"])
    # Then both answer the declared fallbacks, reason DEFAULT, and no version of the old item
    assert flags["reason"] == "DEFAULT" and flags["version"] is None
    assert flags["flags"] == module.DECLARATIONS.fallbacks()
    assert ofrep["reason"] == "DEFAULT" and ofrep["value"] is True
    # And the log says the table was replaced, once, naming the new one
    [warning] = superseded_warnings(caplog)
    assert replaced.new_arn in warning.getMessage()


def test_an_operators_write_to_the_old_item_is_refused_naming_the_successor(
    ddb_local: Any, replaced: SimpleNamespace, declarations: Declarations
) -> None:
    # Given the old table's store / When an operator changes a flag there
    store = FlagStore(ddb_local, replaced.old, declarations)
    before = ddb_local.get_item(TableName=replaced.old, Key=singleton_key(), ConsistentRead=True)["Item"]
    with pytest.raises(FlagsSuperseded) as refused:
        store.change({MAINTENANCE_FLAG: True}, actor="ops", reason="too late")
    # Then a 409 names where the flags now live, and the old item is unchanged
    assert refused.value.status == 409 and refused.value.details["superseded_by"] == replaced.new_arn
    assert ddb_local.get_item(TableName=replaced.old, Key=singleton_key(), ConsistentRead=True)["Item"] == before
    # And a second marking changes nothing (the first successor and time are kept)
    again = mark_replaced_table(
        PublishedArn(f"{REGION_ACCOUNT}:table/{replaced.old}"),
        ddb_local,
        parameter_name=PARAMETER,
        own_table_arn=f"{REGION_ACCOUNT}:table/other",
        reason="again",
        now=1.0,
    )
    assert again.status != MARKED
    assert ddb_local.get_item(TableName=replaced.old, Key=singleton_key(), ConsistentRead=True)["Item"] == before
