"""What a run left out: the skipped tests grouped by tier and reason, for the loud summary at the end of ``make
test`` (``tests/conftest.py``'s ``pytest_terminal_summary``). A tier is the folder under ``tests/`` (unit,
integration, infra, e2e); the reason is the skip's own message (a missing tool says which and how to install it).
CI fails where a tool is missing instead of skipping (``CI=true``), so there the summary stays empty.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["skipped_tiers", "summary_lines"]


def _tier(nodeid: str) -> str:
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]


def _reason(report: Any) -> str:
    longrepr = getattr(report, "longrepr", None)
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
    return text.removeprefix("Skipped: ").strip() or "no reason given"


def skipped_tiers(reports: Iterable[Any]) -> Counter[tuple[str, str]]:
    """How many tests were skipped, by (tier, reason). ``xfail`` outcomes are not skips."""
    counted: Counter[tuple[str, str]] = Counter()
    for report in reports:
        if getattr(report, "skipped", False) and not hasattr(report, "wasxfail"):
            counted[(_tier(report.nodeid), _reason(report))] += 1
    return counted


def summary_lines(counted: Counter[tuple[str, str]]) -> list[str]:
    """The lines the end of a run shows: one per tier and reason; none when nothing was skipped."""
    if not counted:
        return []
    total = sum(counted.values())
    lines = [f"{total} TESTS WERE SKIPPED: this run did NOT cover every tier (CI=true makes these failures)"]
    for (tier, reason), count in sorted(counted.items()):
        lines.append(f"  {tier}: {count} skipped: {reason}")
    lines.append("Install what each reason names (README.md, Prerequisites) and run `make test` again.")
    return lines
