"""The console shows a flag's lifecycle: a deprecated or removed flag carries a badge beside its name, with its date
and its note as the badge's title; an active flag carries none."""

from __future__ import annotations

import re

from playwright.sync_api import Route, expect

from tests.support.console import open_console


def test_a_deprecated_flag_shows_a_badge_with_its_date_and_note_and_an_active_one_none(runner, console):
    # Given declarations as the API serves them, with ai_search_enabled deprecated
    def deprecating(route: Route) -> None:
        answer = route.fetch()
        declarations = answer.json()["declarations"]
        for declaration in declarations:
            if declaration["name"] == "ai_search_enabled":
                declaration.update(state="deprecated", deprecated_on="2026-11-30", note="always on now")
        route.fulfill(response=answer, json={"declarations": declarations})

    console.page.route(re.compile(r".*/flags/declarations$"), deprecating)
    # When the console opens
    page = open_console(console, runner.url)
    # Then the deprecated flag's row names its state and date, the note as the badge's title
    badge = page.locator("#row-ai_search_enabled .badge-lifecycle")
    expect(badge).to_have_text("deprecated since 2026-11-30")
    expect(badge).to_have_attribute("title", "always on now")
    # And an active flag has no lifecycle badge
    expect(page.locator("#row-signup_enabled .badge-lifecycle")).to_have_count(0)
