"""Every version a function commits is published as ``CommittedVersion`` (EMF, dimension ``service``, unit None), at
the one place every write goes through: the store's commit (``FlagStore``'s ``on_commit``, which
``FlagStore.for_function`` wires to ``observability.publish_committed``). A change, a revert, a restore, a window's
start or end, a guard's revert, a scheduled change and the seed all commit there; a no-op and an Idempotency-Key
replay commit nothing and publish nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from local.functions import load_module
from singleton_flags.keys import singleton_key
from singleton_flags_service.contract import HANDLERS, SEED_HANDLER
from singleton_flags_service.observability import NAMESPACE, SERVICE, publish_committed
from singleton_flags_service.vocabulary import COMMITTED_VERSION
from singleton_flags_service.writes.store import FlagStore
from tests.support.maintenance import MaintenanceFunction
from tests.support.unit import Output, WriteApi, body_of


def committed(records: list[dict[str, Any]]) -> list[int]:
    return [record[COMMITTED_VERSION] for record in records if COMMITTED_VERSION in record]


def test_the_record_is_one_metric_in_the_stages_namespace_dimensioned_by_service(stdout: Output) -> None:
    publish_committed(12)
    (record,) = stdout.records()
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive == {
        "Namespace": NAMESPACE,
        "Dimensions": [["service"]],
        "Metrics": [{"Name": COMMITTED_VERSION, "Unit": "None"}],
    }
    assert (record["service"], record[COMMITTED_VERSION]) == (SERVICE, 12)


class TestTheWriteFunction:
    def test_a_change_and_a_revert_each_publish_the_version_they_committed(self, api: WriteApi, stdout: Output) -> None:
        # Given version 1
        stdout.text()
        # When a change commits version 2, then a revert commits version 3
        assert body_of(api.patch({"signup_enabled": False}))["version"] == 2
        assert body_of(api.revert(1))["version"] == 3
        # Then each was published once, in order
        assert committed(stdout.records()) == [2, 3]

    def test_a_no_op_and_a_replay_publish_nothing(self, api: WriteApi, stdout: Output) -> None:
        # Given a change made with an Idempotency-Key
        api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "k-1"})
        assert committed(stdout.records()) == [2]
        # When the same request is replayed, and a change to the values already stored is sent
        api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "k-1"})
        api.patch({"signup_enabled": False})
        # Then no version was committed, and none published
        assert committed(stdout.records()) == []

    def test_a_restore_publishes_the_version_it_wrote(self, api: WriteApi, stdout: Output) -> None:
        # Given version 1, then the item deleted by hand
        api.client.delete_item(TableName=api.table, Key=singleton_key())
        stdout.text()
        # When a change arrives: the restore is version 2 and the change version 3, in one transaction
        assert body_of(api.patch({"signup_enabled": False}))["version"] == 3
        # Then the version readers will serve is published
        assert committed(stdout.records()) == [3]


def test_a_window_start_publishes_its_version(maintenance: MaintenanceFunction, stdout: Output) -> None:
    # Given the seeded item at version 1
    stdout.text()
    # When a window's schedule opens it
    maintenance.start()
    # Then its version is published
    assert committed(stdout.records()) == [maintenance.version()] == [2]


def test_the_seed_of_a_new_table_publishes_version_0(ddb: Any, table_name: str, declarations: Any) -> None:
    seen: list[int] = []
    FlagStore(ddb, table_name, declarations, on_commit=seen.append).seed(actor="deploy", reason="seed")
    assert seen == [0]


@pytest.mark.parametrize("handler", [*HANDLERS.values(), SEED_HANDLER])
def test_every_function_that_writes_publishes_what_it_commits(handler: str) -> None:
    # Given each function's module as Lambda loads it
    module = load_module(handler.rpartition(".")[0])
    store = getattr(module, "STORE", None)
    # Then a function with a store publishes each version it commits (the read function has none)
    if store is not None:
        assert store._on_commit is publish_committed
    else:
        assert handler == HANDLERS["read"]
