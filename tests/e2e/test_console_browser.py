"""The operator console in a real browser: Debian's Chromium, driven by Playwright, against the local runner.

Every test loads the pages the runner serves at ``/`` and acts as an operator would (roles and labels, not CSS
selectors, wherever the page has them); the API answers are checked through the API itself. Each test's browser
context aborts every non-loopback request and the fixture fails the test if one was attempted or a script
error was thrown. Without /usr/bin/chromium the tests skip on a developer's machine and fail in CI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Error as PlaywrightError, Page, Route, expect

from singleton_flags_service.api.routes import ROUTES
from tests.support.console import (
    PHONE_WIDTH,
    VIEWS,
    apply_with_reason,
    edit_value,
    open_console,
    session,
    show_view,
)
from tests.support.runner import (
    Runner,
    eventually,
    flagctl_console as console_process,
    run_module,
    runner_env,
    running,
)

WINDOW = "weekly-patching"  # cdk.json's window


@pytest.fixture(scope="module")
def console_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    """A runner of its own: these tests switch maintenance on, which the other e2e tests do not expect."""
    with running(tmp_path_factory.mktemp("console") / "runner.log") as started:
        yield started


def declarations(runner: Runner) -> list[dict[str, Any]]:
    answer = runner.get("/flags/declarations")
    assert answer.status == 200, answer.body
    return list(answer.body["declarations"])


def newest_record(runner: Runner) -> dict[str, Any]:
    answer = runner.get("/flags/history?limit=1")
    assert answer.status == 200, answer.body
    return dict(answer.body["records"][0]) if answer.body["records"] else {"version": 0}


def settled_flags(runner: Runner) -> dict[str, Any]:
    """GET /flags once the read function serves the newest version (its cache is 1 s old at most here)."""
    version = newest_record(runner)["version"]
    answer = eventually(lambda: runner.get("/flags"), lambda a: a.body["version"] == version)
    assert answer.body["version"] == version
    return dict(answer.body)


def write(runner: Runner, flags: dict[str, Any], reason: str) -> int:
    answer = runner.send("PATCH", "/flags", {"flags": flags, "reason": reason})
    assert answer.status == 200, answer.body
    return int(answer.body["version"])


def with_history(runner: Runner) -> None:
    """At least one version in the trail: a runner whose tests have not written yet has none to list."""
    if newest_record(runner)["version"] == 0:
        write(runner, {"api_rate_limit_per_minute": 1234}, "console e2e: a version to list")


def announced(page: Page) -> Any:
    return expect(page.get_by_role("status"))


def test_the_guard_aborts_and_records_a_request_beyond_loopback(browser):
    # The check every other test ends with only means something if the guard sees such a request. (From the
    # console's own page the runner's Content-Security-Policy stops it before the network: a navigation is used.)
    with session(browser) as opened:
        with pytest.raises(PlaywrightError, match="net::ERR_FAILED"):
            opened.page.goto("http://example.com/x")
        assert opened.offsite == ["http://example.com/x"]


# ---------------------------------------------------------------- flags


def test_every_bool_flag_has_a_switch_named_after_it_and_every_editor_names_its_flag(console_runner, console):
    # Given
    settled_flags(console_runner)
    declared = declarations(console_runner)
    # When
    page = open_console(console, console_runner.url)
    # Then: what the page shows is what its GET /flags answered
    (read,) = console.api_requests("GET", "/flags")
    flags = read.response().json()
    for declaration in declared:
        name = declaration["name"]
        row = page.locator(f"#flags-body tr[data-flag='{name}']")
        expect(row.get_by_role("cell").nth(1)).to_have_text(json.dumps(flags["flags"][name]))
        if declaration["type"] == "bool":
            switch = page.get_by_role("switch", name=name, exact=True)
            expect(switch).to_have_count(1)
            expect(switch).to_be_checked(checked=flags["flags"][name])
        else:
            role = (
                "combobox"
                if "enum" in declaration
                else ("spinbutton" if declaration["type"] != "string" else "textbox")
            )
            expect(page.get_by_role(role, name=re.compile(re.escape(name)))).to_have_count(1)
    expect(page.locator("#state-version")).to_have_text(str(flags["version"]))
    expect(page.locator("#state-reason")).to_have_text(flags["reason"])
    expect(page.locator("#state-fetched")).to_have_attribute("datetime", flags["fetched_at"])
    expect(page.get_by_role("textbox", name="Reason", exact=True)).to_be_visible()


def test_the_search_box_filters_the_flags_by_name(console_runner, console):
    page = open_console(console, console_runner.url)
    page.get_by_label("Search flags by name").fill("RATE")
    visible = page.locator("#flags-body tr:visible")
    expect(visible).to_have_count(2)
    expect(visible.locator("th")).to_have_text(["api_rate_limit_per_minute", "trace_sample_rate"])
    page.get_by_label("Search flags by name").fill("no such flag")
    expect(page.locator("#flags-body tr:visible")).to_have_count(0)
    expect(page.get_by_text("No flag name contains that text.")).to_be_visible()


def test_flipping_a_switch_writes_a_new_version_with_if_match_and_the_reason(console_runner, console):
    # Given
    before = settled_flags(console_runner)
    was = before["flags"]["ai_search_enabled"]
    page = open_console(console, console_runner.url)
    # When
    page.get_by_role("switch", name="ai_search_enabled", exact=True).click()
    apply_with_reason(page, "console e2e: flip")
    # Then
    announced(page).to_contain_text(f"now at version {before['version'] + 1}")
    record = newest_record(console_runner)
    assert record["version"] == before["version"] + 1
    assert record["changes"] == {"ai_search_enabled": {"old": was, "new": not was}}
    assert record["reason"] == "console e2e: flip"
    (patch,) = console.api_requests("PATCH", "/flags")
    assert patch.headers["if-match"] == f'"{before["version"]}"'
    expect(page.locator("#state-version")).to_have_text(str(before["version"] + 1))
    expect(page.get_by_role("switch", name="ai_search_enabled", exact=True)).to_be_checked(checked=not was)


def test_a_write_without_a_reason_is_not_sent(console_runner, console):
    page = open_console(console, console_runner.url)
    page.get_by_role("switch", name="signup_enabled", exact=True).click()
    page.get_by_role("button", name="Apply changes", exact=True).click()
    expect(page.locator("#reason-error")).to_have_text("A reason is required: it goes into the audit trail.")
    expect(page.get_by_role("textbox", name="Reason", exact=True)).to_have_attribute("aria-invalid", "true")
    assert console.api_requests("PATCH", "/flags") == []


def test_an_int_out_of_range_is_refused_in_the_page_and_without_the_page_check_by_the_server(console_runner, console):
    # Given
    rate = next(d for d in declarations(console_runner) if d["name"] == "api_rate_limit_per_minute")
    too_high = str(rate["max"] + 1)
    version = newest_record(console_runner)["version"]
    page = open_console(console, console_runner.url)
    error = page.locator("#error-api_rate_limit_per_minute")
    # When: the page's own check
    edit_value(page, "api_rate_limit_per_minute", too_high)
    apply_with_reason(page, "console e2e: too high")
    # Then
    expect(error).to_have_text(f"api_rate_limit_per_minute: must be at most {rate['max']}, got {too_high}")
    expect(page.get_by_label("New value of api_rate_limit_per_minute")).to_have_attribute("aria-invalid", "true")
    announced(page).to_contain_text("Not sent")
    assert console.api_requests("PATCH", "/flags") == []
    # When: the page check bypassed (the control's max removed), the server decides
    page.get_by_label("New value of api_rate_limit_per_minute").evaluate("control => control.removeAttribute('max')")
    edit_value(page, "api_rate_limit_per_minute", too_high)
    expect(error).to_have_text("")
    page.get_by_role("button", name="Apply changes", exact=True).click()
    # Then: the server's message, next to the control and in the alert
    server_message = f"flag 'api_rate_limit_per_minute': must be <= {rate['max']}, got {too_high}"
    expect(error).to_have_text(f"{server_message} (refused by the server)")
    expect(page.get_by_role("alert").filter(has_text="refused")).to_contain_text(server_message)
    assert len(console.api_requests("PATCH", "/flags")) == 1
    assert newest_record(console_runner)["version"] == version


BANNER = {
    "name": "banner_text",
    "type": "string",
    "initial": "",
    "fallback": "",
    "description": "A banner.",
    "max_length": 5,
}


@pytest.mark.parametrize(
    ("flag", "typed", "message"),
    [
        ("api_rate_limit_per_minute", "1.5", "api_rate_limit_per_minute: must be a whole number, got 1.5"),
        ("api_rate_limit_per_minute", "0", "api_rate_limit_per_minute: must be at least 1, got 0"),
        ("trace_sample_rate", "1.5", "trace_sample_rate: must be at most 1, got 1.5"),
        ("trace_sample_rate", "", "trace_sample_rate: enter a number"),
        ("search_ranking", "bogus", "search_ranking: must be one of classic, semantic, hybrid"),
        ("banner_text", "sixsix", "banner_text: at most 5 characters, got 6"),
        ("banner_text", "😀" * 5, None),  # five code points, as the server counts: accepted
    ],
)
def test_the_page_refuses_what_a_declaration_forbids_next_to_the_control_and_sends_nothing(
    console_runner, console, flag, typed, message
):
    # Given: the declarations as the API gives them, plus a free-text flag (none is declared) to check lengths
    def with_banner(route: Route) -> None:
        answer = route.fetch()
        route.fulfill(response=answer, json={"declarations": [*answer.json()["declarations"], BANNER]})

    console.page.route(re.compile(r".*/flags/declarations$"), with_banner)
    page = open_console(console, console_runner.url)
    control = page.get_by_label(f"New value of {flag}", exact=True)
    # When: the value is set as a script would (a select gets an option the declaration does not have)
    control.evaluate(
        """(control, typed) => {
            if (control.tagName === "SELECT") control.append(new Option(typed, typed));
            control.value = typed;
            control.dispatchEvent(new Event("input", {bubbles: true}));
            control.dispatchEvent(new Event("change", {bubbles: true}));
        }""",
        typed,
    )
    # Then
    error = page.locator(f"#error-{flag}")
    if message is None:
        expect(error).to_have_text("")
        expect(page.locator("#pending-list")).to_contain_text(
            f"{flag}: (none) → {json.dumps(typed, ensure_ascii=False)}"
        )
        return
    expect(error).to_have_text(message)
    expect(control).to_have_attribute("aria-invalid", "true")
    apply_with_reason(page, "console e2e: refused in the page")
    announced(page).to_contain_text(f"Not sent: {message}")
    assert console.api_requests("PATCH", "/flags") == []


def test_a_concurrent_edit_from_flagctl_shows_the_412_view_then_re_apply_writes_on_the_new_version(
    console_runner, console
):
    # Given: the operator saw version N and edits trace_sample_rate
    seen = settled_flags(console_runner)
    page = open_console(console, console_runner.url)
    mine, theirs = (0.25, 0.5) if seen["flags"]["trace_sample_rate"] != 0.25 else (0.75, 0.5)
    edit_value(page, "trace_sample_rate", str(mine))
    # When: someone else writes the same flag and another one with flagctl, then the operator applies
    done = run_module(
        "flagctl",
        "--url",
        console_runner.url,
        "set",
        f"trace_sample_rate={theirs}",
        "search_ranking=semantic" if seen["flags"]["search_ranking"] != "semantic" else "search_ranking=hybrid",
        "--reason",
        "console e2e: concurrent flagctl",
    )
    assert done.returncode == 0, done.stderr
    current = newest_record(console_runner)
    apply_with_reason(page, "console e2e: mine")
    # Then: per flag, what the operator saw, what is there now, and the edit
    conflict = page.get_by_role("region", name="The flags changed while you were editing")
    expect(conflict).to_be_visible()
    expect(conflict.locator("tr[data-flag=trace_sample_rate] > *")).to_have_text(
        ["trace_sample_rate", json.dumps(seen["flags"]["trace_sample_rate"]), f"{theirs} (changed)", str(mine)]
    )
    ranking = current["state"]["search_ranking"]
    expect(conflict.locator("tr[data-flag=search_ranking] > *")).to_have_text(
        ["search_ranking", json.dumps(seen["flags"]["search_ranking"]), f'"{ranking}" (changed)', "(not edited)"]
    )
    expect(conflict.locator("tbody tr")).to_have_count(2)
    assert newest_record(console_runner)["version"] == current["version"]  # nothing of the operator's written
    # When
    conflict.get_by_role("button", name=f"Re-apply on version {current['version']}", exact=True).click()
    # Then
    announced(page).to_contain_text(f"now at version {current['version'] + 1}")
    record = newest_record(console_runner)
    assert record["changes"] == {"trace_sample_rate": {"old": theirs, "new": mine}}
    assert record["state"]["search_ranking"] == ranking  # their other change stands
    expect(conflict).to_be_hidden()
    if_matches = [r.headers["if-match"] for r in console.api_requests("PATCH", "/flags")]
    assert if_matches == [f'"{seen["version"]}"', f'"{current["version"]}"']


def test_discarding_after_a_412_shows_their_values_and_writes_nothing(console_runner, console):
    seen = settled_flags(console_runner)
    page = open_console(console, console_runner.url)
    page.get_by_role("switch", name="signup_enabled", exact=True).click()
    theirs = write(console_runner, {"api_rate_limit_per_minute": 1234 + seen["version"]}, "console e2e: theirs")
    apply_with_reason(page, "console e2e: mine")
    page.get_by_role("button", name="Discard my edit", exact=True).click()
    announced(page).to_contain_text(f"showing version {theirs}")
    expect(page.get_by_role("switch", name="signup_enabled", exact=True)).to_be_checked(
        checked=seen["flags"]["signup_enabled"]
    )
    expect(page.locator("#flags-body tr[data-flag=api_rate_limit_per_minute] td").nth(1)).to_have_text(
        str(1234 + seen["version"])
    )
    assert newest_record(console_runner)["version"] == theirs


# ---------------------------------------------------------------- history and revert


def test_history_lists_versions_newest_first_with_their_diff_and_pages_with_the_cursor(console_runner, console):
    # Given: more versions than one page holds (20), the newest with a known diff
    while newest_record(console_runner)["version"] < 22:
        write(console_runner, {"api_rate_limit_per_minute": 100 + newest_record(console_runner)["version"]}, "fill")
    before = settled_flags(console_runner)["flags"]["search_ranking"]
    after = "hybrid" if before != "hybrid" else "classic"
    version = write(console_runner, {"search_ranking": after}, "console e2e: history")
    # When
    page = open_console(console, console_runner.url, "history")
    # Then
    items = page.locator("#history-list > li")
    expect(items).to_have_count(20)
    first = items.first
    expect(first.get_by_role("heading")).to_have_text(f"Version {version}")
    expect(first.locator(".kind")).to_have_text("change")
    expect(first.locator(".actor")).to_have_text("local-admin")
    expect(first.locator(".record-reason")).to_have_text("console e2e: history")
    expect(first.locator("tr[data-flag=search_ranking] > *")).to_have_text(
        ["search_ranking", json.dumps(before), json.dumps(after)]
    )
    expect(first.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-\d\d-\d\dT"))
    expect(items.nth(1).get_by_role("heading")).to_have_text(f"Version {version - 1}")
    # When: the next page
    page.get_by_role("button", name="Load older versions").click()
    # Then: every version, and once version 1 is loaded the seeded state (version 0) after it
    assert version < 40
    expect(items).to_have_count(version + 1)
    expect(items.nth(20).get_by_role("heading")).to_have_text(f"Version {version - 20}")
    expect(items.last.get_by_role("heading")).to_have_text("Version 0: the seeded state")
    cursors = [r.url for r in console.api_requests("GET", "/flags/history") if "cursor=" in r.url]
    assert len(cursors) == 1


def test_history_names_every_documented_kind_and_shows_an_unknown_kind_verbatim(console_runner, console):
    # Given: the API's answer as it is, with the kinds the page knows and one it does not
    kinds = ["change", "revert", "seed", "restore", "window-start", "window-end", "some-future-kind"]

    def with_kinds(route: Route) -> None:
        answer = route.fetch()
        body = answer.json()
        records = [dict(body["records"][0], version=100 + i, kind=kind) for i, kind in enumerate(kinds)]
        route.fulfill(response=answer, json={"records": records[::-1], "next_cursor": None})

    write(console_runner, {"api_rate_limit_per_minute": 4242}, "console e2e: kinds")
    console.page.route(re.compile(r".*/flags/history(\?.*)?$"), with_kinds)
    # When
    page = open_console(console, console_runner.url, "history")
    # Then
    items = page.locator("#history-list > li")
    expect(items.locator(".kind")).to_have_text(kinds[::-1])
    expect(items.first.locator("dd").first).to_have_text("some-future-kind some-future-kind")
    expect(items.nth(1).locator("dd").first).to_contain_text("maintenance window end")
    expect(items.nth(4).locator("dd").first).to_contain_text("seed")


def test_revert_previews_the_resulting_diff_requires_a_reason_and_posts_the_revert(console_runner, console):
    # Given: version A, then B changing two flags
    a = write(console_runner, {"search_ranking": "semantic", "signup_enabled": True}, "console e2e: A")
    b = write(console_runner, {"search_ranking": "hybrid", "signup_enabled": False}, "console e2e: B")
    settled_flags(console_runner)
    page = open_console(console, console_runner.url, "history")
    # When
    page.get_by_role("button", name=f"Revert to version {a}", exact=True).click()
    dialog = page.get_by_role("dialog", name=f"Revert to version {a}")
    # Then: the diff from the current state to A's
    expect(dialog).to_be_visible()
    expect(dialog.locator("#revert-body tr")).to_have_count(2)
    expect(dialog.locator("tr[data-flag=search_ranking] > *")).to_have_text(
        ["search_ranking", '"hybrid"', '"semantic"']
    )
    expect(dialog.locator("tr[data-flag=signup_enabled] > *")).to_have_text(["signup_enabled", "false", "true"])
    # When: confirmed without a reason
    dialog.get_by_role("button", name=f"Revert to version {a}", exact=True).click()
    # Then
    expect(dialog.get_by_role("alert")).to_have_text("A reason is required: it goes into the audit trail.")
    assert console.api_requests("POST", "/flags/revert") == []
    # When
    dialog.get_by_role("textbox", name="Reason", exact=True).fill("console e2e: back to A")
    dialog.get_by_role("button", name=f"Revert to version {a}", exact=True).click()
    # Then
    expect(dialog).to_be_hidden()
    announced(page).to_contain_text(f"Reverted to version {a}: now at version {b + 1}")
    record = newest_record(console_runner)
    assert (record["version"], record["kind"], record.get("reverted_to")) == (b + 1, "revert", a)
    assert record["reason"] == "console e2e: back to A"
    (revert,) = console.api_requests("POST", "/flags/revert")
    assert json.loads(revert.post_data or "{}") == {"version": a, "reason": "console e2e: back to A"}
    assert revert.headers["if-match"] == f'"{b}"'
    expect(page.locator("#history-list > li").first.get_by_role("heading")).to_have_text(f"Version {b + 1}")


# ---------------------------------------------------------------- maintenance


def test_a_window_started_by_the_scheduler_shows_as_held_by_that_window_with_its_times(console_runner, console):
    # Given
    started = console_runner.send("POST", f"/_scheduler/{WINDOW}/start")
    assert started.status == 200, started.body
    try:
        answer = eventually(lambda: console_runner.get("/flags"), lambda a: a.body["maintenance"]["on"])
        maintenance = answer.body["maintenance"]
        assert maintenance["held_by"] == "window" and maintenance["window"] == WINDOW
        windows = {w["name"]: w for w in console_runner.get("/flags/windows").body["windows"]}
        # When
        page = open_console(console, console_runner.url, "maintenance")
        # Then
        expect(page.locator("#banner")).to_contain_text(f"Maintenance mode is ON: held by window {WINDOW}")
        expect(page.locator("#mnt-on")).to_have_text("ON")
        expect(page.locator("#mnt-holder")).to_have_text(f"window {WINDOW}")
        expect(page.locator("#mnt-deadline time").first).to_have_attribute("datetime", maintenance["deadline"])
        row = page.locator(f"#windows-body tr[data-window='{WINDOW}']")
        expect(row.locator("th")).to_contain_text("holds maintenance now")
        window = windows[WINDOW]
        times = row.locator("time")
        expect(times).to_have_count(4)
        for index, key in enumerate(("next_start", "next_start_utc", "next_end", "next_end_utc")):
            expect(times.nth(index)).to_have_attribute("datetime", window[key])
        expect(row).to_contain_text(f"({window['timezone']})")
        expect(row).to_contain_text("(your time, America/New_York)")
    finally:
        console_runner.send("POST", f"/_scheduler/{WINDOW}/end")


@pytest.mark.parametrize("reason", ["STALE", "DEFAULT"])
def test_a_stale_or_default_read_is_made_loud(console_runner, console, reason):
    def degraded(route: Route) -> None:
        answer = route.fetch()
        route.fulfill(response=answer, json={**answer.json(), "reason": reason})

    console.page.route(re.compile(r".*/flags$"), degraded)
    page = open_console(console, console_runner.url)
    expect(page.locator("#banner")).to_be_visible()
    expect(page.locator("#banner")).to_contain_text(f"{reason}:")
    expect(page.locator("#state-reason")).to_have_class(f"reason reason-{reason.lower()}")


# ---------------------------------------------------------------- token, docs, accessibility, phone


def test_a_token_in_the_fragment_goes_as_a_header_on_every_api_call_and_nowhere_else(console_runner, console):
    with_history(console_runner)
    page = open_console(console, console_runner.url + "/#token=s3cret-t0ken")
    show_view(page, "history")
    show_view(page, "maintenance")
    calls = [r for r in console.requests if "/flags" in r.url]
    assert {r.url.split("?")[0].removeprefix(console_runner.url) for r in calls} >= {
        "/flags",
        "/flags/declarations",
        "/flags/history",
        "/flags/windows",
    }
    assert all(r.headers.get("x-console-token") == "s3cret-t0ken" for r in calls)
    assert not any("s3cret" in r.url.split("#")[0] for r in console.requests)


@pytest.fixture
def flagctl_console(console_runner: Runner) -> Iterator[str]:
    """``flagctl console`` in front of the runner (it signs with the runner's fake keys; the runner ignores
    signatures): the URL it prints, token included."""
    with console_process(["--url", console_runner.url, "console", "--port", "0"], runner_env(0)) as (_, line):
        match = re.fullmatch(r"console: (?P<url>http://127\.0\.0\.1:\d+/#token=\S+)\n", line)
        assert match, line
        yield match["url"]


def test_through_flagctl_console_the_page_reads_and_writes_with_its_token(console_runner, console, flagctl_console):
    # Given
    before = settled_flags(console_runner)
    page = open_console(console, flagctl_console)
    expect(page.locator("#state-version")).to_have_text(str(before["version"]))
    # When
    page.get_by_role("switch", name="signup_enabled", exact=True).click()
    apply_with_reason(page, "console e2e: through flagctl console")
    # Then
    announced(page).to_contain_text(f"now at version {before['version'] + 1}")
    record = newest_record(console_runner)
    assert (record["version"], record["reason"]) == (before["version"] + 1, "console e2e: through flagctl console")
    expect(page.get_by_role("contentinfo")).to_be_hidden()  # no Swagger UI behind the proxy


def test_through_flagctl_console_without_the_token_the_page_says_how_to_open_it(console, flagctl_console):
    page = open_console(console, flagctl_console.split("#")[0])
    failure = page.get_by_role("alert").filter(has_text="Could not read the flags")
    expect(failure).to_contain_text("401 CONSOLE_TOKEN_REQUIRED")
    expect(failure).to_contain_text("Open the console with the address flagctl console printed")
    expect(page.locator("#flags-body tr")).to_have_count(0)


def test_docs_renders_swagger_ui_with_every_operation(console_runner, console):
    page = console.page
    page.goto(console_runner.url + "/docs")
    page.locator(".opblock").first.wait_for()
    shown = {
        (
            block.get_attribute("class").split("opblock-")[1].split()[0].upper(),
            block.locator(".opblock-summary-path").get_attribute("data-path"),
        )
        for block in page.locator(".opblock").all()
    }
    assert {(route.method, route.path) for route in ROUTES} <= shown


@pytest.mark.parametrize("view", [*VIEWS, "conflict", "revert"])
def test_axe_finds_no_serious_or_critical_violation(console_runner, console, view):
    if view in ("history", "revert"):
        with_history(console_runner)
    page = open_console(console, console_runner.url, {"revert": "history", "conflict": "flags"}.get(view, view))
    if view == "conflict":
        page.get_by_role("switch", name="ai_search_enabled", exact=True).click()
        write(console_runner, {"api_rate_limit_per_minute": 999}, "console e2e: axe")
        apply_with_reason(page, "console e2e: axe")
        page.locator("#conflict").wait_for(state="visible")
    if view == "revert":
        page.get_by_role("button", name=re.compile("^Revert to version")).first.click()
        page.get_by_role("dialog").wait_for()
    results = Axe().run(page)
    serious = [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == [], results.generate_report()
    assert results.response["passes"], "axe ran no rule"


@pytest.mark.parametrize("view", [*VIEWS, "revert"])
def test_at_375_px_the_page_does_not_scroll_sideways(console_runner, phone, view):
    write(console_runner, {"search_ranking": "semantic"}, "console e2e: phone")
    page = open_console(phone, console_runner.url, "history" if view == "revert" else view)
    if view == "revert":
        page.get_by_role("button", name=re.compile("^Revert to version")).first.click()
        page.get_by_role("dialog").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE_WIDTH
    assert page.evaluate("window.innerWidth") == PHONE_WIDTH
