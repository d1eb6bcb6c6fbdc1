"""flagctl (``python -m flagctl``, a real process) against the local runner: tables, --json, exit codes."""

from __future__ import annotations

import json
import subprocess

from tests.support.runner import Runner, run_module


def flagctl(runner: Runner, *args: str) -> subprocess.CompletedProcess[str]:
    return run_module("flagctl", "--url", runner.url, *args)


def test_flagctl_reads_changes_and_reverts_through_the_api(runner):
    # Given: a version with an audit record to come back to (the seed, version 0, has none)
    rate = json.loads(flagctl(runner, "--json", "get", "trace_sample_rate").stdout)["value"]
    base = "0.125" if rate != 0.125 else "0.375"
    before = json.loads(
        flagctl(runner, "--json", "set", f"trace_sample_rate={base}", "--reason", "flagctl e2e base").stdout
    )
    # When
    table = flagctl(runner, "get")
    changed = flagctl(
        runner,
        "--json",
        "set",
        "search_ranking=hybrid",
        "api_rate_limit_per_minute=777",
        "--reason",
        "flagctl e2e",
        "--if-match",
        str(before["version"]),
    )
    # Then
    assert table.returncode == 0 and table.stdout.splitlines()[0].split() == ["FLAG", "VALUE"]
    assert changed.returncode == 0, changed.stderr
    state = json.loads(changed.stdout)
    assert state["flags"]["search_ranking"] == "hybrid" and state["flags"]["api_rate_limit_per_minute"] == 777
    history = json.loads(flagctl(runner, "--json", "history", "--limit", "1").stdout)
    assert history["records"][0]["reason"] == "flagctl e2e" and history["records"][0]["version"] == state["version"]
    # When: back to the values before
    reverted = flagctl(runner, "revert", str(before["version"]), "--reason", "flagctl e2e undo")
    # Then
    assert reverted.returncode == 0, reverted.stderr
    assert f"now at version {state['version'] + 1}" in reverted.stdout


def test_flagctl_exit_codes_tell_conflict_from_bad_input(runner):
    current = json.loads(flagctl(runner, "--json", "get").stdout)
    version, enabled = current["version"], current["flags"]["ai_search_enabled"]
    # a change whatever an earlier test left the flag at, so that the version moves past the If-Match below
    bump = "ai_search_enabled=" + ("false" if enabled else "true")
    assert flagctl(runner, "set", bump, "--reason", "bump").returncode == 0
    stale = flagctl(runner, "set", "ai_search_enabled=false", "--reason", "stale", "--if-match", str(version))
    wrong_type = flagctl(runner, "set", "api_rate_limit_per_minute=lots", "--reason", "bad")
    unknown = flagctl(runner, "get", "no_such_flag")
    assert stale.returncode == 3 and "412 PRECONDITION_FAILED" in stale.stderr
    assert wrong_type.returncode == 2 and "INVALID_VALUE" in wrong_type.stderr
    assert unknown.returncode == 2 and "FLAG_NOT_FOUND" in unknown.stderr


def test_flagctl_without_a_server_is_exit_5(runner):
    dead = Runner(runner.process, "http://127.0.0.1:9", runner.log)
    finished = flagctl(dead, "get")
    assert finished.returncode == 5 and "cannot reach" in finished.stderr
