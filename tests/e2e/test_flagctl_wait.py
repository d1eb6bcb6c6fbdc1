"""``flagctl set --wait`` (a real process) against the local runner: it returns once the runner's readers are seen
serving the new version, and says it could not know (exit 7) when no reader read since the change."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests.support.runner import REPO_ROOT, Runner, run_module, runner_env

NOT_SEEN = 7


def test_set_wait_returns_once_a_reader_serves_the_new_version(runner: Runner) -> None:
    # Given flagctl changing a flag with --wait, and an application reading the flags meanwhile
    command = [sys.executable, "-m", "flagctl", "--url", runner.url, "--json", "set", "trace_sample_rate=0.25"]
    waiting = subprocess.Popen(
        [*command, "--reason", "wait e2e", "--wait", "--wait-timeout", "30"],
        cwd=REPO_ROOT,
        env={**runner_env(0), "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while waiting.poll() is None:
        runner.get("/flags")
        time.sleep(0.2)
    out, err = waiting.communicate()
    # Then it exits 0 once the runner's read function serves the version it wrote, and says so
    assert waiting.returncode == 0, err
    *change_lines, served_line = out.strip().splitlines()
    version = json.loads("\n".join(change_lines))["version"]
    assert json.loads(served_line) == {"served": {"version": version, "readers": 1}}
    (reader,) = runner.get("/_served").body["readers"]
    assert (reader["function"], reader["version"]) == ("read", version)


def test_set_wait_without_any_reader_says_it_could_not_know(runner: Runner) -> None:
    # Given no application reading the flags
    # When flagctl changes a flag and waits a little
    done = run_module(
        "flagctl",
        "--url",
        runner.url,
        "set",
        "trace_sample_rate=0.5",
        "--reason",
        "wait e2e, nobody reads",
        "--wait",
        "--wait-timeout",
        "2",
    )
    # Then the change is applied, and flagctl says it could not know whether readers serve it (exit 7)
    assert done.returncode == NOT_SEEN, done.stderr
    assert "not seen served within 2 s: no reader was heard from since the change" in done.stderr
    assert (
        json.loads(run_module("flagctl", "--url", runner.url, "--json", "get", "trace_sample_rate").stdout)["value"]
        == 0.5
    )
