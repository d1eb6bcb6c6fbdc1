"""Change request events: each state change of a request, as its item records it, is one ``Flag Change Request
Updated`` event (moto for the items the change-request store really writes; the stream records as Lambda hands
them over).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags.keys import CHANGE_REQUEST_PK, change_request_key
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.events import (
    CHANGE_REQUEST_DETAIL_TYPE,
    CHANGE_REQUEST_STREAM_FILTER,
    SOURCE,
    STREAM_FILTERS,
    change_request_event,
    is_change_request_record,
    is_published_record,
)
from singleton_flags_service.writes.store import FlagStore
from tests.support.approvals import ALICE, BOB, CAROL, ON_CALL, protected_declarations
from tests.support.unit import Clock
from tests.unit.test_change_events import Bus, publisher, stream_record


class Requests:
    """The change-request store on moto, and the stream records its writes make (INSERT, then MODIFY)."""

    def __init__(self, ddb: Any, table_name: str, clock: Clock) -> None:
        self._ddb = ddb
        self._table = table_name
        flags = FlagStore(ddb, table_name, protected_declarations(), clock=clock)
        flags.seed(actor="cloudformation:test", reason="deploy")
        self.store = ChangeRequests(ddb, table_name, flags, clock=clock)
        self.records: list[dict[str, Any]] = []

    def image(self, request_id: str, event_name: str = "MODIFY") -> dict[str, Any]:
        item = self._ddb.get_item(TableName=self._table, Key=change_request_key(request_id), ConsistentRead=True)
        record = stream_record(item["Item"], len(self.records) + 1, event_name)
        self.records.append(record)
        return record

    def create(self, author: str = ALICE, **options: Any) -> str:
        options.setdefault("flags", {"kill_switch": True})
        request_id = self.store.create(author, reason="incident 42", **options).request.id
        self.image(request_id, "INSERT")
        return request_id


@pytest.fixture
def requests(ddb: Any, table_name: str, clock: Clock) -> Requests:
    return Requests(ddb, table_name, clock)


def detail(record: dict[str, Any]) -> dict[str, Any] | None:
    return change_request_event(record["dynamodb"]["NewImage"], record["eventName"], stage="prod")


def test_a_created_request_is_its_documented_event(requests: Requests) -> None:
    request_id = requests.create()
    event = detail(requests.records[0])
    assert event is not None
    assert event == {
        "stage": "prod",
        "id": request_id,
        "transition": "created",
        "state": "pending",
        "kind": "change",
        "author": ALICE,
        "reason": "incident 42",
        "flags": ["kill_switch"],
        "protected_flags": ["kill_switch"],
        "required_approvals": 2,
        "approvals": [],
        "approved_by": None,
        "decided": None,
        "base_version": 0,
        "applied_version": None,
        "expires_at": event["expires_at"],
        "time": event["time"],
    }
    assert "true" not in json.dumps(event)  # the flags it touches by name, never the values it would write


def test_each_approval_and_the_last_one_applying_are_events(requests: Requests, clock: Clock) -> None:
    request_id = requests.create()
    clock.advance(60)
    requests.store.approve(request_id, BOB, reason="looks right")
    first = detail(requests.image(request_id))
    clock.advance(60)
    requests.store.approve(request_id, CAROL)
    last = detail(requests.image(request_id))
    created = detail(requests.records[0])
    assert first is not None and last is not None and created is not None
    # each event's time is its own transition's: the creation, the approval, the decision
    assert created["time"] < first["time"] < last["time"]
    # an approval that is not the last: the request stays pending, the approver named
    assert (first["transition"], first["state"]) == ("approved", "pending")
    assert first["approved_by"] == {"principal": BOB, "at": first["time"], "reason": "looks right"}
    # the last one applies it: the version it wrote, every approver
    assert (last["transition"], last["state"], last["applied_version"]) == ("applied", "applied", 1)
    assert [approval["principal"] for approval in last["approvals"]] == [BOB, CAROL]
    assert last["decided"]["by"] == CAROL and last["time"] == last["decided"]["at"]


@pytest.mark.parametrize("how", ["reject", "withdraw"])
def test_a_rejected_or_withdrawn_request_is_an_event_naming_who_and_why(requests: Requests, how: str) -> None:
    request_id = requests.create()
    if how == "reject":
        requests.store.reject(request_id, BOB, "not now")
    else:
        requests.store.withdraw(request_id, ALICE, "wrong flag")
    event = detail(requests.image(request_id))
    assert event is not None
    state = {"reject": "rejected", "withdraw": "withdrawn"}[how]
    assert (event["transition"], event["state"]) == (state, state)
    assert event["decided"]["by"] == {"reject": BOB, "withdraw": ALICE}[how]
    assert event["decided"]["reason"] == {"reject": "not now", "withdraw": "wrong flag"}[how]


def test_an_expired_request_is_an_event_when_the_store_records_it(requests: Requests, clock: Clock) -> None:
    request_id = requests.create()
    clock.advance(72 * 3600)
    with pytest.raises(Exception, match="expired"):
        requests.store.approve(request_id, BOB)
    event = detail(requests.image(request_id))
    assert event is not None
    assert (event["transition"], event["decided"]["by"]) == ("expired", "singleton-flags")


def test_a_break_glass_request_is_inserted_applied(requests: Requests) -> None:
    requests.create(ON_CALL, break_glass=True)
    event = detail(requests.records[0])
    assert event is not None
    assert (event["transition"], event["kind"], event["applied_version"]) == ("applied", "break_glass", 1)


def test_each_state_change_is_one_entry_on_the_bus_in_order(requests: Requests) -> None:
    request_id = requests.create()
    requests.store.approve(request_id, BOB)
    requests.image(request_id)
    requests.store.approve(request_id, CAROL)
    requests.image(request_id)
    bus = Bus()
    result = publisher(bus).publish({"Records": requests.records})
    assert result.response() == {"batchItemFailures": []}
    assert {(entry["Source"], entry["DetailType"]) for entry in bus.accepted} == {(SOURCE, CHANGE_REQUEST_DETAIL_TYPE)}
    assert [json.loads(entry["Detail"])["transition"] for entry in bus.accepted] == ["created", "approved", "applied"]


def test_a_pending_request_modified_without_an_approval_is_no_event(requests: Requests, ddb: Any) -> None:
    request_id = requests.create()
    record = requests.image(request_id)  # the same pending image again: no approval, no state change
    assert detail(record) is None
    bus = Bus()
    assert publisher(bus).publish({"Records": [record]}).response() == {"batchItemFailures": []}
    assert bus.accepted == []


def test_an_altered_request_is_said_and_skipped_never_retried(requests: Requests) -> None:
    requests.create()
    record = requests.records[0]
    image = record["dynamodb"]["NewImage"]
    image["content"] = {"S": image["content"]["S"].replace("incident 42", "incident 43")}
    bus = Bus()
    result = publisher(bus).publish({"Records": [record]})
    assert result.response() == {"batchItemFailures": []}
    assert bus.accepted == [] and "altered" in result.errors[0]


def test_only_new_images_of_change_requests_are_published(requests: Requests) -> None:
    requests.create()
    item = requests.records[0]["dynamodb"]["NewImage"]
    records = [stream_record(item, 1, "INSERT"), stream_record(item, 2, "MODIFY"), stream_record(item, 3, "REMOVE")]
    assert [is_change_request_record(record) for record in records] == [True, True, False]
    assert [is_published_record(record) for record in records] == [True, True, False]
    assert CHANGE_REQUEST_STREAM_FILTER == {
        "dynamodb": {"Keys": {"PK": {"S": [CHANGE_REQUEST_PK]}}, "NewImage": {"PK": {"S": [CHANGE_REQUEST_PK]}}}
    }
    assert CHANGE_REQUEST_STREAM_FILTER in STREAM_FILTERS
