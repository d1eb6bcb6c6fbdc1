"""e2e tier: the local runner driven over HTTP. Every test here is marked ``e2e``; helpers: ``tests.support.runner``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.runner import Runner, running

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
