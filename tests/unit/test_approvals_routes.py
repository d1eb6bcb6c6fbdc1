"""Change requests through the write function (moto): each approval rule by name, break-glass, exactly-once,
and every path around them refused.

The function is loaded with protected declarations: ``kill_switch`` needs 2 approvals from the account's users or
roles (break-glass: the OnCall role), ``maintenance_mode`` 1 from anyone (break-glass: OnCall); ``rate_limit``
and ``banner`` are unprotected tunables. The caller is the event's ``userArn``, as API Gateway sets it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from local.functions import load_module
from singleton_flags.keys import change_request_key
from singleton_flags_service import contract
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.vocabulary import (
    KIND_BREAK_GLASS,
    KIND_CHANGE_REQUEST,
    KIND_GUARD_REVERT,
    KIND_RESTORE,
    KIND_WINDOW_END,
    KIND_WINDOW_START,
)
from singleton_flags_service.writes.store import FlagStore, Ownership
from tests.support.approvals import (
    ACCOUNT,
    ALICE,
    APPROVER_ROLE,
    BOB,
    CAROL,
    DAVE,
    ON_CALL,
    OUTSIDER,
    TRUSTED_ROLE,
    protected_declarations,
    session,
)
from tests.support.unit import Clock, WriteApi, body_of, emf_metrics, headers_of, install

WRITE_API = "singleton_flags_service.handlers.write_api"
REQUESTS = "/flags/change-requests"


@pytest.fixture
def approvals_api(
    ddb: Any, table_name: str, clock: Clock, make_event: Any, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WriteApi]:
    """The write function, loaded (a cold start) with the protected declarations, over the seeded moto table."""
    declarations = protected_declarations()
    monkeypatch.setattr(contract, "load_service_declarations", lambda *_: declarations)
    previous = sys.modules.pop(WRITE_API, None)
    try:
        module = load_module(WRITE_API, fresh=True)
        install(module, ddb, table_name, clock, monkeypatch)
        monkeypatch.setattr(module, "CHANGE_REQUESTS", ChangeRequests(ddb, table_name, module.STORE, clock=clock))
        module.STORE.seed(actor="test", reason="seed")
        yield WriteApi(module, ddb, table_name, make_event, lambda_context)
    finally:
        sys.modules.pop(WRITE_API, None)
        if previous is not None:
            sys.modules[WRITE_API] = previous


def create(api: WriteApi, caller: str = ALICE, **body: Any) -> dict[str, Any]:
    body.setdefault("reason", "incident 42")
    if "revert_to" not in body:
        body.setdefault("flags", {"kill_switch": True})
    return api("POST", REQUESTS, body=body, caller_arn=caller, headers=body.pop("headers", None))


def created_id(api: WriteApi, caller: str = ALICE, **body: Any) -> str:
    response = create(api, caller, **body)
    assert response["statusCode"] == 201, body_of(response)
    return str(body_of(response)["change_request"]["id"])


def approve(api: WriteApi, request_id: str, caller: str, **options: Any) -> dict[str, Any]:
    return api("POST", f"{REQUESTS}/{request_id}/approve", body={}, caller_arn=caller, **options)


def error_of(response: dict[str, Any]) -> tuple[int, str]:
    return response["statusCode"], body_of(response)["error"]["code"]


def flags_now(api: WriteApi) -> dict[str, Any]:
    return dict(body_of(api("GET", "/flags/history", query={"limit": "1"}))["records"][0]["state"])


def versions(api: WriteApi) -> list[tuple[int, str]]:
    return [(record["version"], record["kind"]) for record in body_of(api.history())["records"]]


# -- the request --------------------------------------------------------------------------------------------------


def test_a_request_is_bound_to_the_base_values_of_its_flags_and_of_every_protected_flag(approvals_api: WriteApi):
    # When alice asks for the kill switch
    response = create(approvals_api, flags={"kill_switch": True, "rate_limit": 10})
    # Then the request is pending, bound to version 0's values of what it touches and of every protected flag
    request = body_of(response)["change_request"]
    assert response["statusCode"] == 201
    assert request["state"] == "pending"
    assert request["kind"] == "change"
    assert request["base_version"] == 0
    assert request["base_values"] == {"kill_switch": False, "maintenance_mode": False, "rate_limit": 600}
    assert request["protected_flags"] == ["kill_switch"]
    assert request["required_approvals"] == 2
    assert request["author"] == ALICE
    assert request["approvals"] == []
    assert len(request["id"]) == 32
    # And nothing was written to the flags
    assert versions(approvals_api) == []


def test_a_request_of_unprotected_flags_only_is_refused(approvals_api: WriteApi):
    response = create(approvals_api, flags={"rate_limit": 10})
    assert error_of(response) == (400, "INVALID_REQUEST")
    assert body_of(response)["error"]["rule"] == "unprotected"


def test_a_revert_request_is_resolved_to_the_patch_it_makes(approvals_api: WriteApi):
    # Given version 1 set the kill switch (through an approved request)
    request_id = created_id(approvals_api)
    approve(approvals_api, request_id, BOB)
    approve(approvals_api, request_id, CAROL)
    # When alice asks to revert to version 0
    request = body_of(create(approvals_api, revert_to=0))["change_request"]
    # Then the request holds the exact values the revert writes
    assert (request["kind"], request["revert_to"], request["flags"]) == ("revert", 0, {"kill_switch": False})


# -- the rules, by name ---------------------------------------------------------------------------------------------


def test_self_approval_is_refused(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    assert error_of(approve(approvals_api, request_id, ALICE)) == (403, "SELF_APPROVAL")


def test_the_same_role_under_two_session_names_is_one_principal(approvals_api: WriteApi):
    # Given a request created by a session of the Approver role
    request_id = created_id(approvals_api, session(APPROVER_ROLE, "alice"))
    # Then another session of that role is its author: a self-approval
    assert error_of(approve(approvals_api, request_id, session(APPROVER_ROLE, "alice-2"))) == (403, "SELF_APPROVAL")
    # And given bob's approval under one session name, another session name does not count twice
    other = created_id(approvals_api, BOB)
    assert approve(approvals_api, other, session(APPROVER_ROLE, "one"))["statusCode"] == 200
    assert error_of(approve(approvals_api, other, session(APPROVER_ROLE, "two"))) == (409, "ALREADY_APPROVED")
    approvals = body_of(approvals_api("GET", f"{REQUESTS}/{other}"))["change_request"]["approvals"]
    assert [approval["principal"] for approval in approvals] == [APPROVER_ROLE]


def test_a_role_trusted_to_name_its_sessions_counts_each_session(approvals_api: WriteApi):
    request_id = created_id(approvals_api, BOB)
    assert approve(approvals_api, request_id, session(TRUSTED_ROLE, "alice"))["statusCode"] == 200
    answer = body_of(approve(approvals_api, request_id, session(TRUSTED_ROLE, "carol")))
    assert answer["applied"] is True


def test_one_principal_counts_once(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    assert approve(approvals_api, request_id, BOB)["statusCode"] == 200
    assert error_of(approve(approvals_api, request_id, BOB)) == (409, "ALREADY_APPROVED")
    assert versions(approvals_api) == []


def test_an_outsider_is_not_an_approver(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    response = approve(approvals_api, request_id, OUTSIDER)
    assert error_of(response) == (403, "NOT_AN_APPROVER")
    assert body_of(response)["error"]["flag"] == "kill_switch"


def test_an_expired_request_cannot_be_approved(approvals_api: WriteApi, clock: Clock):
    request_id = created_id(approvals_api)
    clock.advance(72 * 3600)
    response = approve(approvals_api, request_id, BOB)
    assert error_of(response) == (409, "REQUEST_CLOSED")
    assert body_of(response)["error"]["state"] == "expired"


def test_a_withdrawn_request_cannot_be_approved(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    withdraw = approvals_api("POST", f"{REQUESTS}/{request_id}/withdraw", body={}, caller_arn=ALICE)
    assert body_of(withdraw)["change_request"]["state"] == "withdrawn"
    assert error_of(approve(approvals_api, request_id, BOB)) == (409, "REQUEST_CLOSED")


def test_only_the_author_withdraws(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    response = approvals_api("POST", f"{REQUESTS}/{request_id}/withdraw", body={}, caller_arn=BOB)
    assert error_of(response) == (403, "NOT_THE_AUTHOR")


def test_a_rejected_request_cannot_be_approved(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    reject = approvals_api("POST", f"{REQUESTS}/{request_id}/reject", body={"reason": "not now"}, caller_arn=CAROL)
    assert body_of(reject)["change_request"]["decided"]["by"] == CAROL
    assert error_of(approve(approvals_api, request_id, BOB)) == (409, "REQUEST_CLOSED")


def test_an_applied_request_cannot_be_applied_twice(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    approve(approvals_api, request_id, BOB)
    assert body_of(approve(approvals_api, request_id, CAROL))["applied"] is True
    response = approve(approvals_api, request_id, DAVE)
    assert error_of(response) == (409, "REQUEST_CLOSED")
    assert body_of(response)["error"]["state"] == "applied"
    assert versions(approvals_api) == [(1, KIND_CHANGE_REQUEST)]


def test_the_last_approval_applies_the_change_in_one_audited_version(approvals_api: WriteApi):
    request_id = created_id(approvals_api, flags={"kill_switch": True, "rate_limit": 10})
    first = body_of(approve(approvals_api, request_id, BOB))
    assert (first["applied"], first["version"], first["change_request"]["state"]) == (False, None, "pending")
    last = body_of(approve(approvals_api, request_id, CAROL))
    assert (last["applied"], last["version"], last["change_request"]["state"]) == (True, 1, "applied")
    assert last["change_request"]["applied_version"] == 1
    record = body_of(approvals_api.history())["records"][0]
    assert record["kind"] == KIND_CHANGE_REQUEST
    assert record["change_request"] == request_id
    assert record["requested_by"] == ALICE
    assert [approval["principal"] for approval in record["approved_by"]] == [BOB, CAROL]
    assert record["changes"] == {"kill_switch": {"old": False, "new": True}, "rate_limit": {"old": 600, "new": 10}}


def test_a_touched_flag_moved_refuses_the_last_approval_and_marks_the_request_stale(approvals_api: WriteApi):
    # Given two requests from version 0, the second also touching rate_limit
    first = created_id(approvals_api, flags={"maintenance_mode": True})
    second = created_id(approvals_api, flags={"kill_switch": True, "rate_limit": 5})
    approve(approvals_api, second, BOB)
    # When rate_limit moves (a direct write: it is not protected)
    assert approvals_api.patch({"rate_limit": 7})["statusCode"] == 200
    # Then the second's last approval is refused and the request is stale
    response = approve(approvals_api, second, CAROL)
    assert error_of(response) == (412, "REQUEST_STALE")
    assert body_of(response)["error"]["moved"] == ["rate_limit"]
    assert body_of(approvals_api("GET", f"{REQUESTS}/{second}"))["change_request"]["state"] == "stale"
    # And when a protected flag moves (the first applied), a request bound to its old value is stale too
    third = created_id(approvals_api, flags={"kill_switch": True})
    approve(approvals_api, first, BOB)
    assert error_of(approve(approvals_api, third, BOB)) == (412, "REQUEST_STALE")  # the first approval already
    assert [kind for _, kind in versions(approvals_api)] == [KIND_CHANGE_REQUEST, "change"]


def test_an_unrelated_flag_moving_does_not_invalidate_the_request(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    approve(approvals_api, request_id, BOB)
    assert approvals_api.patch({"banner": "hello"})["statusCode"] == 200
    answer = body_of(approve(approvals_api, request_id, CAROL))
    assert (answer["applied"], answer["version"]) == (True, 2)
    assert flags_now(approvals_api)["banner"] == "hello"


def test_a_request_cannot_be_edited_after_approval(approvals_api: WriteApi):
    request_id = created_id(approvals_api)
    approve(approvals_api, request_id, BOB)
    # No route edits a request
    path = f"{REQUESTS}/{request_id}"
    for method in ("PATCH", "PUT"):
        assert approvals_api(method, path, body={"flags": {"kill_switch": False}})["statusCode"] == 405
    # And an edit of its item behind the API's back breaks its hash: nothing approves or applies it
    item = approvals_api.client.get_item(TableName=approvals_api.table, Key=change_request_key(request_id))["Item"]
    item["content"]["S"] = item["content"]["S"].replace('"kill_switch":true', '"kill_switch":false')
    approvals_api.client.put_item(TableName=approvals_api.table, Item=item)
    assert error_of(approve(approvals_api, request_id, CAROL)) == (409, "REQUEST_ALTERED")
    assert versions(approvals_api) == []


def test_a_different_patch_is_a_different_request(approvals_api: WriteApi):
    assert created_id(approvals_api) != created_id(approvals_api, flags={"kill_switch": True, "banner": "x"})


# -- exactly once ---------------------------------------------------------------------------------------------------


def test_create_and_approve_honour_idempotency_key(approvals_api: WriteApi):
    key = {"Idempotency-Key": "create-1"}
    first = create(approvals_api, headers=key)
    again = create(approvals_api, headers=key)
    assert body_of(again)["change_request"]["id"] == body_of(first)["change_request"]["id"]
    assert headers_of(again).get("Idempotent-Replayed") == "true"
    request_id = body_of(first)["change_request"]["id"]
    approve(approvals_api, request_id, BOB)
    last = approve(approvals_api, request_id, CAROL, headers={"Idempotency-Key": "approve-1"})
    replay = approve(approvals_api, request_id, CAROL, headers={"Idempotency-Key": "approve-1"})
    assert (body_of(replay)["applied"], body_of(replay)["version"]) == (True, 1)
    assert headers_of(replay).get("Idempotent-Replayed") == "true"
    assert body_of(last)["version"] == 1
    assert versions(approvals_api) == [(1, KIND_CHANGE_REQUEST)]


# -- no way around it ----------------------------------------------------------------------------------------------


def test_a_direct_patch_of_a_protected_flag_is_refused(approvals_api: WriteApi):
    before = approvals_api.state()
    response = approvals_api.patch({"kill_switch": True, "rate_limit": 5})
    assert error_of(response) == (403, "APPROVAL_REQUIRED")
    assert body_of(response)["error"]["flags"] == ["kill_switch"]
    assert approvals_api.state() == before


def test_a_guarded_patch_of_a_protected_flag_is_refused(approvals_api: WriteApi):
    body = {"flags": {"maintenance_mode": True}, "reason": "r", "guard": {"alarms": ["x"], "bake_minutes": 10}}
    assert error_of(approvals_api("PATCH", "/flags", body=body)) == (403, "APPROVAL_REQUIRED")


def test_a_revert_touching_a_protected_flag_is_refused(approvals_api: WriteApi):
    request_id = created_id(approvals_api, flags={"maintenance_mode": True})
    approve(approvals_api, request_id, BOB)
    assert approvals_api.patch({"rate_limit": 5})["statusCode"] == 200
    before = approvals_api.state()
    assert error_of(approvals_api.revert(0)) == (403, "APPROVAL_REQUIRED")
    assert approvals_api.state() == before
    # And a revert that leaves every protected flag as it is goes through
    assert approvals_api.revert(1)["statusCode"] == 200
    assert flags_now(approvals_api)["rate_limit"] == 600


def test_a_scheduled_change_of_a_protected_flag_is_refused(approvals_api: WriteApi):
    # Given a time a scheduled change may take (tomorrow, a whole minute)
    at = (datetime.now(UTC) + timedelta(days=1)).replace(second=0, microsecond=0).isoformat()
    body = {"flags": {"kill_switch": True}, "reason": "r", "at": at}
    before = approvals_api.state()
    assert error_of(approvals_api("POST", "/flags/schedules", body=body)) == (403, "APPROVAL_REQUIRED")
    assert approvals_api.state() == before


def test_a_scheduled_change_is_refused_when_it_comes_due_on_a_protected_flag(approvals_api: WriteApi):
    # A schedule created before the flag was protected: the store refuses its version when it comes due
    store = approvals_api.module.STORE
    with pytest.raises(Exception, match="protected") as refused:
        store.change({"kill_switch": True}, actor="schedule:x", reason="r", kind="scheduled")
    assert type(refused.value).__name__ == "ApprovalRequired"


@pytest.mark.parametrize("kind", [KIND_WINDOW_START, KIND_WINDOW_END, KIND_GUARD_REVERT])
def test_automatic_safety_writes_are_never_blocked(approvals_api: WriteApi, kind: str):
    store: FlagStore = approvals_api.module.STORE
    ownership = Ownership("nightly", 4102444800) if kind == KIND_WINDOW_START else None
    result = store.change({"maintenance_mode": True}, actor="scheduler", reason="r", kind=kind, ownership=ownership)
    assert result.applied
    assert versions(approvals_api)[0] == (1, kind)


def test_the_restore_and_the_seed_are_never_blocked(approvals_api: WriteApi):
    client, table = approvals_api.client, approvals_api.table
    store: FlagStore = approvals_api.module.STORE
    request_id = created_id(approvals_api, flags={"maintenance_mode": True})
    approve(approvals_api, request_id, BOB)
    client.delete_item(TableName=table, Key={"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}})
    assert store.restore(actor="ops", reason="lost").restored
    assert versions(approvals_api)[0][1] == KIND_RESTORE
    client.update_item(
        TableName=table,
        Key={"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}},
        UpdateExpression="REMOVE kill_switch",
    )
    assert store.seed(actor="deploy", reason="seed").applied


# -- break-glass ----------------------------------------------------------------------------------------------------


def test_break_glass_applies_alone_as_its_own_kind_and_is_counted(approvals_api: WriteApi, stdout: Any):
    response = create(approvals_api, ON_CALL, flags={"kill_switch": True}, break_glass=True)
    request = body_of(response)["change_request"]
    assert (response["statusCode"], request["state"], request["kind"]) == (201, "applied", "break_glass")
    assert request["applied_version"] == 1
    record = body_of(approvals_api.history())["records"][0]
    assert (record["kind"], record["actor"], record["change_request"]) == (KIND_BREAK_GLASS, ON_CALL, request["id"])
    assert ("BreakGlassUsed", 1.0) in [(name, value) for name, value, _ in emf_metrics(stdout.records())]


def test_break_glass_by_a_principal_not_listed_is_refused(approvals_api: WriteApi):
    before = approvals_api.state()
    response = create(approvals_api, ALICE, break_glass=True)
    assert error_of(response) == (403, "BREAK_GLASS_REFUSED")
    assert approvals_api.state() == before


def test_a_deployed_function_takes_the_caller_from_the_request_context_alone(approvals_api: WriteApi):
    # Given a request whose context says bob, carrying a header naming alice
    response = approvals_api(
        "POST",
        REQUESTS,
        body={"flags": {"kill_switch": True}, "reason": "r"},
        headers={"X-Local-Actor": ALICE},
        caller_arn=BOB,
    )
    # Then the author is bob
    assert body_of(response)["change_request"]["author"] == BOB


# -- reading --------------------------------------------------------------------------------------------------------


def test_requests_list_newest_first_by_state(approvals_api: WriteApi, clock: Clock):
    first = created_id(approvals_api)
    clock.advance(1)
    second = created_id(approvals_api, flags={"maintenance_mode": True})
    approve(approvals_api, second, BOB)
    listed = body_of(approvals_api("GET", REQUESTS, query={"limit": "1"}))
    assert [request["id"] for request in listed["change_requests"]] == [second]
    page_two = body_of(approvals_api("GET", REQUESTS, query={"limit": "1", "cursor": listed["next_cursor"]}))
    assert [request["id"] for request in page_two["change_requests"]] == [first]
    assert page_two["next_cursor"] is None
    pending = body_of(approvals_api("GET", REQUESTS, query={"state": "pending"}))["change_requests"]
    assert [request["id"] for request in pending] == [first]


def test_an_unknown_request_is_404(approvals_api: WriteApi):
    for request_id in ("0" * 32, "nope"):
        assert error_of(approvals_api("GET", f"{REQUESTS}/{request_id}")) == (404, "CHANGE_REQUEST_NOT_FOUND")
        assert error_of(approve(approvals_api, request_id, BOB)) == (404, "CHANGE_REQUEST_NOT_FOUND")


def test_the_declarations_carry_each_flags_protection(approvals_api: WriteApi):
    declared = {d["name"]: d for d in body_of(approvals_api("GET", "/flags/declarations"))["declarations"]}
    assert declared["kill_switch"]["protection"]["approvals"] == 2
    assert declared["kill_switch"]["protection"]["break_glass"] == [ON_CALL]
    assert "protection" not in declared["rate_limit"]
    assert ACCOUNT in declared["kill_switch"]["protection"]["approvers"][0]
