"""``make screenshots``: PNGs of the console's main views in docs/images/, taken in Debian's Chromium from a
fresh local runner (the flags, an edit refused with 412, the history with a revert preview, maintenance held by
a window, the lifecycle report, and the flags on a 375 px phone).

Usage: ``python tests/support/screenshots.py [DIRECTORY]`` with the repository on PYTHONPATH.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

from tests.support.console import CHROMIUM, Session, apply_with_reason, edit_value, launch, open_console, session
from tests.support.runner import REPO_ROOT, Runner, eventually, running

WINDOW = "weekly-patching"


def _write(runner: Runner, flags: dict[str, object], reason: str) -> int:
    answer = runner.send("PATCH", "/flags", {"flags": flags, "reason": reason})
    if answer.status != 200:
        raise SystemExit(f"PATCH /flags answered {answer.status}: {answer.body}")
    return int(answer.body["version"])


def _settle(runner: Runner, version: int) -> None:
    eventually(lambda: runner.get("/flags"), lambda answer: answer.body["version"] >= version)


def _check(opened: Session) -> None:
    if opened.offsite or opened.errors:
        raise SystemExit(f"the console reached beyond loopback {opened.offsite} or threw {opened.errors}")


def _shoot(browser: Browser, runner: Runner, out: Path) -> list[Path]:
    taken: list[Path] = []
    with session(browser, width=1280, height=800) as opened:
        page = open_console(opened, runner.url)
        taken.append(out / "console-flags.png")
        page.screenshot(path=taken[-1], full_page=True)

        edit_value(page, "trace_sample_rate", "0.25")
        _write(runner, {"trace_sample_rate": 0.5, "search_ranking": "hybrid"}, "raise tracing during the incident")
        apply_with_reason(page, "sample a quarter of requests")
        page.locator("#conflict").wait_for(state="visible")
        page.locator("#conflict").scroll_into_view_if_needed()
        taken.append(out / "console-conflict.png")
        page.screenshot(path=taken[-1], full_page=True)
        _check(opened)

    version = _write(runner, {"signup_enabled": False}, "pause sign-ups during the migration")
    _settle(runner, version)
    with session(browser, width=1280, height=800) as opened:
        page = open_console(opened, runner.url, "history")
        page.get_by_role("button", name=f"Revert to version {version - 1}", exact=True).click()
        page.get_by_role("dialog").wait_for()
        page.get_by_role("dialog").get_by_role("textbox", name="Reason").fill("undo the sign-up pause")
        taken.append(out / "console-history-revert.png")
        page.screenshot(path=taken[-1], full_page=True)
        _check(opened)

    runner.get("/flags/search_ranking")  # read by name: no stale candidate
    with session(browser, width=1280, height=800) as opened:
        page = open_console(opened, runner.url, "lifecycle")
        taken.append(out / "console-lifecycle.png")
        page.screenshot(path=taken[-1], full_page=True)
        _check(opened)

    runner.send("POST", f"/_scheduler/{WINDOW}/start")
    eventually(lambda: runner.get("/flags"), lambda answer: answer.body.get("maintenance", {}).get("on") is True)
    with session(browser, width=1280, height=800) as opened:
        page = open_console(opened, runner.url, "maintenance")
        taken.append(out / "console-maintenance.png")
        page.screenshot(path=taken[-1], full_page=True)
        _check(opened)

    with session(browser, width=375, height=800, is_mobile=True, has_touch=True) as opened:
        page = open_console(opened, runner.url)
        taken.append(out / "console-phone.png")
        page.screenshot(path=taken[-1], full_page=True)
        _check(opened)
    return taken


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else REPO_ROOT / "docs" / "images"
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: apt-get install -y chromium", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as scratch,
        running(Path(scratch) / "runner.log") as runner,
        sync_playwright() as playwright,
    ):
        browser = launch(playwright)
        try:
            taken = _shoot(browser, runner, out)
        finally:
            browser.close()
    for path in taken:
        print(path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
