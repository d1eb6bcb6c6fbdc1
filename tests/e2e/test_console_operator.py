"""The console in an incident, in Debian's Chromium against local runners: the flags item missing (the declared
fallbacks served, the restore), scheduled changes and guards, history an operator can act on, and the kill switch
on a phone.

The missing item is real: a runner over DynamoDB Local whose singleton item the test deletes. The other tests use
a runner of their own, so version numbers and the seeded state are known. Every test ends with no request beyond
loopback and no script error; axe and the 375 px layout are checked on each view these tests add.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from local.dynamodb_local import local_client
from singleton_flags.keys import SINGLETON_SK, singleton_key
from singleton_flags_infra.config import load_config
from tests.support.console import (
    PHONE_HEIGHT,
    PHONE_WIDTH,
    assert_stayed_local,
    open_console,
    session,
    show_view,
)
from tests.support.runner import Runner, eventually, running, start_runner

TABLE = "singleton-flags-console-missing"
GUARD_PREFIX = load_config().guard_prefix


@pytest.fixture(scope="module")
def fresh_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    with running(tmp_path_factory.mktemp("operator") / "runner.log") as started:
        yield started


def write(runner: Runner, flags: dict[str, Any], reason: str, **extra: Any) -> dict[str, Any]:
    answer = runner.send("PATCH", "/flags", {"flags": flags, "reason": reason, **extra})
    assert answer.status == 200, answer.body
    return dict(answer.body)


def settled(runner: Runner) -> dict[str, Any]:
    """GET /flags once the read function serves the newest version."""
    records = runner.get("/flags/history?limit=1").body["records"]
    version = records[0]["version"] if records else 0
    return dict(eventually(lambda: runner.get("/flags"), lambda a: a.body["version"] == version).body)


def axe_serious(page: Page) -> list[Any]:
    results = Axe().run(page)
    assert results.response["passes"], "axe ran no rule"
    return [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def no_sideways_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE_WIDTH


# ---------------------------------------------------------------- the item missing


@pytest.fixture
def missing_item(dynamodb_local_endpoint: str, tmp_path) -> Iterator[Runner]:
    """A runner over DynamoDB Local with one write in its trail, then its singleton item deleted: GET /flags
    serves the declared fallbacks (reason DEFAULT)."""
    runner = start_runner(tmp_path / "runner.log", AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local_endpoint, TABLE_NAME=TABLE)
    try:
        write(runner, {"ai_search_enabled": True, "search_ranking": "hybrid"}, "before the incident")
        local_client(dynamodb_local_endpoint).delete_item(TableName=TABLE, Key=singleton_key(SINGLETON_SK))
        eventually(lambda: runner.get("/flags"), lambda a: a.body["reason"] == "DEFAULT")
        yield runner
    finally:
        runner.stop()
        local_client(dynamodb_local_endpoint).delete_table(TableName=TABLE)


def test_with_the_item_missing_the_console_names_the_fallbacks_disables_editing_and_restores_it(missing_item, console):
    # Given: the item is gone; readers get the declared fallbacks
    fallback = missing_item.get("/flags").body
    assert (fallback["reason"], fallback["version"], fallback["flags"]["maintenance_mode"]) == ("DEFAULT", None, True)
    # When
    page = open_console(console, missing_item.url)
    # Then: the banner says what this is, never a maintenance someone switched on
    banner = page.locator("#banner")
    expect(banner).to_contain_text("the flags item is missing")
    expect(banner).to_contain_text("declared FALLBACKS, fail-closed")
    expect(banner).not_to_contain_text("switched on by hand")
    expect(banner).not_to_contain_text("Maintenance mode is ON")
    # And nothing can be edited over the fallbacks
    expect(page.get_by_role("switch", name="signup_enabled", exact=True)).to_be_disabled()
    expect(page.get_by_label("New value of api_rate_limit_per_minute", exact=True)).to_be_disabled()
    expect(page.get_by_role("button", name="Apply changes", exact=True)).to_be_disabled()
    expect(page.get_by_role("button", name="Switch maintenance off", exact=True)).to_be_disabled()
    # And axe finds nothing serious in this view
    assert axe_serious(page) == []
    # When: Restore without a reason
    restore = page.get_by_role("region", name="Restore the flags item")
    restore.get_by_role("button", name="Restore the flags item").click()
    # Then
    expect(restore.locator("#restore-error")).to_have_text("A reason is required: it goes into the audit trail.")
    assert console.api_requests("POST", "/flags/restore") == []
    # When
    restore.get_by_role("textbox", name="Reason for the restore").fill("console e2e: item deleted")
    restore.get_by_role("button", name="Restore the flags item").click()
    # Then: one restore with the reason and an Idempotency-Key, and the page reads the restored state
    expect(page.get_by_role("status")).to_contain_text("Restored the flags item from its audit trail: now at version 2")
    (sent,) = console.api_requests("POST", "/flags/restore")
    assert json.loads(sent.post_data or "{}") == {"reason": "console e2e: item deleted"}
    assert re.fullmatch(r"[0-9a-f-]{32,36}", sent.headers["idempotency-key"])
    expect(page.locator("#state-version")).to_have_text("2")
    expect(page.locator("#state-reason")).not_to_have_text("DEFAULT")
    expect(banner).to_be_hidden()
    expect(restore).to_be_hidden()
    expect(page.get_by_role("switch", name="ai_search_enabled", exact=True)).to_be_enabled()
    expect(page.get_by_role("switch", name="ai_search_enabled", exact=True)).to_be_checked()
    record = missing_item.get("/flags/history?limit=1").body["records"][0]
    assert (record["version"], record["kind"], record["reason"]) == (2, "restore", "console e2e: item deleted")


def test_with_the_item_missing_at_375_px_the_restore_is_on_the_page_without_sideways_scroll(missing_item, phone):
    page = open_console(phone, missing_item.url)
    expect(page.get_by_role("button", name="Restore the flags item")).to_be_visible()
    no_sideways_scroll(page)


# ---------------------------------------------------------------- scheduled changes and guards


def minutes_ahead(minutes: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(time.time() + minutes * 60 + 60))


def schedule(runner: Runner, flags: dict[str, Any], reason: str) -> dict[str, Any]:
    body = {"flags": flags, "reason": reason, "at": minutes_ahead(5), "timezone": None}
    answer = runner.send("POST", "/flags/schedules", {k: v for k, v in body.items() if v is not None})
    assert answer.status == 201, answer.body
    return dict(answer.body)


def test_the_schedules_view_lists_scheduled_changes_and_cancels_a_pending_one_after_a_confirmation(
    fresh_runner, console
):
    # Given: one change applied by its schedule, one pending
    applied = schedule(fresh_runner, {"search_ranking": "semantic"}, "console e2e: applied")
    fired = fresh_runner.send("POST", f"/_scheduler/changes/{applied['id']}")
    assert fired.status == 200 and fired.body["result"]["status"] == "applied", fired.body
    pending = schedule(fresh_runner, {"signup_enabled": False}, "console e2e: pending")
    # When
    page = open_console(console, fresh_runner.url, "schedules")
    # Then
    rows = page.locator("#schedules-body tr")
    pending_row = page.locator(f"#schedules-body tr[data-schedule='{pending['id']}']")
    applied_row = page.locator(f"#schedules-body tr[data-schedule='{applied['id']}']")
    expect(pending_row.locator(".status")).to_have_text("pending")
    expect(pending_row).to_contain_text("signup_enabled = false")
    expect(pending_row).to_contain_text("console e2e: pending")
    expect(pending_row.locator("time").first).to_have_attribute("datetime", pending["at"])
    expect(applied_row.locator(".status")).to_have_text("applied")
    expect(applied_row.locator(".outcome")).to_have_text(re.compile(r"^wrote version \d+$"))
    expect(applied_row.get_by_role("button")).to_have_count(0)
    assert rows.count() >= 2
    # When: cancel, first tap
    page.get_by_role("button", name=f"Cancel scheduled change {pending['id']}", exact=True).click()
    # Then: nothing sent yet, a confirmation asked
    assert console.api_requests("DELETE", f"/flags/schedules/{pending['id']}") == []
    confirm = page.get_by_role("button", name=f"Confirm: cancel scheduled change {pending['id']}", exact=True)
    expect(confirm).to_be_focused()
    # When
    confirm.click()
    # Then
    expect(page.get_by_role("status")).to_contain_text(f"Cancelled scheduled change {pending['id']}")
    expect(pending_row.locator(".status")).to_have_text("cancelled")
    assert len(console.api_requests("DELETE", f"/flags/schedules/{pending['id']}")) == 1
    listed = {s["id"]: s for s in fresh_runner.get("/flags/schedules").body["schedules"]}
    assert listed[pending["id"]]["status"] == "cancelled"


def test_the_guards_view_and_the_history_say_what_a_guard_and_a_schedule_did_in_words(fresh_runner, console):
    # Given: a guarded change reverted by its alarm, and a scheduled change applied
    name = f"{GUARD_PREFIX}console-e2e"
    assert fresh_runner.send("POST", f"/_alarms/{name}", {"state": "OK"}).status == 200
    guarded = write(
        fresh_runner, {"ai_search_enabled": True}, "console e2e: guarded", guard={"alarms": [name], "bake_minutes": 30}
    )
    assert fresh_runner.send("POST", f"/_alarms/{name}", {"state": "ALARM"}).status == 200
    applied = schedule(fresh_runner, {"trace_sample_rate": 0.25}, "console e2e: scheduled")
    assert fresh_runner.send("POST", f"/_scheduler/changes/{applied['id']}").status == 200
    settled(fresh_runner)
    # When
    page = open_console(console, fresh_runner.url, "guards")
    # Then: the guard, its state and alarm in words
    row = page.locator(f"#guards-body tr[data-guard='{guarded['version']}']")
    expect(row.locator(".status")).to_have_text("reverted (an alarm fired)")
    expect(row).to_contain_text(name)
    expect(row.locator(".outcome")).to_contain_text(f"reverted by version {guarded['version'] + 1}")
    # When
    show_view(page, "history")
    # Then: the kinds in words, not as the API's codes alone
    revert = page.locator(f"#history-list > li[data-version='{guarded['version'] + 1}']")
    expect(revert.locator("dd").first).to_contain_text(
        "reverted by a guard (an alarm fired during the bake): "
        f"undid version {guarded['version']}: {name} went into ALARM"
    )
    scheduled = page.locator("#history-list > li").first
    expect(scheduled.locator("dd").first).to_contain_text(f"scheduled change applied ({applied['id']}")


@pytest.mark.parametrize("view", ["schedules", "guards"])
def test_the_schedules_and_guards_views_are_axe_clean_and_fit_375_px(fresh_runner, browser, view):
    with session(browser) as opened:
        assert axe_serious(open_console(opened, fresh_runner.url, view)) == []
        assert_stayed_local(opened)
    with session(browser, width=PHONE_WIDTH, height=PHONE_HEIGHT, is_mobile=True, has_touch=True) as opened:
        no_sideways_scroll(open_console(opened, fresh_runner.url, view))
        assert_stayed_local(opened)


# ---------------------------------------------------------------- history


def test_history_times_have_seconds_and_the_current_version_offers_no_revert(fresh_runner, console):
    current = write(fresh_runner, {"api_rate_limit_per_minute": 777}, "console e2e: current")["version"]
    settled(fresh_runner)
    page = open_console(console, fresh_runner.url, "history")
    newest = page.locator("#history-list > li").first
    expect(newest.get_by_role("heading")).to_have_text(f"Version {current}")
    # 4 versions in one minute must not look alike: the seconds are shown
    expect(newest.locator("time")).to_have_text(re.compile(r"\d{1,2}:\d\d:\d\d"))
    expect(newest.get_by_role("button", name=re.compile("^Revert"))).to_have_count(0)
    expect(newest).to_contain_text("This is the current version.")
    expect(page.get_by_role("button", name=f"Revert to version {current - 1}", exact=True)).to_be_visible()


def test_version_0_the_seeded_state_has_an_entry_and_the_console_reverts_to_it(fresh_runner, console):
    # Given: the seeded values, then changes on top of them
    seeded = {d["name"]: d["initial"] for d in fresh_runner.get("/flags/declarations").body["declarations"]}
    write(fresh_runner, {"search_ranking": "hybrid", "signup_enabled": not seeded["signup_enabled"]}, "on top")
    before = settled(fresh_runner)
    page = open_console(console, fresh_runner.url, "history")
    while page.get_by_role("button", name="Load older versions").is_visible():
        page.get_by_role("button", name="Load older versions").click()
    # Then: version 0 is the last entry, named as the seeded state
    oldest = page.locator("#history-list > li").last
    expect(oldest.get_by_role("heading")).to_have_text("Version 0: the seeded state")
    # When
    oldest.get_by_role("button", name="Revert to version 0", exact=True).click()
    dialog = page.get_by_role("dialog", name="Revert to version 0")
    # Then: the preview goes back to every seeded value that differs now
    differing = {name for name, value in seeded.items() if before["flags"][name] != value}
    expect(dialog.locator("#revert-body tr")).to_have_count(len(differing))
    expect(dialog.locator("tr[data-flag=search_ranking] > *").nth(2)).to_have_text(json.dumps(seeded["search_ranking"]))
    # When
    dialog.get_by_role("textbox", name="Reason", exact=True).fill("console e2e: back to the seeded state")
    dialog.get_by_role("button", name="Revert to version 0", exact=True).click()
    # Then
    expect(page.get_by_role("status")).to_contain_text(f"Reverted to version 0: now at version {before['version'] + 1}")
    record = fresh_runner.get("/flags/history?limit=1").body["records"][0]
    assert (record["kind"], record.get("reverted_to")) == ("revert", 0)
    assert {name: record["state"][name] for name in seeded} == seeded


def test_the_history_filter_shows_only_the_versions_that_changed_that_flag(fresh_runner, console):
    # Given a version that changes search_ranking (whatever an earlier test of this runner left it at), then another
    current = fresh_runner.get("/flags").body["flags"]["search_ranking"]
    other = next(value for value in ("semantic", "hybrid", "classic") if value != current)
    ranking = write(fresh_runner, {"search_ranking": other}, "console e2e: ranking")["version"]
    write(fresh_runner, {"api_rate_limit_per_minute": 1111}, "console e2e: rate")
    settled(fresh_runner)
    page = open_console(console, fresh_runner.url, "history")
    # When
    page.get_by_label("Show the versions that changed").select_option("search_ranking")
    # Then: every version shown changed search_ranking (the seeded state stays as the way back)
    items = page.locator("#history-list > li:not([data-version='0'])")
    expect(items.first).to_have_attribute("data-version", str(ranking))
    for item in items.all():
        expect(item.locator("tr[data-flag=search_ranking]")).to_have_count(1)
    # When: back to every flag
    page.get_by_label("Show the versions that changed").select_option("")
    expect(page.locator("#history-list > li").first).to_have_attribute("data-version", str(ranking + 1))


# ---------------------------------------------------------------- the kill switch on a phone


def test_at_375_px_the_kill_switch_is_on_screen_and_one_tap_plus_a_reason_switches_maintenance(fresh_runner, phone):
    # Given
    before = settled(fresh_runner)
    assert before["flags"]["maintenance_mode"] is False
    page = open_console(phone, fresh_runner.url)
    button = page.get_by_role("button", name="Switch maintenance ON", exact=True)
    # Then: without scrolling
    box = button.bounding_box()
    assert box is not None and box["y"] + box["height"] <= PHONE_HEIGHT, box
    reason = page.get_by_role("textbox", name="Reason for the switch")
    reason_box = reason.bounding_box()
    assert reason_box is not None and reason_box["y"] + reason_box["height"] <= PHONE_HEIGHT, reason_box
    no_sideways_scroll(page)
    # When: a reason, one tap
    reason.fill("console e2e: incident")
    button.tap()
    # Then
    switched = f"Maintenance switched ON: now at version {before['version'] + 1}"
    expect(page.get_by_role("status")).to_contain_text(switched)
    record = fresh_runner.get("/flags/history?limit=1").body["records"][0]
    assert record["changes"] == {"maintenance_mode": {"old": False, "new": True}}
    assert record["reason"] == "console e2e: incident"
    (patch,) = phone.api_requests("PATCH", "/flags")
    assert patch.headers["if-match"] == f'"{before["version"]}"'
    expect(page.get_by_role("button", name="Switch maintenance off", exact=True)).to_be_visible()
    assert axe_serious(page) == []
    # Cleanup for the tests after this one
    write(fresh_runner, {"maintenance_mode": False}, "console e2e: incident over")
