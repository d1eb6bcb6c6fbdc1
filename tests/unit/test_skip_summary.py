"""A run that skipped a tier says so at its end, loudly, with the tier and the reason (tests/conftest.py's
``pytest_terminal_summary``, over ``tests.support.skips``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.skips import skipped_tiers, summary_lines

PROBE_ENV = "SINGLETON_FLAGS_SKIP_PROBE"
CHROMIUM_MISSING = "/usr/bin/chromium is missing: `apt-get install -y chromium` (.ci/run installs it)"


def report(nodeid: str, outcome: str, reason: str = "") -> pytest.TestReport:
    longrepr = (nodeid.split("::")[0], 1, f"Skipped: {reason}") if outcome == "skipped" else None
    return pytest.TestReport(nodeid, (nodeid, 1, "t"), {}, outcome, longrepr, "setup")  # type: ignore[arg-type]


def test_skips_are_counted_by_tier_and_reason() -> None:
    # Given
    reports = [
        report("tests/e2e/test_console_browser.py::test_a", "skipped", CHROMIUM_MISSING),
        report("tests/e2e/test_console_browser.py::test_b", "skipped", CHROMIUM_MISSING),
        report("tests/integration/test_store.py::test_c", "skipped", "DynamoDB Local unavailable (no java)"),
    ]
    # When
    lines = summary_lines(skipped_tiers(reports))
    # Then
    assert lines[0].startswith("3 TESTS WERE SKIPPED: this run did NOT cover every tier")
    assert f"  e2e: 2 skipped: {CHROMIUM_MISSING}" in lines
    assert "  integration: 1 skipped: DynamoDB Local unavailable (no java)" in lines


def test_nothing_skipped_says_nothing() -> None:
    assert summary_lines(skipped_tiers([report("tests/unit/test_x.py::test_a", "passed")])) == []


def test_probe() -> None:
    """Skipped only when the test below runs it, to see what the end of such a run says."""
    if os.environ.get(PROBE_ENV):
        pytest.skip(CHROMIUM_MISSING)


def test_a_run_with_a_skipped_tier_ends_with_the_tier_and_why() -> None:
    # When: a run in which a test skips for a missing tool
    done = subprocess.run(
        [sys.executable, "-m", "pytest", f"{__file__}::test_probe", "-q", "-p", "no:cacheprovider"],
        env={**os.environ, PROBE_ENV: "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Then: it still passes, and its last lines say what was left out
    assert done.returncode == 0, done.stdout + done.stderr
    tail = done.stdout[done.stdout.index("SKIPPED TIERS") :]
    assert "1 TESTS WERE SKIPPED: this run did NOT cover every tier" in tail
    assert f"unit: 1 skipped: {CHROMIUM_MISSING}" in tail
