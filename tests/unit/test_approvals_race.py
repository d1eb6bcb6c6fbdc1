"""A request's stale mark and its approvals exclude each other (moto, with injected interleavings).

An approval is of the values a request is bound to: it is refused once one of them moved (the request is marked
stale), also when it is not the last, and also when the move lands between its decision and its write (its
transaction is conditioned on the flags item's version). Marking a request stale is conditioned on the approvals
it was decided on: an approval landing between a refusal and its stale mark is never recorded on a request that
is about to be marked stale.
"""

from __future__ import annotations

import copy
from typing import Any

from singleton_flags.declarations import parse_declarations
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.errors import RequestStale
from singleton_flags_service.writes.store import FlagStore
from tests.support.approvals import ALICE, BOB, CAROL, DAVE, DOCUMENT
from tests.support.unit import WriteApi, body_of
from tests.unit import test_approvals_routes as routes
from tests.unit.test_approvals_routes import (
    REQUESTS,
    approve,
    created_id,
    error_of,
)

approvals_api = routes.approvals_api  # the write function with protected declarations (a fixture)


class Interleaved:
    """The table's client, running ``before`` once, just before the first call that ``when`` picks."""

    def __init__(self, client: Any, when: Any, before: Any) -> None:
        self._client = client
        self._when = when
        self._before = before
        self.ran = False

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._client, name)

        def intercepted(**params: Any) -> Any:
            if not self.ran and self._when(name, params):
                self.ran = True
                self._before()
            return call(**params)

        return intercepted


def stale_mark(name: str, params: dict[str, Any]) -> bool:
    values = params.get("ExpressionAttributeValues", {})
    return name == "update_item" and values.get(":state") == {"S": "stale"}


def approval_write(name: str, params: dict[str, Any]) -> bool:
    updates = [item["Update"] for item in params.get("TransactItems", []) if "Update" in item]
    return name == "transact_write_items" and any(
        update["UpdateExpression"] == "SET #approvals = :approvals" for update in updates
    )


def request_of(api: WriteApi, request_id: str) -> dict[str, Any]:
    return dict(body_of(api("GET", f"{REQUESTS}/{request_id}"))["change_request"])


def test_an_approval_of_a_request_whose_flag_moved_is_refused_even_when_not_the_last(approvals_api: WriteApi):
    # Given a request of kill_switch and rate_limit (2 approvals), and rate_limit moved since
    request_id = created_id(approvals_api, flags={"kill_switch": True, "rate_limit": 5})
    assert approvals_api.patch({"rate_limit": 7})["statusCode"] == 200
    # When a first approval comes
    response = approve(approvals_api, request_id, BOB)
    # Then it is refused and the request is stale, with no approval recorded
    assert error_of(response) == (412, "REQUEST_STALE")
    request = request_of(approvals_api, request_id)
    assert (request["state"], request["approvals"]) == ("stale", [])


def test_a_flag_moving_between_an_approvals_decision_and_its_write_refuses_it(
    approvals_api: WriteApi, monkeypatch: Any
):
    # Given a request of kill_switch and rate_limit (2 approvals)
    api = approvals_api
    request_id = created_id(api, flags={"kill_switch": True, "rate_limit": 5})
    store = api.module.STORE

    def move() -> None:  # rate_limit moves after BOB's approval found the values bound, before it is written
        store.change({"rate_limit": 7}, actor="someone", reason="tuning")

    requests = api.module.CHANGE_REQUESTS
    interleaved = Interleaved(requests._client, approval_write, move)
    monkeypatch.setattr(requests, "_client", interleaved)
    # When BOB's (first) approval is written after the move
    response = approve(api, request_id, BOB)
    # Then it is refused, the request stale, no approval recorded
    assert interleaved.ran
    assert error_of(response) == (412, "REQUEST_STALE")
    request = request_of(api, request_id)
    assert (request["state"], request["approvals"]) == ("stale", [])


def test_an_approval_between_a_refused_last_approval_and_its_stale_mark_is_not_recorded(
    approvals_api: WriteApi, monkeypatch: Any
):
    # Given a request of kill_switch and rate_limit, approved once by CAROL, and rate_limit moved since
    api = approvals_api
    request_id = created_id(api, flags={"kill_switch": True, "rate_limit": 5})
    assert body_of(approve(api, request_id, CAROL))["applied"] is False
    assert api.patch({"rate_limit": 7})["statusCode"] == 200
    # And another function instance, already deployed with kill_switch needing 3 approvals (BOB's is not the last)
    document = copy.deepcopy(DOCUMENT)
    document["flags"][0]["protection"]["approvals"] = 3
    stricter = FlagStore(api.client, api.table, parse_declarations(document), clock=api.module.STORE._clock)
    other = ChangeRequests(api.client, api.table, stricter, clock=api.module.STORE._clock)
    answers: list[Exception | None] = []

    def bob_approves() -> None:  # between DAVE's refused last approval and its stale mark
        try:
            other.approve(request_id, BOB)
            answers.append(None)
        except RequestStale as refused:
            answers.append(refused)

    requests = api.module.CHANGE_REQUESTS
    interleaved = Interleaved(requests._client, stale_mark, bob_approves)
    monkeypatch.setattr(requests, "_client", interleaved)
    # When DAVE's last approval is refused (rate_limit moved) and BOB approves before the request is marked stale
    response = approve(api, request_id, DAVE)
    # Then both are refused, the request is stale, and only the approval made before the move is on it
    assert interleaved.ran
    assert error_of(response) == (412, "REQUEST_STALE")
    assert isinstance(answers[0], RequestStale)
    request = request_of(api, request_id)
    assert request["state"] == "stale"
    assert [approval["principal"] for approval in request["approvals"]] == [CAROL]
    assert request["author"] == ALICE
