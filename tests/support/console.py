"""Driving the console (local/console) in Debian's Chromium with Playwright: shared by the browser tests and
``make screenshots`` (tests/support/screenshots.py).

Playwright's own browser download cannot be reached here, so the browser is ``/usr/bin/chromium`` (Debian's
package, installed by .ci/run), headless, with ``--no-sandbox`` (the tests run as root). Every context gets a
route that lets loopback requests through and aborts every other one, recording its URL: the console must work
with no network beyond the API it was served from.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Request, Route

CHROMIUM = Path("/usr/bin/chromium")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
BROWSER_TIMEZONE = "America/New_York"  # neither UTC nor a window's zone: the page must say which time is which
VIEWS = ("flags", "requests", "history", "schedules", "guards", "maintenance", "lifecycle")


def require_chromium() -> None:
    """Skip without Debian's Chromium on a developer's machine; in CI (CI=true, set by .ci/run) fail instead."""
    if CHROMIUM.exists():
        return
    message = f"{CHROMIUM} is missing: `apt-get install -y chromium` (.ci/run installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def launch(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True)


def is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    host = (parts.hostname or "").lower()
    return host in LOOPBACK_HOSTS or host.startswith("127.")


@dataclass
class Session:
    """One browser context: its page, every request it made, the non-loopback ones it tried, its script errors."""

    context: BrowserContext
    page: Page
    offsite: list[str] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def api_requests(self, method: str, path: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and urlsplit(r.url).path == path]


@contextmanager
def session(browser: Browser, width: int = 1280, height: int = 900, **options: Any) -> Iterator[Session]:
    context = browser.new_context(
        viewport={"width": width, "height": height}, timezone_id=BROWSER_TIMEZONE, locale="en-GB", **options
    )
    page = context.new_page()
    opened = Session(context, page)

    def guard(route: Route) -> None:
        if is_loopback(route.request.url):
            route.continue_()
        else:
            opened.offsite.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page.on("request", lambda request: opened.requests.append(request))
    page.on("pageerror", lambda error: opened.errors.append(str(error)))
    try:
        yield opened
    finally:
        context.close()


def open_console(opened: Session, url: str, view: str = "flags") -> Page:
    """Load the console at ``url`` and wait until its first reads are done; then show ``view``."""
    page = opened.page
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]")
    if view != "flags":
        show_view(page, view)
    return page


def show_view(page: Page, view: str) -> None:
    page.get_by_role("navigation", name="Views").get_by_role("button", name=view.capitalize()).click()
    page.locator(f"#view-{view}").wait_for(state="visible")
    if view == "history":
        page.locator("#history-list > li").first.wait_for()
    if view == "maintenance":
        page.locator("#windows-body tr").first.wait_for()
    if view in ("schedules", "guards", "requests", "lifecycle"):
        page.locator(f"#view-{view}[data-loaded=true]").wait_for()


def edit_value(page: Page, flag: str, value: str) -> None:
    page.get_by_label(f"New value of {flag}", exact=True).fill(value)


def apply_with_reason(page: Page, reason: str) -> None:
    page.get_by_role("textbox", name="Reason", exact=True).fill(reason)
    page.get_by_role("button", name="Apply changes", exact=True).click()


# A phone's viewport, as the console's narrow-screen checks use it
PHONE_WIDTH, PHONE_HEIGHT = 375, 800


def assert_stayed_local(opened: Session) -> None:
    """The page reached nothing beyond loopback and raised no script error."""
    assert opened.offsite == [], f"the console tried to reach beyond loopback: {opened.offsite}"
    assert opened.errors == [], f"script errors in the page: {opened.errors}"


@contextmanager
def local_session(browser: Browser, *, phone: bool = False) -> Iterator[Session]:
    """A session (a phone's viewport, touch, when ``phone``) that must have stayed local when it closes."""
    options: dict[str, Any] = (
        {"width": PHONE_WIDTH, "height": PHONE_HEIGHT, "is_mobile": True, "has_touch": True} if phone else {}
    )
    with session(browser, **options) as opened:
        yield opened
        assert_stayed_local(opened)
