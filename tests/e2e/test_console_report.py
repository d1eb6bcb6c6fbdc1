"""The console's Lifecycle view in Debian's Chromium against the local runner: per flag its declared state, owner,
last change and reads by name in the window, and the stale candidates as ``flagctl report`` marks them (computed by
the server; the page renders them). A flag read by name is no candidate, a never-read temporary flag is one (a
change is not a read), a permanent flag never is; the window, the source of the reads and "counts are lower bounds"
are said. The same view through ``flagctl console`` reads the runner's reads with the console's token.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.support.console import open_console
from tests.support.runner import Runner, flagctl_console as console_process, runner_env, running


@pytest.fixture(scope="module")
def report_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    """A runner of its own: its reads are counted since it started, and no other test may read its flags."""
    with running(tmp_path_factory.mktemp("report") / "runner.log") as started:
        # Given search_ranking read by name, and ai_search_enabled changed but never read
        assert started.get("/flags/search_ranking").status == 200
        changed = started.send("PATCH", "/flags", {"flags": {"ai_search_enabled": True}, "reason": "try the AI search"})
        assert changed.status == 200, changed.body
        yield started


def row(page: Page, flag: str) -> Locator:
    return page.locator(f"#lifecycle-body tr[data-flag={flag}]")


def cell(page: Page, flag: str, column: str) -> Locator:
    return row(page, flag).locator(f'td[data-label="{column}"]')


def test_the_lifecycle_view_marks_the_never_read_temporary_flag_and_neither_the_read_one_nor_a_permanent_one(
    report_runner, console
):
    # When the operator opens the Lifecycle view
    page = open_console(console, report_runner.url, "lifecycle")
    # Then the report of the default 30 days was asked of the server
    (asked,) = console.api_requests("GET", "/_console/report")
    assert parse_qs(urlsplit(asked.url).query) == {"days": ["30"]}
    # And the flag read by name is not a candidate
    expect(cell(page, "search_ranking", "Reads by name")).to_have_text("1")
    expect(cell(page, "search_ranking", "Stale candidate")).to_have_text("no: read in the window")
    # And the temporary flag never read is one, though just changed, with why
    expect(row(page, "ai_search_enabled")).to_have_attribute("data-stale", "true")
    expect(cell(page, "ai_search_enabled", "Stale candidate")).to_contain_text("STALE CANDIDATE")
    expect(cell(page, "ai_search_enabled", "Stale candidate")).to_contain_text("never read by name in the window")
    expect(cell(page, "ai_search_enabled", "Last change")).to_contain_text("version 1")
    # And a permanent flag, never read, never is one
    expect(cell(page, "signup_enabled", "Reads by name")).to_have_text("0")
    expect(cell(page, "signup_enabled", "Stale candidate")).to_have_text("never: permanent")
    expect(cell(page, "signup_enabled", "Permanent")).to_have_text("yes")
    expect(page.locator("#lifecycle-body tr[data-stale=true]")).to_have_count(1)
    # And the window, the source of the reads and the lower bounds are said
    window = page.locator("#lifecycle-window")
    expect(window).to_contain_text("(last 30 day(s) asked) from the local runner's read function (GET /_reads)")
    expect(window).to_contain_text("counts are lower bounds")


def test_the_days_selector_asks_the_server_again_and_a_window_out_of_range_is_refused_by_it(report_runner, console):
    page = open_console(console, report_runner.url, "lifecycle")
    # When the operator asks for 7 days
    page.get_by_label("Reads in the last (days)").fill("7")
    page.get_by_role("button", name="Show", exact=True).click()
    # Then the server's report of 7 days is shown
    expect(page.locator("#lifecycle-window")).to_contain_text("(last 7 day(s) asked)")
    # When 0 days are asked, the server refuses it with its own message, shown
    page.get_by_label("Reads in the last (days)").fill("0")
    page.get_by_role("button", name="Show", exact=True).click()
    failure = page.get_by_role("alert").filter(has_text="Could not make the lifecycle report")
    expect(failure).to_contain_text("days must be an integer from 1 to 365, got '0' (400 INVALID_REQUEST)")
    days = [parse_qs(urlsplit(r.url).query)["days"] for r in console.api_requests("GET", "/_console/report")]
    assert days == [["30"], ["7"], ["0"]]


def test_through_flagctl_console_the_view_reads_the_runners_reads_with_the_token(report_runner, console):
    with console_process(["--url", report_runner.url, "console", "--port", "0"], runner_env(0)) as (_, line):
        match = re.fullmatch(r"console: (?P<url>http://127\.0\.0\.1:\d+/#token=\S+)\n", line)
        assert match, line
        page = open_console(console, match["url"], "lifecycle")
        expect(cell(page, "ai_search_enabled", "Stale candidate")).to_contain_text("STALE CANDIDATE")
        expect(cell(page, "search_ranking", "Reads by name")).to_have_text("1")
        (asked,) = console.api_requests("GET", "/_console/report")
        assert asked.headers.get("x-console-token") == match["url"].split("#token=")[1]
