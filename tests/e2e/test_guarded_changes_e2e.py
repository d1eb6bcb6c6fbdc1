"""Guarded changes through the local runner over HTTP: a guarded PATCH, its alarm firing (the runner's
``POST /_alarms/<name>`` delivers the event EventBridge would), the flags reverted by the guard, an alarm after a
newer change skipped, a bake closed, and GET /flags/guards.

The runner is shared: each test reads the version it starts from and names alarms of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from singleton_flags_infra.config import load_config
from tests.support.runner import Answer, Runner, eventually, run_module

PREFIX = load_config().guard_prefix


def alarm(runner: Runner, name: str, state: str = "ALARM") -> Answer:
    answer = runner.send("POST", f"/_alarms/{name}", {"state": state})
    assert answer.status == 200, answer.body
    return answer


def guarded_patch(runner: Runner, flags: dict, alarms: list[str], minutes: int = 30) -> Answer:
    body = {"flags": flags, "reason": "e2e guarded", "guard": {"alarms": alarms, "bake_minutes": minutes}}
    return runner.send("PATCH", "/flags", body)


def flags(runner: Runner) -> dict:
    answer = runner.send("GET", "/flags/history?limit=1")
    assert answer.status == 200, answer.body
    return answer.body["records"][0]


@pytest.fixture(autouse=True)
def settled(runner: Runner) -> Iterator[None]:
    """After each test, readers are served its last write (the read function's cache is 1 s old at most), so
    the next test of the shared runner starts from what GET /flags says."""
    yield
    records = runner.send("GET", "/flags/history?limit=1").body["records"]
    if records:
        latest = records[0]["version"]
        eventually(lambda: runner.get("/flags"), lambda answer: answer.body["version"] == latest)


def test_an_alarm_during_the_bake_reverts_the_guarded_change_as_actor_guard(runner):
    # Given a quiet alarm, ai_search_enabled off, and a guarded change switching it on
    name = f"{PREFIX}e2e-revert"
    alarm(runner, name, "OK")
    off = runner.send("PATCH", "/flags", {"flags": {"ai_search_enabled": False}, "reason": "e2e setup"})
    assert off.status == 200, off.body
    changed = guarded_patch(runner, {"ai_search_enabled": True}, [name])
    assert changed.status == 200, changed.body
    version = changed.body["version"]
    assert changed.body["guard"]["state"] == "baking" and changed.body["guard"]["close_scheduled"] is True
    # When the alarm goes into ALARM
    fired = alarm(runner, name)
    # Then the guard function reverted the change, as actor guard
    assert fired.body["delivered"]["detail"]["alarmName"] == name
    (outcome,) = fired.body["result"]["outcomes"]
    assert (outcome["status"], outcome["guard"]) == ("reverted", version)
    record = flags(runner)
    assert (record["version"], record["kind"], record["actor"]) == (version + 1, "guard-revert", "guard")
    assert record["guard"] == {"version": version, "alarm": name}
    assert record["state"]["ai_search_enabled"] is False
    served = eventually(lambda: runner.get("/flags"), lambda a: a.body["version"] == version + 1)
    assert served.body["flags"]["ai_search_enabled"] is False
    # And the guard says so
    guards = runner.get("/flags/guards").body["guards"]
    (guard,) = [g for g in guards if g["version"] == version]
    assert (guard["state"], guard["alarm"], guard["reverted_by"]) == ("reverted", name, version + 1)
    # And the guard-revert is a version like any other: one Flags Changed event, of its kind and actor
    events = runner.get("/_events").body
    (event,) = [e for e in events["events"] if e["detail"]["version"] == version + 1]
    assert (event["detail"]["kind"], event["detail"]["actor"]) == ("guard-revert", "guard")
    assert event["detail"]["changes"]["ai_search_enabled"] == {"old": True, "new": False}
    # And a second state change to ALARM without one to OK in between delivers nothing
    again = alarm(runner, name)
    assert again.body["delivered"] is None


def test_an_alarm_after_a_newer_change_is_skipped_and_reverts_nothing(runner):
    name = f"{PREFIX}e2e-skip"
    alarm(runner, name, "OK")
    guarded = guarded_patch(runner, {"search_ranking": "hybrid"}, [name])
    assert guarded.status == 200, guarded.body
    newer = runner.send("PATCH", "/flags", {"flags": {"search_ranking": "classic"}, "reason": "e2e newer"})
    assert newer.status == 200, newer.body

    fired = alarm(runner, name)

    (outcome,) = fired.body["result"]["outcomes"]
    assert (outcome["status"], outcome["guard"]) == ("skipped", guarded.body["version"])
    assert flags(runner)["version"] == newer.body["version"]  # nothing undone
    (guard,) = [g for g in runner.get("/flags/guards").body["guards"] if g["version"] == guarded.body["version"]]
    assert guard["state"] == "skipped" and f"version {newer.body['version']}" in guard["outcome"]


def test_a_guard_on_an_alarm_in_alarm_is_409_and_one_unknown_is_400(runner):
    firing, unknown = f"{PREFIX}e2e-firing", f"{PREFIX}e2e-unknown"
    alarm(runner, firing)
    before = runner.send("GET", "/flags/history?limit=1").body["records"]

    active = guarded_patch(runner, {"signup_enabled": True}, [firing])
    missing = guarded_patch(runner, {"signup_enabled": True}, [unknown])
    outside = guarded_patch(runner, {"signup_enabled": True}, ["someone-elses-alarm"])

    assert (active.status, active.body["error"]["code"]) == (409, "GUARD_ALARM_ACTIVE")
    assert (missing.status, missing.body["error"]["code"]) == (400, "GUARD_ALARM_NOT_FOUND")
    assert (outside.status, outside.body["error"]["rule"]) == (400, "guard_alarm_prefix")
    assert runner.send("GET", "/flags/history?limit=1").body["records"] == before  # nothing written


def test_the_close_route_ends_a_quiet_bake_only_at_its_end(runner):
    name = f"{PREFIX}e2e-close"
    alarm(runner, name, "OK")
    runner.send("PATCH", "/flags", {"flags": {"trace_sample_rate": 0.25}, "reason": "e2e setup"})
    guarded = guarded_patch(runner, {"trace_sample_rate": 0.5}, [name], minutes=1)
    assert guarded.status == 200, guarded.body

    closed = runner.send("POST", f"/_guards/{guarded.body['version']}/close")

    (outcome,) = closed.body["result"]["outcomes"]
    assert outcome["status"] == "early"  # a minute's bake has not ended: the guard keeps baking
    assert runner.send("POST", "/_guards/0/close").status == 404


def test_flagctl_sets_a_guarded_change_and_lists_its_guard(runner):
    name = f"{PREFIX}e2e-flagctl"
    alarm(runner, name, "OK")
    runner.send("PATCH", "/flags", {"flags": {"api_rate_limit_per_minute": 600}, "reason": "e2e setup"})
    argv = ["set", "api_rate_limit_per_minute=900", "--reason", "flagctl guarded"]

    changed = run_module("flagctl", "--url", runner.url, *argv, "--guard-alarm", name, "--bake-minutes", "15")
    listed = run_module("flagctl", "--url", runner.url, "guards", "--limit", "1")

    assert changed.returncode == 0, changed.stderr
    assert f"guarded by {name} until" in changed.stdout
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].split()[:2] == ["VERSION", "STATE"]
    assert "baking" in listed.stdout and name in listed.stdout


def test_an_alarm_outside_the_prefix_reaches_no_guard(runner):
    # the stack's rule matches alarm names by the prefix: the runner delivers what the rule would, nothing else
    answer = alarm(runner, "someone-elses-alarm")

    assert (answer.body["state"], answer.body["delivered"]) == ("ALARM", None)
    assert runner.get("/_alarms").body["alarms"]["someone-elses-alarm"] == "ALARM"
