"""flagctl's change requests without a network: what each ``flagctl request`` command sends, what it prints, and
its refusals (bad input sends nothing; the API's refusals keep their exit codes).

A fake transport records the request flagctl would send and answers a canned response.
"""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest

from flagctl.cli import AUTH, BAD_INPUT, CONFLICT, OK, SERVER, main
from flagctl.client import Answer, Outgoing

ALICE = "arn:aws:iam::123456789012:role/Operator"
BOB = "arn:aws:iam::123456789012:role/OnCall"
REQUEST_ID = "cr_3f9a0c5e7b1d"
BASE = "http://127.0.0.1:3000/flags/change-requests"


def change_request(**overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "id": REQUEST_ID,
        "state": "pending",
        "kind": "change",
        "flags": {"maintenance_mode": True, "search_ranking": "hybrid"},
        "revert_to": None,
        "base_version": 4,
        "base_values": {"maintenance_mode": False, "search_ranking": "classic"},
        "protected_flags": ["maintenance_mode"],
        "required_approvals": 2,
        "approvals": [],
        "author": ALICE,
        "reason": "database migration",
        "created_at": "2026-12-02T09:00:00.000+00:00",
        "expires_at": "2026-12-03T09:00:00.000+00:00",
        "decided": None,
        "applied_version": None,
    }
    request.update(overrides)
    return request


class FakeTransport:
    def __init__(self, status: int, body: Any) -> None:
        self.sent: list[Outgoing] = []
        self.answer = Answer(status, {}, body)

    def __call__(self, outgoing: Outgoing) -> Answer:
        self.sent.append(outgoing)
        return self.answer


def run(argv: list[str], transport: FakeTransport) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, transport=transport, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def sent_json(outgoing: Outgoing) -> Any:
    return json.loads(outgoing.body or b"null")


# -- create ----------------------------------------------------------------------------------------------


def test_create_posts_the_typed_patch_its_reason_and_base_version_with_a_fresh_idempotency_key():
    # Given
    transport = FakeTransport(201, {"change_request": change_request()})
    # When
    code, out, _ = run(
        ["request", "create", "maintenance_mode=true", "search_ranking=hybrid", "--reason", "migration",
         "--if-version", "4"],
        transport,
    )  # fmt: skip
    # Then: one POST with the patch as the API takes it
    (sent,) = transport.sent
    assert (sent.method, sent.url) == ("POST", BASE)
    assert sent_json(sent) == {
        "flags": {"maintenance_mode": True, "search_ranking": "hybrid"},
        "reason": "migration",
        "if_version": 4,
    }
    assert uuid.UUID(sent.headers["Idempotency-Key"]).version == 4
    # And the request is printed with its diff against the values at its base
    assert code == OK
    assert f"change request {REQUEST_ID}" in out
    assert "approvals  0 of 2 (needs 2 more)" in out
    assert out.splitlines()[-3:] == [
        "FLAG                          AT BASE (VERSION 4)  REQUESTED",
        "maintenance_mode (protected)  false                true",
        'search_ranking                "classic"            "hybrid"',
    ]


def test_a_revert_request_names_its_target_version_and_no_flags():
    transport = FakeTransport(
        201, {"change_request": change_request(kind="revert", flags=None, revert_to=2, base_values={"a_flag": 1})}
    )
    code, out, _ = run(["request", "create", "--revert-to", "2", "--reason", "back", "--if-version", "4"], transport)
    assert sent_json(transport.sent[0]) == {"revert_to": 2, "reason": "back", "if_version": 4}
    assert code == OK and "asks for   revert to version 2" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["request", "create", "--reason", "r"],  # neither a patch nor a revert
        ["request", "create", "a=1", "--revert-to", "2", "--reason", "r"],  # both
        ["request", "create", "a=1", "a=2", "--reason", "r"],
        ["request", "create", "Not/A/Flag=1", "--reason", "r"],
        ["request", "break-glass", "--reason", "r"],
    ],
    ids=["neither", "both", "twice", "bad-name", "break-glass-empty"],
)
def test_a_request_that_is_not_one_change_is_bad_input_and_nothing_is_sent(argv):
    transport = FakeTransport(201, {})
    code, out, err = run(argv, transport)
    assert (code, out, transport.sent) == (BAD_INPUT, "", [])
    assert err.startswith("flagctl: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["request", "create", "a=1"],  # no reason
        ["request", "reject", REQUEST_ID],  # a rejection needs a reason
        ["request", "list", "--state", "open"],
        ["request", "approve"],
        ["request"],
    ],
)
def test_request_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as caught:
        main(argv, transport=FakeTransport(200, {}))
    assert caught.value.code == BAD_INPUT


def test_break_glass_asks_for_the_change_to_apply_at_once_and_says_it_did():
    # Given a break-glass principal's request, applied at once
    applied = change_request(
        kind="break_glass", state="applied", applied_version=5, required_approvals=0, author=BOB,
    )  # fmt: skip
    transport = FakeTransport(201, {"change_request": applied})
    # When
    code, out, _ = run(["request", "break-glass", "maintenance_mode=true", "--reason", "outage"], transport)
    # Then
    assert sent_json(transport.sent[0]) == {
        "flags": {"maintenance_mode": True},
        "reason": "outage",
        "break_glass": True,
    }
    assert "Idempotency-Key" in transport.sent[0].headers
    assert code == OK
    assert "kind       break glass (applied at once, alone; it raised an alarm)" in out
    assert "applied    as version 5" in out


# -- list and show ---------------------------------------------------------------------------------------


def test_list_asks_for_the_pending_requests_by_default_and_prints_one_row_each():
    transport = FakeTransport(200, {"change_requests": [change_request()], "next_cursor": "next1"})
    code, out, _ = run(["request", "list", "--limit", "5"], transport)
    assert transport.sent[0].url == f"{BASE}?state=pending&limit=5"
    assert "Idempotency-Key" not in transport.sent[0].headers
    lines = out.splitlines()
    assert code == OK
    assert lines[0].split() == ["ID", "STATE", "KIND", "APPROVALS", "AUTHOR", "EXPIRES", "ASKS", "FOR", "REASON"]
    assert lines[1].startswith(f"{REQUEST_ID}  pending  change  0 of 2 (needs 2 more)  {ALICE}")
    assert 'maintenance_mode = true; search_ranking = "hybrid"' in lines[1]
    assert lines[-1] == "older: --cursor next1"


def test_list_all_sends_no_state_and_an_empty_page_says_so():
    transport = FakeTransport(200, {"change_requests": []})
    code, out, _ = run(["request", "list", "--state", "all"], transport)
    assert transport.sent[0].url == BASE
    assert (code, out.strip()) == (OK, "no change requests")


def test_show_prints_who_approved_and_how_it_was_decided():
    request = change_request(
        state="rejected",
        approvals=[{"principal": BOB, "at": "2026-12-02T09:05:00.000+00:00"}],
        decided={
            "by": "arn:aws:iam::123456789012:role/Lead",
            "at": "2026-12-02T09:10:00.000+00:00",
            "reason": "not now",
        },
    )
    transport = FakeTransport(200, {"change_request": request})
    code, out, _ = run(["request", "show", REQUEST_ID], transport)
    assert (transport.sent[0].method, transport.sent[0].url) == ("GET", f"{BASE}/{REQUEST_ID}")
    assert code == OK
    assert "state      rejected: it can no longer be approved" in out
    assert "approvals  1 of 2\n" in out  # no "needs more" once closed
    assert f"  approved by {BOB} at 2026-12-02T09:05:00.000+00:00" in out
    assert "decided    by arn:aws:iam::123456789012:role/Lead at 2026-12-02T09:10:00.000+00:00: not now" in out


@pytest.mark.parametrize("request_id", ["../flags", "a/b", "cr 1", "", "x" * 129, "cr\u202e1", "cr%2F1", "cr1\n"])
def test_an_id_that_cannot_be_a_request_is_bad_input_and_nothing_is_sent(request_id):
    for action in ("show", "approve", "withdraw"):
        transport = FakeTransport(200, {})
        code, out, err = run(["request", action, request_id], transport)
        assert (code, out, transport.sent) == (BAD_INPUT, "", [])
        assert "not a change request id" in err and "\u202e" not in err


def test_a_request_from_the_trail_cannot_reach_the_terminal_raw():
    # Given a request whose author, reason and flag value carry terminal escapes and a forged line
    request = change_request(reason="fine\n5  fake row\u001b[31m", author="arn:aws:iam::1:user/\u001b]0;x\u0007")
    request["flags"] = {"search_ranking": "\u202ehybrid"}
    code, out, _ = run(["request", "show", REQUEST_ID], FakeTransport(200, {"change_request": request}))
    # Then
    assert code == OK
    assert not any(char in out for char in "\u001b\u0007\u202e\r")
    assert "fine\\n5  fake row\\x1b[31m" in out and "\\u202e" in out


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"change_request": None},
        {"change_request": [1]},
        {"change_request": {"id": "x"}},
        {"change_request": change_request(approvals=[1, "a"], required_approvals="two", flags=[1])},
        {"change_request": change_request(protected_flags=[{"a": 1}], base_values=3, decided="yes")},
        {"change_requests": [None]},
        {"change_requests": "many"},
    ],
    ids=["empty", "null", "a-list", "no-state", "odd-fields", "odder-fields", "null-row", "not-a-list"],
)
def test_an_unexpected_answer_to_a_request_command_is_a_clear_message_never_a_traceback(body):
    # Given an API (or something in front of it) answering 2xx with a body flagctl does not expect
    for argv in (["request", "show", REQUEST_ID], ["request", "list"], ["request", "approve", REQUEST_ID]):
        # When / Then: either a rendering, or one line on stderr and exit 5
        code, out, err = run(argv, FakeTransport(200, body))
        if code != OK:
            assert (code, out) == (SERVER, "")
            assert err.startswith("flagctl: unexpected answer from the API (HTTP 200)")


# -- decisions -------------------------------------------------------------------------------------------


def test_approve_posts_with_a_key_and_says_when_the_last_approval_applied_the_change():
    # Given the second of two approvals
    approved = change_request(
        state="applied",
        approvals=[{"principal": BOB, "at": "T1"}, {"principal": "arn:aws:iam::123456789012:role/Lead", "at": "T2"}],
        applied_version=5,
    )
    transport = FakeTransport(200, {"change_request": approved, "applied": True, "version": 5})
    # When
    code, out, _ = run(["request", "approve", REQUEST_ID, "--reason", "looks right"], transport)
    # Then
    (sent,) = transport.sent
    assert (sent.method, sent.url) == ("POST", f"{BASE}/{REQUEST_ID}/approve")
    assert sent_json(sent) == {"reason": "looks right"}
    assert uuid.UUID(sent.headers["Idempotency-Key"]).version == 4
    assert code == OK and out.splitlines()[0] == "approved: the change is applied, now at version 5"


def test_an_approval_short_of_the_count_says_how_many_are_still_needed():
    waiting = change_request(approvals=[{"principal": BOB, "at": "T1"}])
    transport = FakeTransport(200, {"change_request": waiting, "applied": False, "version": None})
    code, out, _ = run(["request", "approve", REQUEST_ID], transport)
    assert sent_json(transport.sent[0]) == {}
    assert code == OK and out.splitlines()[0] == "approved: 1 of 2 (needs 1 more) approvals, not applied yet"


@pytest.mark.parametrize(
    ("argv", "path", "body", "state"),
    [
        (["request", "reject", REQUEST_ID, "--reason", "wrong"], "reject", {"reason": "wrong"}, "rejected"),
        (["request", "withdraw", REQUEST_ID], "withdraw", {}, "withdrawn"),
    ],
)
def test_reject_and_withdraw_post_to_their_routes(argv, path, body, state):
    transport = FakeTransport(200, {"change_request": change_request(state=state)})
    code, out, _ = run(argv, transport)
    assert (transport.sent[0].url, sent_json(transport.sent[0])) == (f"{BASE}/{REQUEST_ID}/{path}", body)
    assert code == OK and out.splitlines()[0] == f"{state}: the request is now {state}"


@pytest.mark.parametrize(
    ("status", "code_name", "exit_status"),
    [
        (403, "SELF_APPROVAL", AUTH),
        (403, "NOT_AN_APPROVER", AUTH),
        (403, "BREAK_GLASS_REFUSED", AUTH),
        (409, "ALREADY_APPROVED", CONFLICT),
        (409, "REQUEST_CLOSED", CONFLICT),
        (412, "REQUEST_STALE", CONFLICT),
        (404, "NOT_FOUND", BAD_INPUT),
    ],
)
def test_the_apis_refusals_of_a_decision_keep_their_code_and_exit_status(status, code_name, exit_status):
    error = {"error": {"code": code_name, "message": "refused"}}
    code, out, err = run(["request", "approve", REQUEST_ID], FakeTransport(status, error))
    assert (code, out) == (exit_status, "")
    assert err.strip() == f"flagctl: HTTP {status} {code_name}: refused"


# -- history ---------------------------------------------------------------------------------------------


def test_history_names_the_request_who_asked_and_who_approved_when():
    # Given the version an approved change request wrote
    record = {
        "version": 5,
        "kind": "change_request_applied",
        "actor": ALICE,
        "reason": "database migration",
        "at": "2026-12-02T09:06:00.000+00:00",
        "changes": {"maintenance_mode": {"old": False, "new": True}},
        "change_request": REQUEST_ID,
        "requested_by": ALICE,
        "approved_by": [{"principal": BOB, "at": "2026-12-02T09:06:00.000+00:00"}],
    }
    # When
    code, out, _ = run(["history"], FakeTransport(200, {"records": [record], "next_cursor": None}))
    # Then
    assert code == OK
    assert (
        f"change_request_applied {REQUEST_ID} requested by {ALICE}, approved by {BOB} at 2026-12-02T09:06:00.000+00:00"
        in out
    )


# -- a direct write refused ------------------------------------------------------------------------------


def test_a_direct_set_of_a_protected_flag_says_how_to_ask_for_approval():
    # Given the API refuses a direct write to a protected flag
    error = {"error": {"code": "APPROVAL_REQUIRED", "message": "maintenance_mode needs 2 approvals"}}
    # When
    code, out, err = run(["set", "maintenance_mode=true", "--reason", "db migration"], FakeTransport(403, error))
    # Then: the refusal, and the command that asks for it instead, ready to paste
    assert (code, out) == (AUTH, "")
    assert err.splitlines() == [
        "flagctl: HTTP 403 APPROVAL_REQUIRED: maintenance_mode needs 2 approvals",
        "flagctl: ask for approval instead: flagctl request create maintenance_mode=true --reason 'db migration'",
    ]


def test_a_direct_revert_refused_for_approval_names_the_revert_request():
    error = {"error": {"code": "APPROVAL_REQUIRED", "message": "needs approval"}}
    code, _, err = run(["revert", "3", "--reason", "back"], FakeTransport(403, error))
    assert code == AUTH
    assert (
        err.splitlines()[-1] == "flagctl: ask for approval instead: flagctl request create --revert-to 3 --reason back"
    )


def test_with_json_a_refused_direct_write_is_the_apis_json_alone():
    error = {"error": {"code": "APPROVAL_REQUIRED", "message": "needs approval"}}
    code, out, err = run(["--json", "set", "maintenance_mode=true", "--reason", "r"], FakeTransport(403, error))
    assert (code, out, json.loads(err)) == (AUTH, "", error)
