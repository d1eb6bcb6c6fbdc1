"""Change requests on DynamoDB Local: concurrent final approvals of one request yield exactly one version and one
audit record (moto's conditional writes are not atomic under concurrency: this proof runs on AWS's own engine)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from bench.workload import seed_table
from local.dynamodb_local import create_table
from singleton_flags.keys import change_request_key
from singleton_flags_service.approvals.models import ChangeRequest
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.errors import FlagsError
from singleton_flags_service.vocabulary import KIND_CHANGE_REQUEST
from singleton_flags_service.writes.audit import audit_record
from singleton_flags_service.writes.store import FlagStore
from tests.support.approvals import ACCOUNT, ALICE, BOB, protected_declarations
from tests.support.tables import read_singleton, read_trail

APPROVERS = 8


def requests_on(client: Any, table: str) -> ChangeRequests:
    declarations = protected_declarations()
    return ChangeRequests(client, table, FlagStore(client, table, declarations, sleep=lambda _: None))


@pytest.fixture
def protected_table(ddb_local: Any) -> Any:
    name = "flags-approvals-it"
    create_table(ddb_local, name)
    seed_table(ddb_local, name, protected_declarations())
    yield name
    ddb_local.delete_table(TableName=name)


@pytest.mark.parametrize("given", [0, 1], ids=["all-first-of-one-needed", "after-one-of-two"])
def test_concurrent_final_approvals_apply_once_with_one_audit_record(
    client_factory: Callable[[], Any], ddb_local: Any, protected_table: str, given: int
):
    # Given a request needing `given + 1` approvals, `given` of them recorded
    flags = {"maintenance_mode": True} if given == 0 else {"kill_switch": True, "rate_limit": 7}
    requests = requests_on(ddb_local, protected_table)
    request = requests.create(ALICE, reason="incident", flags=flags).request
    if given:
        requests.approve(request.id, BOB)
    version_before = len(read_trail(ddb_local, protected_table))
    # When 8 other principals approve it at once, each its last approval
    barrier = threading.Barrier(APPROVERS)
    outcomes: list[Any] = [None] * APPROVERS

    def approve(index: int) -> None:
        mine = requests_on(client_factory(), protected_table)
        barrier.wait()
        try:
            outcomes[index] = mine.approve(request.id, f"arn:aws:iam::{ACCOUNT}:user/approver-{index}")
        except FlagsError as refused:
            outcomes[index] = refused

    threads = [threading.Thread(target=approve, args=(index,)) for index in range(APPROVERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    # Then exactly one applied it, and every other one was told the request is closed
    applied = [outcome for outcome in outcomes if not isinstance(outcome, FlagsError) and outcome.applied]
    refused = [outcome for outcome in outcomes if isinstance(outcome, FlagsError)]
    assert len(applied) == 1, outcomes
    assert sorted({error.code for error in refused}) == ["REQUEST_CLOSED"], outcomes
    assert len(refused) == APPROVERS - 1
    # And exactly one new version, with exactly one audit record naming the request
    trail = [audit_record(item) for item in read_trail(ddb_local, protected_table)]
    new = [record for record in trail if record["version"] > version_before]
    assert [(record["version"], record["kind"]) for record in new] == [(version_before + 1, KIND_CHANGE_REQUEST)]
    assert new[0]["change_request"] == request.id
    assert len(new[0]["approved_by"]) == given + 1
    assert int(read_singleton(ddb_local, protected_table)["schema_version"]["N"]) == version_before + 1
    item = ddb_local.get_item(TableName=protected_table, Key=change_request_key(request.id), ConsistentRead=True)
    stored = ChangeRequest.from_item(item["Item"])
    assert (stored.state, stored.applied_version, len(stored.approvals)) == ("applied", version_before + 1, given + 1)
