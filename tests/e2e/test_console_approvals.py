"""The console's approval flow in Debian's Chromium, with two identities against one local runner.

Each browser context sends the runner's ``X-Local-Actor`` header on every request, as its own principal: the
header exists only in the local runner (``flagctl console`` drops it; a deployed function reads API Gateway's
request context alone), so the page itself never names who it is. The author's console turns an edit of a
protected flag into a change request and is refused its own approval; the approver's console shows the request's
diff against the current state and approves it, which applies it as one version. Every test ends with no request
beyond loopback and no script error; axe and the 375 px layout are checked on the Requests view.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from flagctl.cli import AUTH, CONFLICT, OK, main as flagctl_main
from local.gateway import LOCAL_ACCOUNT
from tests.support.console import (
    PHONE_HEIGHT,
    PHONE_WIDTH,
    Session,
    assert_stayed_local,
    open_console,
    session,
    show_view,
)
from tests.support.runner import Runner, declarations_command, eventually, protected_declarations, start_runner

ACTOR_HEADER = "X-Local-Actor"
ALICE = f"arn:aws:iam::{LOCAL_ACCOUNT}:user/alice"
BOB = f"arn:aws:iam::{LOCAL_ACCOUNT}:user/bob"
ON_CALL = f"arn:aws:iam::{LOCAL_ACCOUNT}:user/on-call"
PROTECTED = "maintenance_mode"


# maintenance_mode protected: one approval, by anyone but the author; break-glass by ON_CALL alone.
PROTECTION = {"approvals": 1, "break_glass": [ON_CALL]}


@pytest.fixture(scope="module")
def approvals_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    directory = tmp_path_factory.mktemp("approvals")
    runner = start_runner(
        directory / "runner.log", command=declarations_command(protected_declarations(directory, PROTECTED, PROTECTION))
    )
    try:
        declared = {d["name"]: d for d in runner.get("/flags/declarations").body["declarations"]}
        assert declared[PROTECTED]["protection"]["approvals"] == 1, declared[PROTECTED]
        yield runner
    finally:
        runner.stop()


def as_principal(principal: str) -> dict[str, str]:
    return {ACTOR_HEADER: principal}


@pytest.fixture
def alice(browser: Browser) -> Iterator[Session]:
    """A console whose every call the runner takes as ALICE's."""
    with session(browser, extra_http_headers=as_principal(ALICE)) as opened:
        yield opened
        assert_stayed_local(opened)


@pytest.fixture
def bob(browser: Browser) -> Iterator[Session]:
    """A console whose every call the runner takes as BOB's."""
    with session(browser, extra_http_headers=as_principal(BOB)) as opened:
        yield opened
        assert_stayed_local(opened)


def axe_serious(page: Page) -> list[Any]:
    results = Axe().run(page)
    assert results.response["passes"], "axe ran no rule"
    return [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def current(runner: Runner) -> dict[str, Any]:
    """GET /flags once the read function serves the newest version."""
    records = runner.get("/flags/history?limit=1").body["records"]
    version = records[0]["version"] if records else 0
    return dict(eventually(lambda: runner.get("/flags"), lambda a: a.body["version"] == version).body)


def request_as(runner: Runner, principal: str, flags: dict[str, Any], reason: str) -> dict[str, Any]:
    answer = runner.send(
        "POST", "/flags/change-requests", {"flags": flags, "reason": reason}, headers=as_principal(principal)
    )
    assert answer.status == 201, answer.body
    return dict(answer.body["change_request"])


def request_item(page: Page, request_id: str) -> Any:
    return page.locator(f'#requests-list > li[data-request="{request_id}"]')


def test_a_protected_edit_becomes_a_request_its_author_cannot_approve_and_another_identity_applies(
    approvals_runner, alice, bob
):
    runner = approvals_runner
    before = current(runner)
    assert before["flags"][PROTECTED] is False
    # Given: Alice's console marks the protected flag
    page = open_console(alice, runner.url)
    expect(page.locator(f"#row-{PROTECTED} th .badge-protected")).to_have_text("protected: 1 approval")
    # When: she switches it, gives a reason and applies
    page.get_by_role("switch", name=PROTECTED, exact=True).click()
    expect(page.locator("#approval-text")).to_contain_text(f"{PROTECTED} is protected")
    page.get_by_role("textbox", name="Reason", exact=True).fill("db migration tonight")
    page.get_by_role("button", name="Request approval", exact=True).click()
    # Then: one change request (bound to the version she saw, with a key), nothing written
    expect(page.get_by_role("status")).to_contain_text("sent: it needs 1 approval by others")
    (sent,) = alice.api_requests("POST", "/flags/change-requests")
    assert sent.post_data_json == {
        "flags": {PROTECTED: True},
        "reason": "db migration tonight",
        "if_version": before["version"],
    }
    assert sent.headers.get("idempotency-key")
    assert alice.api_requests("PATCH", "/flags") == []
    (pending,) = runner.get("/flags/change-requests?state=pending").body["change_requests"]
    assert (pending["author"], pending["state"]) == (ALICE, "pending")
    assert current(runner)["flags"][PROTECTED] is False
    # When: she tries to approve her own request
    show_view(page, "requests")
    mine = request_item(page, pending["id"])
    mine.get_by_role("button", name=f"Approve change request {pending['id']}").click()
    # Then: the API refuses it, and the page says why
    expect(mine.get_by_role("alert")).to_contain_text("(403 SELF_APPROVAL)")

    # Given: Bob's console, on the Requests view
    other = open_console(bob, runner.url, view="requests")
    theirs = request_item(other, pending["id"])
    # Then: the request with its diff against its base and now, and who asked
    expect(theirs.locator(".author")).to_have_text(ALICE)
    expect(theirs.locator(".approvals")).to_have_text("0 of 1")
    row = theirs.locator(f'tr[data-flag="{PROTECTED}"]')
    expect(row.locator("td")).to_have_text(["false", "false", "true"])
    assert axe_serious(other) == []
    # When: he approves it with a reason
    theirs.get_by_role("textbox", name=f"Reason for your decision on {pending['id']}").fill("checked with the DBA")
    theirs.get_by_role("button", name=f"Approve change request {pending['id']}").click()
    # Then: his approval applied it, as one new version
    expect(other.get_by_role("status")).to_contain_text(
        f"Approved change request {pending['id']}: applied, now at version {before['version'] + 1}."
    )
    (approval,) = bob.api_requests("POST", f"/flags/change-requests/{pending['id']}/approve")
    assert approval.post_data_json == {"reason": "checked with the DBA"} and approval.headers.get("idempotency-key")
    after = current(runner)
    assert (after["version"], after["flags"][PROTECTED]) == (before["version"] + 1, True)
    applied = runner.get(f"/flags/change-requests/{pending['id']}").body["change_request"]
    assert (applied["state"], [a["principal"] for a in applied["approvals"]]) == ("applied", [BOB])
    # And the history says who asked and who approved
    show_view(other, "history")
    newest = other.locator("#history-list > li").first
    expect(newest).to_contain_text(f"requested by {ALICE}, approved by {BOB} (")
    # And the pending list is empty again
    show_view(other, "requests")
    expect(other.locator("#requests-empty")).to_be_visible()


def test_a_request_whose_flag_moved_is_shown_moved_and_its_approval_refused_stale(approvals_runner, bob, browser):
    runner = approvals_runner
    # Given: two requests on the same protected flag; the first is approved and applied
    value = not current(runner)["flags"][PROTECTED]
    first = request_as(runner, ALICE, {PROTECTED: value}, "first")
    second = request_as(runner, ALICE, {PROTECTED: value, "ai_search_enabled": True}, "second, same base")
    approved = runner.send("POST", f"/flags/change-requests/{first['id']}/approve", {}, headers=as_principal(BOB))
    assert approved.status == 200 and approved.body["applied"] is True, approved.body
    current(runner)
    # When: Bob opens the pending requests
    page = open_console(bob, runner.url, view="requests")
    item = request_item(page, second["id"])
    # Then: the flag that moved since the second request's base is marked, with what approving would do
    moved = item.locator(f'tr[data-flag="{PROTECTED}"]')
    expect(moved).to_have_class("moved")
    expect(moved.locator("td").nth(1)).to_contain_text("(moved since the request)")
    expect(item.locator(".moved-note")).to_contain_text("approving it will be refused")
    # When: he approves it all the same
    item.get_by_role("button", name=f"Approve change request {second['id']}").click()
    # Then: 412, nothing written, and the request is now stale
    expect(page.get_by_role("status")).to_contain_text("Refused by the server")
    assert runner.get(f"/flags/change-requests/{second['id']}").body["change_request"]["state"] == "stale"
    # And on a phone the Requests view does not scroll sideways, and axe finds nothing serious
    with session(
        browser,
        width=PHONE_WIDTH,
        height=PHONE_HEIGHT,
        is_mobile=True,
        has_touch=True,
        extra_http_headers=as_principal(BOB),
    ) as phone:
        small = open_console(phone, runner.url)
        show_view(small, "requests")
        small.get_by_role("combobox", name="Show").select_option("")
        expect(request_item(small, second["id"])).to_be_visible()
        assert small.evaluate("document.documentElement.scrollWidth") <= PHONE_WIDTH
        assert axe_serious(small) == []
        assert_stayed_local(phone)


def flagctl(runner: Runner, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = flagctl_main(["--url", runner.url, *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_flagctl_asks_for_a_protected_change_cannot_approve_its_own_and_shows_who_approved(approvals_runner):
    runner = approvals_runner
    value = not current(runner)["flags"][PROTECTED]
    assignment = f"{PROTECTED}={json.dumps(value)}"
    # Given: a direct write of the protected flag is refused, with the command to use instead
    code, _, err = flagctl(runner, "set", assignment, "--reason", "flagctl e2e")
    assert code == AUTH and "APPROVAL_REQUIRED" in err
    assert (
        err.splitlines()[-1]
        == f"flagctl: ask for approval instead: flagctl request create {assignment} --reason 'flagctl e2e'"
    )
    # When: the same change is asked for
    code, out, _ = flagctl(runner, "request", "create", assignment, "--reason", "flagctl e2e")
    # Then
    assert code == OK, out
    request_id = out.splitlines()[0].removeprefix("change request ")
    assert "approvals  0 of 1 (needs 1 more)" in out
    code, out, _ = flagctl(runner, "request", "list")
    assert code == OK and any(line.startswith(f"{request_id}  pending  change  0 of 1") for line in out.splitlines())
    # And its author cannot approve it
    code, _, err = flagctl(runner, "request", "approve", request_id)
    assert code == AUTH and "SELF_APPROVAL" in err
    # When: another principal approves it
    approved = runner.send("POST", f"/flags/change-requests/{request_id}/approve", {}, headers=as_principal(BOB))
    assert approved.status == 200 and approved.body["applied"] is True, approved.body
    # Then: show and history say who approved it and which version it wrote
    version = approved.body["version"]
    code, out, _ = flagctl(runner, "request", "show", request_id)
    assert code == OK and f"applied    as version {version}" in out and f"  approved by {BOB} at " in out
    code, out, _ = flagctl(runner, "history", "--limit", "1")
    assert code == OK and f"change_request_applied {request_id} requested by " in out and f"approved by {BOB} at" in out
    # And a closed request cannot be withdrawn: a conflict
    code, _, err = flagctl(runner, "request", "withdraw", request_id)
    assert code == CONFLICT and "REQUEST_CLOSED" in err


def test_break_glass_from_the_console_is_refused_to_others_and_applies_at_once_for_a_listed_principal(
    approvals_runner, alice, browser
):
    runner = approvals_runner
    before = current(runner)
    value = not before["flags"][PROTECTED]

    def break_glass(page: Page, reason: str) -> None:
        page.get_by_role("switch", name=PROTECTED, exact=True).click()
        page.get_by_role("checkbox", name="Break glass: apply at once, alone, without approvals").check()
        page.get_by_role("textbox", name="Reason", exact=True).fill(reason)
        page.get_by_role("button", name="Request approval", exact=True).click()

    # When: Alice, not listed for break-glass, breaks glass
    page = open_console(alice, runner.url)
    break_glass(page, "outage, alice")
    # Then: refused, nothing written
    expect(page.locator("#failure")).to_contain_text("(403 BREAK_GLASS_REFUSED)")
    (sent,) = alice.api_requests("POST", "/flags/change-requests")
    assert sent.post_data_json["break_glass"] is True
    assert current(runner)["version"] == before["version"]
    # When: the on-call principal breaks glass with the kill switch
    with session(browser, extra_http_headers=as_principal(ON_CALL)) as on_call:
        other = open_console(on_call, runner.url)
        kill = other.get_by_role("region", name=re.compile("^Kill switch"))
        expect(kill).to_contain_text(f"{PROTECTED} is protected")
        kill.get_by_role("checkbox", name=re.compile("^Break glass: switch at once")).check()
        kill.get_by_role("textbox", name="Reason for the switch").fill("outage, on call")
        kill.get_by_role("button", name=re.compile("^Request: switch maintenance")).click()
        # Then: applied at once, alone, as its own kind of version
        expect(other.get_by_role("status")).to_contain_text(
            f"Applied at once (break glass): now at version {before['version'] + 1}."
        )
        assert_stayed_local(on_call)
    after = current(runner)
    assert (after["version"], after["flags"][PROTECTED]) == (before["version"] + 1, value)
    (record,) = runner.get("/flags/history?limit=1").body["records"]
    assert (record["kind"], record["actor"]) == ("break_glass", ON_CALL)
