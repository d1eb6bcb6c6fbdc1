"""e2e tier: the local runner driven over HTTP. Every test here is marked ``e2e``; helpers: ``tests.support.runner``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.runner import Runner, running

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from tests.support.console import Session

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    """One runner over the embedded DynamoDB for the functional e2e tests (the fuzz has its own)."""
    with running(tmp_path_factory.mktemp("runner") / "runner.log") as started:
        yield started


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium for one module's console tests (skipped, or failed under CI, without Chromium)."""
    from playwright.sync_api import sync_playwright

    from tests.support.console import launch, require_chromium

    require_chromium()
    with sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()


@pytest.fixture
def console(browser: Browser) -> Iterator[Session]:
    """A desktop-sized page that must stay local."""
    from tests.support.console import local_session

    with local_session(browser) as opened:
        yield opened


@pytest.fixture
def phone(browser: Browser) -> Iterator[Session]:
    """A phone-sized page (375 px, touch) that must stay local."""
    from tests.support.console import local_session

    with local_session(browser, phone=True) as opened:
        yield opened
