"""The API through the local runner over HTTP: reads, writes, caching headers, history, revert, a window.

Tests share one runner (its state moves on): each reads the version it starts from instead of assuming one,
and only the window test touches ``maintenance_mode``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from singleton_flags_infra.config import load_config
from singleton_flags_service.contract import load_service_declarations
from tests.support.runner import Answer, Runner, eventually

DECLARED = list(load_service_declarations())
WINDOW = load_config().maintenance_windows[0].name


def current(runner: Runner) -> Answer:
    answer = runner.get("/flags")
    assert answer.status == 200, answer.body
    return answer


def patch(runner: Runner, flags: dict, reason: str = "e2e", if_match: str | None = None) -> Answer:
    headers = {"If-Match": if_match} if if_match else {}
    return runner.send("PATCH", "/flags", {"flags": flags, "reason": reason}, headers)


def test_get_flags_serves_every_declared_flag_with_its_version_as_etag(runner):
    # When
    answer = current(runner)
    # Then
    assert list(answer.body["flags"]) == DECLARED
    assert answer.body["reason"] in ("STATIC", "CACHED")
    assert answer.header("ETag") == f'"{answer.body["version"]}"'
    assert answer.header("Cache-Control") == "no-cache"
    assert answer.header("x-amzn-RequestId")


def test_get_one_flag_and_an_unknown_flag_is_404(runner):
    one = runner.get("/flags/search_ranking")
    unknown = runner.get("/flags/no_such_flag")
    assert one.status == 200 and one.body["name"] == "search_ranking"
    assert one.body["value"] in ("classic", "semantic", "hybrid")
    assert unknown.status == 404 and unknown.body["error"]["code"] == "FLAG_NOT_FOUND"


def test_if_none_match_with_the_current_etag_is_304(runner):
    # Given
    etag = current(runner).header("ETag")
    # When
    answer = runner.get("/flags", {"If-None-Match": etag})
    # Then
    assert answer.status == 304 and answer.body is None
    assert answer.header("ETag") == etag


def latest_version(runner: Runner) -> int:
    """The version the write function is at (its history reads consistently; the readers' cache may lag)."""
    records = runner.get("/flags/history?limit=1").body["records"]
    return int(records[0]["version"]) if records else 0


def test_a_conditional_write_bumps_the_version_and_readers_see_it(runner):
    # Given the version readers serve, once they serve the latest (an earlier test may have just written)
    latest = latest_version(runner)
    before = eventually(lambda: current(runner), lambda a: a.body["version"] == latest)
    wanted = before.body["flags"]["api_rate_limit_per_minute"] + 1
    # When
    answer = patch(runner, {"api_rate_limit_per_minute": wanted}, if_match=before.header("ETag"))
    # Then
    assert answer.status == 200, answer.body
    assert answer.body["applied"] is True and answer.body["version"] == before.body["version"] + 1
    assert answer.header("ETag") == f'"{before.body["version"] + 1}"'
    seen = eventually(lambda: current(runner), lambda a: a.body["version"] == answer.body["version"])
    assert seen.body["flags"]["api_rate_limit_per_minute"] == wanted


def test_a_stale_if_match_is_412_with_the_current_version(runner):
    # Given: a version that is not the current one any more
    stale = current(runner).body["version"]
    assert patch(runner, {"ai_search_enabled": not current(runner).body["flags"]["ai_search_enabled"]}).status == 200
    # When
    answer = patch(runner, {"signup_enabled": False}, if_match=f'"{stale}"')
    # Then
    assert answer.status == 412
    assert answer.body["error"]["code"] == "PRECONDITION_FAILED"
    assert answer.body["error"]["current_version"] > stale
    assert answer.header("ETag") == f'"{answer.body["error"]["current_version"]}"'


def test_history_lists_changes_newest_first_with_the_local_actor(runner):
    # Given
    patch(runner, {"search_ranking": "hybrid"}, reason="history e2e")
    patch(runner, {"search_ranking": "semantic"}, reason="history e2e, second")
    # When
    answer = runner.get("/flags/history?limit=2")
    # Then
    assert answer.status == 200
    first, second = answer.body["records"]
    assert first["version"] == second["version"] + 1
    assert (first["reason"], first["actor"]) == ("history e2e, second", "local-admin")
    assert first["changes"] == {"search_ranking": {"old": "hybrid", "new": "semantic"}}
    assert answer.body["next_cursor"]
    older = runner.get(f"/flags/history?limit=2&cursor={answer.body['next_cursor']}")
    assert older.status == 200 and older.body["records"][0]["version"] == second["version"] - 1


def test_revert_restores_an_earlier_versions_values_as_a_new_version(runner):
    # Given
    start = patch(runner, {"trace_sample_rate": 0.25}, reason="before revert").body
    changed = patch(runner, {"trace_sample_rate": 0.75, "search_ranking": "classic"}, reason="to be undone").body
    # When
    answer = runner.send("POST", "/flags/revert", {"version": start["version"], "reason": "undo e2e"})
    # Then
    assert answer.status == 200, answer.body
    assert answer.body["version"] == changed["version"] + 1
    assert answer.body["flags"] == start["flags"]
    record = runner.get("/flags/history?limit=1").body["records"][0]
    assert (record["kind"], record["reverted_to"]) == ("revert", start["version"])
    assert runner.send("POST", "/flags/revert", {"version": 10**9, "reason": "x"}).status == 404


def test_a_scheduled_window_switches_maintenance_on_then_off(runner):
    # When: the schedule's start is delivered
    started = runner.send("POST", f"/_scheduler/{WINDOW}/start")
    # Then
    assert started.status == 200, started.body
    delivered = started.body["delivered"]
    assert {key: delivered[key] for key in ("action", "window")} == {"action": "start", "window": WINDOW}
    assert set(delivered) == {"action", "window", "scheduled_time"}  # now, as Scheduler would substitute it
    assert started.body["result"]["status"] == "started"
    on = eventually(lambda: current(runner), lambda a: a.body["flags"]["maintenance_mode"] is True)
    assert on.body["flags"]["maintenance_mode"] is True
    held = on.body["maintenance"]
    assert (held["on"], held["held_by"], held["window"]) == (True, "window", WINDOW)
    assert held["deadline"] == started.body["result"]["deadline"]  # the deadline the start stored, in UTC
    assert runner.get("/flags/history?limit=1").body["records"][0]["actor"] == f"scheduler:{WINDOW}"
    # When: a duplicate delivery, then the end
    assert runner.send("POST", f"/_scheduler/{WINDOW}/start").body["result"]["status"] == "duplicate"
    ended = runner.send("POST", f"/_scheduler/{WINDOW}/end")
    # Then
    assert ended.status == 200 and ended.body["result"]["status"] == "ended"
    off = eventually(lambda: current(runner), lambda a: a.body["flags"]["maintenance_mode"] is False)
    assert off.body["flags"]["maintenance_mode"] is False
    assert off.body["maintenance"] == {"on": False, "held_by": None, "window": None, "deadline": None}


def test_the_scheduler_route_refuses_unknown_windows(runner):
    assert runner.send("POST", "/_scheduler/not-a-window/start").status == 404
    assert runner.send("GET", f"/_scheduler/{WINDOW}/start").status == 405


def test_wrong_method_is_405_with_allow_and_unknown_path_404(runner):
    wrong = runner.send("DELETE", "/flags")
    static = runner.get("/flags/revert")  # the /flags/revert resource, not a flag named "revert"
    unknown = runner.get("/nowhere")
    assert wrong.status == 405 and wrong.header("Allow") == "GET, PATCH"
    assert static.status == 405 and static.header("Allow") == "POST"
    assert wrong.body["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert unknown.status == 404 and unknown.body["error"]["code"] == "NOT_FOUND"


def test_bad_input_is_400_naming_the_problem(runner):
    malformed = runner.send("PATCH", "/flags", b'{"flags": ')
    wrong_type = patch(runner, {"signup_enabled": "yes"})
    unknown_flag = patch(runner, {"no_such_flag": True})
    assert malformed.status == wrong_type.status == unknown_flag.status == 400
    assert wrong_type.body["error"]["flag"] == "signup_enabled"
    assert unknown_flag.body["error"]["code"] == "UNKNOWN_FLAG"


@pytest.mark.parametrize("content_type", ["text/plain", "multipart/form-data"])
def test_a_body_that_is_not_json_is_refused_with_the_error_contract(runner, content_type):
    body = b'{"flags": {"signup_enabled": true}, "reason": "content type"}'
    answer = runner.send("PATCH", "/flags", body, {"Content-Type": content_type})
    assert answer.status == 415
    assert answer.body["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_the_openapi_document_and_swagger_ui_are_served(runner):
    document = runner.get("/openapi.json").body
    assert document["servers"][0]["url"] == runner.url
    assert {
        "/flags",
        "/flags/{name}",
        "/flags/history",
        "/flags/declarations",
        "/flags/windows",
        "/flags/revert",
        "/flags/restore",
        "/flags/guards",
        "/flags/schedules",
        "/flags/schedules/{id}",
        "/flags/change-requests",
        "/flags/change-requests/{id}",
        "/flags/change-requests/{id}/approve",
        "/flags/change-requests/{id}/reject",
        "/flags/change-requests/{id}/withdraw",
        "/flags/migration",
        "/flags/migration/finalise",
        "/flags/migration/rollback",
        "/ofrep/v1/evaluate/flags",
        "/ofrep/v1/evaluate/flags/{key}",
    } == set(document["paths"])
    page = runner.get("/docs")
    assert page.status == 200 and page.header("Content-Type").startswith("text/html")


def test_every_committed_version_is_one_change_event_at_events(runner):
    # Given the events so far (the runner's state moves on: other tests wrote versions)
    before = runner.get("/_events")
    assert before.status == 200, before.body
    # When a PATCH commits a version (a value the flag already holds commits nothing: then the other one)
    rate = 0.125
    changed = patch(runner, {"trace_sample_rate": rate}, reason="an event").body
    if not changed["applied"]:
        rate = 0.375
        changed = patch(runner, {"trace_sample_rate": rate}, reason="an event").body
    assert changed["applied"], changed
    # Then exactly one more event, for that version, with its change
    after = runner.get("/_events").body
    assert after["errors"] == []
    assert after["events"][: len(before.body["events"])] == before.body["events"]
    (event,) = after["events"][len(before.body["events"]) :]
    assert (event["source"], event["detail-type"]) == ("singleton-flags", "Flags Changed")
    assert event["detail"]["version"] == changed["version"]
    assert event["detail"]["reason"] == "an event"
    assert event["detail"]["changes"]["trace_sample_rate"]["new"] == rate
    # And every version the runner committed is there once, in order
    versions = [event["detail"]["version"] for event in after["events"]]
    assert versions == list(range(1, changed["version"] + 1))


def test_the_console_reads_the_declarations_in_declaration_order(runner):
    answer = runner.get("/flags/declarations")
    assert answer.status == 200, answer.body
    declarations = answer.body["declarations"]
    assert [entry["name"] for entry in declarations] == DECLARED
    assert all({"name", "type", "initial", "fallback", "description"} <= set(entry) for entry in declarations)


def test_the_console_reads_the_windows_of_cdk_json_with_their_next_times(runner):
    answer = runner.get("/flags/windows")
    assert answer.status == 200, answer.body
    configured = load_config().maintenance_windows
    windows = answer.body["windows"]
    assert [(w["name"], w["start"], w["end"], w["timezone"]) for w in windows] == [
        (w.name, w.start, w.end, w.timezone) for w in configured
    ]
    now = datetime.now(UTC)
    for window in windows:
        for key in ("next_start", "next_end"):
            assert datetime.fromisoformat(window[key]) == datetime.fromisoformat(window[f"{key}_utc"]) > now
