"""Scheduled changes through the local runner and flagctl (real processes): created with flagctl, delivered by
the runner's scheduler as a schedule would be, applied once; cancelled ones apply nothing."""

from __future__ import annotations

import json
import subprocess
import time

from tests.support.runner import Runner, eventually, run_module


def flagctl(runner: Runner, *args: str) -> subprocess.CompletedProcess[str]:
    return run_module("flagctl", "--url", runner.url, *args)


def minutes_ahead(minutes: int) -> str:
    """A whole minute at least ``minutes`` ahead, RFC 3339 in UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(time.time() + minutes * 60 + 60))


def test_a_change_scheduled_with_flagctl_is_applied_once_when_delivered(runner: Runner) -> None:
    # Given the current value of a flag
    current = json.loads(flagctl(runner, "--json", "get", "ai_search_enabled").stdout)["value"]
    wanted = "false" if current else "true"
    # When its opposite is scheduled with flagctl
    created = flagctl(
        runner, "--json", "schedule", "create", f"ai_search_enabled={wanted}", "--at", minutes_ahead(3),
        "--reason", "e2e launch",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    schedule = json.loads(created.stdout)
    assert schedule["status"] == "pending"
    listed = flagctl(runner, "schedule", "list")
    assert listed.returncode == 0 and schedule["id"] in listed.stdout and "pending" in listed.stdout
    # And its schedule fires (the runner delivers what EventBridge Scheduler would)
    fired = runner.send("POST", f"/_scheduler/changes/{schedule['id']}")
    assert fired.status == 200, fired.body
    assert fired.body["delivered"] == {"scheduled_change": schedule["id"]}
    assert fired.body["result"]["status"] == "applied"
    version = fired.body["result"]["version"]
    # Then the flag changed, as one version by the schedule, with its requester and reason
    seen = eventually(lambda: runner.get("/flags/ai_search_enabled").body, lambda body: body["version"] == version)
    assert seen["value"] is (wanted == "true")
    (record,) = runner.get("/flags/history?limit=1").body["records"]
    assert (record["version"], record["kind"], record["actor"]) == (version, "scheduled", f"schedule:{schedule['id']}")
    assert (record["reason"], record["requested_by"]) == ("e2e launch", "local-admin")
    # And a second delivery does nothing
    again = runner.send("POST", f"/_scheduler/changes/{schedule['id']}")
    assert again.body["result"]["status"] == "not_pending"
    assert runner.get("/flags/history?limit=1").body["records"][0]["version"] == version
    listed = json.loads(flagctl(runner, "--json", "schedule", "list").stdout)["schedules"]
    mine = next(item for item in listed if item["id"] == schedule["id"])
    assert (mine["status"], mine["version"]) == ("applied", version)


def test_a_change_cancelled_with_flagctl_applies_nothing_and_refusals_are_exit_codes(runner: Runner) -> None:
    created = flagctl(
        runner, "--json", "schedule", "create", "search_ranking=hybrid", "--at", minutes_ahead(5),
        "--reason", "e2e cancel",
    )  # fmt: skip
    schedule_id = json.loads(created.stdout)["id"]
    version = runner.get("/flags").body["version"]
    cancelled = flagctl(runner, "schedule", "cancel", schedule_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == f"cancelled {schedule_id}"
    fired = runner.send("POST", f"/_scheduler/changes/{schedule_id}")
    assert fired.body["result"]["status"] == "not_pending"
    assert runner.get("/flags").body["version"] == version
    # cancelling twice is a conflict; a time the zone skips, or too soon, is bad input
    assert flagctl(runner, "schedule", "cancel", schedule_id).returncode == 3
    gap = flagctl(
        runner, "schedule", "create", "search_ranking=hybrid", "--at", "2027-03-28T02:30:00",
        "--timezone", "Europe/Paris", "--reason", "gap",
    )  # fmt: skip
    assert gap.returncode == 2 and "at_nonexistent" in gap.stderr
    soon = flagctl(runner, "schedule", "create", "search_ranking=hybrid", "--at", minutes_ahead(0), "--reason", "soon")
    assert soon.returncode == 2 and "at_too_soon" in soon.stderr
