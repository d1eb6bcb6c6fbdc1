"""``flagctl migrate`` (a real process) against a local runner of its own (a migration changes the flags item for
good): the dry run plans, the migration writes FLAGS#V2, ``--status`` shows it, and a second one is refused."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from singleton_flags.declarations import Declarations
from tests.support.migration import GOOD, new_declarations
from tests.support.runner import Runner, run_module, running


@pytest.fixture(scope="module")
def migrating_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    with running(tmp_path_factory.mktemp("migrate") / "runner.log") as started:
        yield started


def flagctl(runner: Runner, *args: str) -> subprocess.CompletedProcess[str]:
    return run_module("flagctl", "--url", runner.url, *args)


def served_version(runner: Runner, wanted: int) -> int:
    """The version the runner's read function serves once its cache (1 s here) has aged past the change."""
    deadline = time.monotonic() + 10
    while True:
        version: int = json.loads(flagctl(runner, "--json", "get").stdout)["version"]
        if version == wanted or time.monotonic() > deadline:
            return version
        time.sleep(0.5)


def test_flagctl_migrates_the_runners_flags_and_shows_the_migration(
    migrating_runner: Runner, declarations: Declarations, tmp_path: Path
) -> None:
    # Given the runner's flags at version L, and the new declarations with their mapping
    new, mapping = tmp_path / "new.json", tmp_path / "map.json"
    new.write_text(json.dumps(new_declarations(declarations).document()), encoding="utf-8")
    mapping.write_text(json.dumps(GOOD), encoding="utf-8")
    inputs = ("migrate", "--declarations", str(new), "--mapping", str(mapping), "--reason", "to V2")
    last = json.loads(flagctl(migrating_runner, "--json", "get").stdout)["version"]
    # When the dry run plans it
    plan = flagctl(migrating_runner, "--json", *inputs, "--dry-run")
    # Then it would apply at L+1, and nothing is written
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["v2_version"] == last + 1
    assert flagctl(migrating_runner, "migrate", "--status").returncode == 2  # 404: none yet

    # When flagctl migrates
    migrated = flagctl(migrating_runner, *inputs)
    # Then FLAGS#V2 is written at L+1, and the flag V1 readers serve as its fallback is named
    assert migrated.returncode == 0, migrated.stderr
    assert f"FLAGS#V2 written at version {last + 1}" in migrated.stdout
    assert "serves the fallback of ai_search_enabled" in migrated.stdout

    # And --status shows it expanding, from FLAGS#V1 (the runner's item) to FLAGS#V2
    status = flagctl(migrating_runner, "--json", "migrate", "--status")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)["migration"]
    assert (shown["item"], shown["source"], shown["target"], shown["state"]) == (
        "FLAGS#V1",
        "FLAGS#V1",
        "FLAGS#V2",
        "expanding",
    )
    assert (shown["migrated_at"], shown["reason"], shown["mapping"]) == (last + 1, "to V2", GOOD)
    # And a reader configured for FLAGS#V1 (the runner's read function) serves V2's version
    assert served_version(migrating_runner, last + 1) == last + 1

    # When the same migration is sent again / Then it is refused as a conflict, naming V2
    again = flagctl(migrating_runner, *inputs)
    assert again.returncode == 3 and "FLAGS_MIGRATED" in again.stderr and "FLAGS#V2" in again.stderr
