"""The write path replays its recorded transcript: every route that writes, every automatic writer (the seed, a
window's start and end, a scheduled change's delivery, a guard's revert and close, a restore, the migration's
steps), each answer, and every item and audit record each one put or deleted, on DynamoDB Local.

The transcript (``transcripts/write_path/``, one file per story) was recorded from the code as it stood; any
change of an answer, a status, a stored attribute, a key or an audit record shows as a diff against it. A change
that means to alter what is written records it again (``RECORD_TRANSCRIPT=1``) and the diff is reviewed with it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from local.dynamodb_local import local_client
from local.gateway import LOCAL_ACCOUNT
from singleton_flags.keys import SINGLETON_SK, singleton_key
from singleton_flags_infra.config import load_config
from tests.support.migration import GOOD, new_declarations
from tests.support.runner import declarations_command, launch_runner, protected_declarations, serving
from tests.support.transcript import Transcript, difference, dumps

RECORDED = Path(__file__).parent / "transcripts" / "write_path"  # one file per story
ALICE = f"arn:aws:iam::{LOCAL_ACCOUNT}:user/alice"
BOB = f"arn:aws:iam::{LOCAL_ACCOUNT}:user/bob"
ON_CALL = f"arn:aws:iam::{LOCAL_ACCOUNT}:user/on-call"
PROTECTED = "maintenance_mode"
ALARM = f"{load_config().guard_prefix}transcript"
WINDOW = load_config().maintenance_windows[0].name
# A scheduled change's time: never due while the transcript runs (and within the 366 days a schedule may be ahead)
FAR = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(time.time() + 30 * 86400))


@pytest.fixture
def declarations_file(tmp_path: Path) -> Path:
    """The service's declarations with maintenance_mode protected (one approval; break-glass by ON_CALL)."""
    return protected_declarations(tmp_path, PROTECTED, {"approvals": 1, "break_glass": [ON_CALL]})


class Stage:
    """One table on DynamoDB Local and the runner over it, started (and seeded) again on demand."""

    def __init__(self, endpoint: str, table: str, declarations: Path, logs: Path) -> None:
        self.endpoint, self.table, self.declarations, self.logs = endpoint, table, declarations, logs
        self.client = local_client(endpoint)
        self.transcript = Transcript(self.client, table)
        self.transcript.mask.literals[endpoint] = "<dynamodb>"
        self.starts = 0

    def start(self, step: str) -> None:
        """The runner started (its seed included) as a step; one that exits instead is recorded with its status
        and its last line, and the stage has no runner."""
        self.starts += 1
        log = self.logs / f"{self.table}-{self.starts}.log"
        command = declarations_command(self.declarations)
        runner = launch_runner(log, command, AWS_ENDPOINT_URL_DYNAMODB=self.endpoint, TABLE_NAME=self.table)

        def outcome(up: bool) -> dict[str, Any]:
            if up:
                return {"runner": "serving"}
            return {"runner": {"exit": runner.process.returncode, "said": runner.output().strip().splitlines()[-1:]}}

        if self.transcript.act(step, lambda: serving(runner), outcome):
            self.transcript.serve(runner)

    def stop(self) -> None:
        if self.transcript.runner is not None:
            assert self.transcript.runner.stop() == 0, self.transcript.runner.output()
            self.transcript.serve(None)

    def delete_item(self, step: str, sort_key: str = SINGLETON_SK) -> None:
        key = singleton_key(sort_key)
        self.transcript.act(step, lambda: self.client.delete_item(TableName=self.table, Key=key))


@pytest.fixture
def stages(dynamodb_local_endpoint: str, declarations_file: Path, tmp_path: Path) -> Iterator[Callable[[str], Stage]]:
    """Stages made on demand, each on a table of its own; their runners stopped after the test."""
    made: list[Stage] = []

    def make(name: str) -> Stage:
        made.append(Stage(dynamodb_local_endpoint, f"transcript-{os.getpid()}-{name}", declarations_file, tmp_path))
        return made[-1]

    yield make
    for stage in made:
        stage.stop()


def a_new_second() -> None:
    """Wait for the next second: schedules and change requests created in one second list in their ids' random
    order, and the transcript's lists must come in one order."""
    time.sleep(1.01 - time.time() % 1)


def patch(flags: dict[str, Any], reason: str, **extra: Any) -> dict[str, Any]:
    return {"flags": flags, "reason": reason, **extra}


def operator_writes(stage: Stage) -> None:
    """Every write route and automatic writer on a live FLAGS#V1 item."""
    t = stage.transcript
    stage.start("seed: the runner creates the table and seeds the item")
    t.call("patch", "PATCH", "/flags", patch({"signup_enabled": False}, "close signups"), actor=ALICE)
    t.call("patch with a stale If-Match", "PATCH", "/flags", patch({"signup_enabled": True}, "x"),
           actor=ALICE, headers={"If-Match": '"0"'})  # fmt: skip
    t.call("patch with the current If-Match", "PATCH", "/flags", patch({"api_rate_limit_per_minute": 700}, "banner"),
           actor=ALICE, headers={"If-Match": '"1"'})  # fmt: skip
    keyed = {"Idempotency-Key": "transcript-key-1"}
    t.call("patch with an Idempotency-Key", "PATCH", "/flags", patch({"trace_sample_rate": 0.5}, "sample"),
           actor=ALICE, headers=keyed)  # fmt: skip
    t.call("the same key and request again", "PATCH", "/flags", patch({"trace_sample_rate": 0.5}, "sample"),
           actor=ALICE, headers=keyed)  # fmt: skip
    t.call("the same key, another request", "PATCH", "/flags", patch({"trace_sample_rate": 0.25}, "sample"),
           actor=ALICE, headers=keyed)  # fmt: skip
    t.call("a patch that changes nothing", "PATCH", "/flags", patch({"signup_enabled": False}, "again"), actor=ALICE)
    t.call("a patch of an undeclared flag", "PATCH", "/flags", patch({"no_such_flag": 1}, "x"), actor=ALICE)
    t.call("revert to version 1", "POST", "/flags/revert", {"version": 1, "reason": "undo"}, actor=BOB)
    t.call("revert to the seeded state", "POST", "/flags/revert", {"version": 0, "reason": "reset"}, actor=BOB)

    # guards: an alarm that fires during the bake reverts; a quiet bake is closed at its end
    t.call("an alarm registered quiet", "POST", f"/_alarms/{ALARM}", {"state": "OK"})
    guarded = t.call("a guarded patch", "PATCH", "/flags",
                     patch({"ai_search_enabled": True}, "guarded", guard={"alarms": [ALARM], "bake_minutes": 30}),
                     actor=ALICE)  # fmt: skip
    t.call("the alarm fires: the guard reverts", "POST", f"/_alarms/{ALARM}", {"state": "ALARM"})
    t.call("the alarm is quiet again", "POST", f"/_alarms/{ALARM}", {"state": "OK"})
    second = t.call("a second guarded patch", "PATCH", "/flags",
                    patch({"search_ranking": "semantic"}, "guarded", guard={"alarms": [ALARM], "bake_minutes": 30}),
                    actor=ALICE)  # fmt: skip
    t.call("its bake ends quietly", "POST", f"/_guards/{second.body['version']}/close")
    t.call("the first guard's close after its revert", "POST", f"/_guards/{guarded.body['version']}/close")
    t.call("the guards", "GET", "/flags/guards")

    # maintenance windows
    t.call("a window starts", "POST", f"/_scheduler/{WINDOW}/start")
    t.call("the window's start again", "POST", f"/_scheduler/{WINDOW}/start")
    t.call("an operator's patch during the window", "PATCH", "/flags",
           patch({"api_rate_limit_per_minute": 800}, "during the window"), actor=ALICE)  # fmt: skip
    t.call("the window ends", "POST", f"/_scheduler/{WINDOW}/end")

    # scheduled changes
    a_new_second()
    scheduled = t.call("a scheduled change", "POST", "/flags/schedules",
                       {"flags": {"ai_search_enabled": True}, "reason": "launch", "at": FAR}, actor=ALICE)  # fmt: skip
    t.call("its delivery", "POST", f"/_scheduler/changes/{scheduled.body['id']}")
    t.call("its delivery again", "POST", f"/_scheduler/changes/{scheduled.body['id']}")
    a_new_second()
    cancelled = t.call("a second scheduled change", "POST", "/flags/schedules",
                       {"flags": {"signup_enabled": True}, "reason": "reopen", "at": FAR, "if_version": 0},
                       actor=ALICE, headers={"Idempotency-Key": "transcript-schedule"})  # fmt: skip
    t.call("the same schedule's key again", "POST", "/flags/schedules",
           {"flags": {"signup_enabled": True}, "reason": "reopen", "at": FAR, "if_version": 0},
           actor=ALICE, headers={"Idempotency-Key": "transcript-schedule"})  # fmt: skip
    t.call("it is cancelled", "DELETE", f"/flags/schedules/{cancelled.body['id']}", actor=BOB)
    a_new_second()
    stale = t.call("a third scheduled change, if at a version that moves", "POST", "/flags/schedules",
                   {"flags": {"api_rate_limit_per_minute": 900}, "reason": "stale", "at": FAR, "if_version": 1},
                   actor=ALICE)  # fmt: skip
    t.call("its delivery at another version", "POST", f"/_scheduler/changes/{stale.body['id']}")
    t.call("the schedules", "GET", "/flags/schedules")

    # approvals
    t.call("a direct patch of a protected flag", "PATCH", "/flags", patch({PROTECTED: True}, "direct"), actor=ALICE)
    a_new_second()
    request = t.call("a change request", "POST", "/flags/change-requests", patch({PROTECTED: True}, "drill"),
                     actor=ALICE)  # fmt: skip
    rid = request.body["change_request"]["id"]
    t.call("its author approves", "POST", f"/flags/change-requests/{rid}/approve", {"reason": "me"}, actor=ALICE)
    t.call("another approves: applied", "POST", f"/flags/change-requests/{rid}/approve", {"reason": "ok"}, actor=BOB)
    a_new_second()
    rejected = t.call("a request to undo it", "POST", "/flags/change-requests", patch({PROTECTED: False}, "undo"),
                      actor=ALICE)  # fmt: skip
    t.call("it is rejected", "POST", f"/flags/change-requests/{rejected.body['change_request']['id']}/reject",
           {"reason": "not yet"}, actor=BOB)  # fmt: skip
    a_new_second()
    withdrawn = t.call("another request", "POST", "/flags/change-requests", patch({PROTECTED: False}, "undo"),
                       actor=ALICE)  # fmt: skip
    t.call("its author withdraws it", "POST",
           f"/flags/change-requests/{withdrawn.body['change_request']['id']}/withdraw", {}, actor=ALICE)  # fmt: skip
    a_new_second()
    t.call("break-glass by someone not listed", "POST", "/flags/change-requests",
           patch({PROTECTED: False}, "now", break_glass=True), actor=BOB)  # fmt: skip
    a_new_second()
    t.call("break-glass by the listed principal", "POST", "/flags/change-requests",
           patch({PROTECTED: False}, "now", break_glass=True), actor=ON_CALL)  # fmt: skip
    t.call("the requests", "GET", "/flags/change-requests")

    # restore
    t.call("a restore of an existing item", "POST", "/flags/restore", {"reason": "nothing missing"}, actor=BOB)
    stage.delete_item("the flags item is deleted")
    restored = t.call("a restore", "POST", "/flags/restore", {"reason": "back"}, actor=BOB,
                      headers={"Idempotency-Key": "transcript-restore"})  # fmt: skip
    assert restored.status == 200, restored.body
    t.call("the restore's key again", "POST", "/flags/restore", {"reason": "back"}, actor=BOB,
           headers={"Idempotency-Key": "transcript-restore"})  # fmt: skip
    t.call("the history", "GET", "/flags/history?limit=100")

    # the seed again, on a table with live values
    stage.stop()
    stage.start("seed again: the runner starts on the existing table")


def expand(stage: Stage, declarations: Any) -> None:
    """A migration to FLAGS#V2 through a stage deployed for FLAGS#V1, and the writes it mirrors while it expands."""
    t = stage.transcript
    stage.start("seed: the runner creates the table and seeds the item")
    t.call("a patch before the migration", "PATCH", "/flags", patch({"signup_enabled": False}, "before"), actor=ALICE)
    body = {"declarations": new_declarations(declarations).document(), "mapping": GOOD, "reason": "to V2"}
    t.call("the migration", "POST", "/flags/migration", body, actor=ALICE)
    t.call("the migration again", "POST", "/flags/migration", body, actor=ALICE)
    t.call("the migration's state", "GET", "/flags/migration")
    t.call("a patch while it expands", "PATCH", "/flags", patch({"api_rate_limit_per_minute": 650}, "mirrored"),
           actor=ALICE)  # fmt: skip
    t.call("a patch of a flag V2 removed", "PATCH", "/flags", patch({"ai_search_enabled": True}, "gone"), actor=ALICE)
    t.call("a window starts while it expands", "POST", f"/_scheduler/{WINDOW}/start")
    t.call("the window ends", "POST", f"/_scheduler/{WINDOW}/end")
    a_new_second()
    scheduled = t.call("a scheduled change of a flag V2 removed", "POST", "/flags/schedules",
                       {"flags": {"ai_search_enabled": True}, "reason": "launch", "at": FAR}, actor=ALICE)  # fmt: skip
    if scheduled.status == 201:
        t.call("its delivery", "POST", f"/_scheduler/changes/{scheduled.body['id']}")
        t.call("the schedules", "GET", "/flags/schedules")
    t.call("revert while it expands", "POST", "/flags/revert", {"version": 1, "reason": "undo"}, actor=BOB)


def restore_while_expanding(stage: Stage, declarations: Any) -> None:
    """The V1 item deleted while the migration expands: the migration's steps, then a restore; deleted again, then
    restored with a key, twice."""
    t = stage.transcript
    expand(stage, declarations)
    stage.delete_item("the V1 item is deleted while it expands")
    t.call("a finalise with the V1 item missing", "POST", "/flags/migration/finalise", {"reason": "x"}, actor=ALICE)
    t.call("a rollback with the V1 item missing", "POST", "/flags/migration/rollback", {"reason": "x"}, actor=ALICE)
    t.call("the migration's state with the V1 item missing", "GET", "/flags/migration")
    t.call("a restore while it expands", "POST", "/flags/restore", {"reason": "back"}, actor=BOB)
    stage.delete_item("the V1 item is deleted again")
    keyed = {"Idempotency-Key": "transcript-expand-restore"}
    t.call("a keyed restore while it expands", "POST", "/flags/restore", {"reason": "back"}, actor=BOB, headers=keyed)
    t.call("the same key again", "POST", "/flags/restore", {"reason": "back"}, actor=BOB, headers=keyed)
    t.call("the migration's state", "GET", "/flags/migration")


def migration(stage: Stage, end: str, declarations: Any) -> None:
    """A migration that expands, then ends (``finalise`` or ``rollback``), and every writer after its end."""
    t = stage.transcript
    expand(stage, declarations)
    t.call(f"the migration's {end}", "POST", f"/flags/migration/{end}", {"reason": end}, actor=ALICE)
    t.call(f"the migration's {end} again", "POST", f"/flags/migration/{end}", {"reason": end}, actor=ALICE)
    t.call(f"the migration's state after its {end}", "GET", "/flags/migration")
    t.call(f"a patch after its {end}", "PATCH", "/flags", patch({"api_rate_limit_per_minute": 660}, "after"),
           actor=ALICE)  # fmt: skip
    t.call(f"a window starts after its {end}", "POST", f"/_scheduler/{WINDOW}/start")
    t.call(f"the window ends after its {end}", "POST", f"/_scheduler/{WINDOW}/end")
    a_new_second()
    t.call(f"a change request after its {end}", "POST", "/flags/change-requests",
           patch({PROTECTED: True}, "drill"), actor=ALICE)  # fmt: skip
    a_new_second()
    t.call(f"break-glass after its {end}", "POST", "/flags/change-requests",
           patch({PROTECTED: True}, "now", break_glass=True), actor=ON_CALL)  # fmt: skip
    t.call(f"a restore after its {end}", "POST", "/flags/restore", {"reason": "check"}, actor=BOB)
    t.call(f"the history after its {end}", "GET", "/flags/history?limit=100")
    stage.stop()
    stage.start(f"seed again after the {end}")


STORIES: dict[str, Callable[[Stage, Any], None]] = {
    "live": lambda stage, declarations: operator_writes(stage),
    "finalise": lambda stage, declarations: migration(stage, "finalise", declarations),
    "rollback": lambda stage, declarations: migration(stage, "rollback", declarations),
    "restore while expanding": restore_while_expanding,
}


@pytest.mark.parametrize("story", STORIES)
def test_the_write_path_replays_its_recorded_transcript(story: str, stages: Any, declarations: Any) -> None:
    # Given a stage on a fresh table for the story: live writes, a migration's two ends, a restore mid-migration
    stage = stages(story.replace(" ", "-"))
    recorded_file = RECORDED / f"{story.replace(' ', '-')}.json"
    # When every writer takes its steps
    STORIES[story](stage, declarations)
    replayed = dumps(stage.transcript.steps)
    if os.environ.get("RECORD_TRANSCRIPT") == "1":
        RECORDED.mkdir(exist_ok=True)
        recorded_file.write_text(replayed, encoding="utf-8")
    # Then every answer and every item written is the recorded one
    recorded = recorded_file.read_text(encoding="utf-8")
    assert replayed == recorded, difference(recorded, replayed)
