"""The documentation's examples run as written.

Every ```console block of the pages below is a transcript: a line starting with ``$ `` is a command (run with
bash from the repository root, ``http://127.0.0.1:3000`` replaced by the runner's URL), the lines after it, up
to the next command or the end of the block, are what it prints (stdout and stderr). Each page runs top to
bottom against a fresh local runner with the cache age of cdk.json (``make run``'s), so a reader who pastes a
page's blocks in order into a new ``make run`` sees what the page shows. Only values that differ from run to
run are ignored, each by one of the patterns in ``RUN_DEPENDENT``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from singleton_flags_service.contract import DECLARATIONS_FILE
from tests.support.doc_examples import examples
from tests.support.runner import REPO_ROOT, Runner, runner_env, start_runner

PAGES = ("docs/api.md", "docs/local-runner.md", "docs/flagctl.md", "docs/change-workflows.md", "docs/lifecycle.md")
DOCUMENTED_URL = "http://127.0.0.1:3000"
COMMAND_TIMEOUT_SECONDS = 60

# (pattern, placeholder): what changes between two runs of the same transcript, and nothing else.
RUN_DEPENDENT: tuple[tuple[re.Pattern[str], str], ...] = (
    # ISO 8601 times: fetched_at, at, scheduled_time, deadline (2026-12-01T09:46:08.922+00:00, ...Z)
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?"), "<time>"),
    # HTTP dates: the Date header (Tue, 01 Dec 2026 09:46:08 GMT)
    (re.compile(r"\b[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\b"), "<http-date>"),
    # UUIDs: request ids (x-amzn-RequestId), idempotency keys flagctl makes up
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    # durations (12 ms, 0.8 s)
    (re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|s)\b"), "<duration>"),
    # the runner's port (the pages say 3000, the tests use a free one)
    (re.compile(r"\b127\.0\.0\.1:\d+\b"), "127.0.0.1:<port>"),
)


@dataclass(frozen=True)
class Command:
    page: str
    line: int  # 1-based line of the ``$ `` line in the page
    command: str
    expected: tuple[str, ...]


def console_commands(page: str) -> list[Command]:
    """Every command of every ```console block of ``page``, in page order, with its expected output."""
    commands: list[Command] = []
    in_block = False
    current: tuple[int, str, list[str]] | None = None
    for number, line in enumerate((REPO_ROOT / page).read_text().splitlines(), start=1):
        if not in_block:
            in_block = line.strip() == "```console"
            continue
        if line.startswith(("```", "$ ")):
            if current is not None:
                commands.append(Command(page, current[0], current[1], tuple(current[2])))
                current = None
            if line.startswith("```"):
                in_block = False
            else:
                current = (number, line[2:], [])
        elif current is None:
            pytest.fail(f"{page}:{number}: a console block must start with a '$ ' command, not {line!r}")
        else:
            current[2].append(line)
    return commands


def normalized(lines: list[str] | tuple[str, ...]) -> list[str]:
    out = []
    for line in lines:
        text = line
        for pattern, placeholder in RUN_DEPENDENT:
            text = pattern.sub(placeholder, text)
        out.append(text.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


def run(command: Command, runner: Runner) -> list[str]:
    completed = subprocess.run(
        ["bash", "-c", command.command.replace(DOCUMENTED_URL, runner.url)],  # noqa: S607 - the docs' shell, from PATH
        cwd=REPO_ROOT,
        env=runner_env(0),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )
    return completed.stdout.decode(errors="replace").replace("\r\n", "\n").split("\n")


def difference(command: Command, actual: list[str]) -> str | None:
    expected, got = normalized(command.expected), normalized(actual)
    if expected == got:
        return None
    diff = difflib.unified_diff(
        expected, got, f"{command.page}:{command.line} (as documented)", "as run", lineterm="", n=2
    )
    return f"$ {command.command}\n" + "\n".join(diff)


@pytest.mark.parametrize("page", PAGES)
def test_every_console_example_of_the_page_prints_what_the_page_shows(page: str, tmp_path: Path) -> None:
    commands = console_commands(page)
    assert commands, f"{page} has no console example"
    runner = start_runner(tmp_path / "runner.log", POWERTOOLS_PARAMETERS_MAX_AGE=None)
    try:
        differences = [found for command in commands if (found := difference(command, run(command, runner)))]
    finally:
        runner.stop()
    assert not differences, (
        f"{len(differences)} of {len(commands)} commands of {page} print something else than the page shows "
        f"(run-dependent values normalized):\n\n" + "\n\n".join(differences)
    )


def test_run_dependent_values_are_the_only_thing_ignored() -> None:
    documented = '"version":1,"fetched_at":"2026-12-01T09:46:08.922+00:00" id 006de9bd-9619-4360-9465-3eb925aff9d8'
    another_run = '"version":1,"fetched_at":"2026-12-02T10:00:00.001+00:00" id 7522deaa-f99b-4172-8090-2c43383d028c'
    assert normalized([documented]) == normalized([another_run])
    assert normalized([documented]) != normalized([documented.replace('"version":1', '"version":2')])
    assert normalized(['ETag: "1"', "CACHED"]) != normalized(['ETag: "2"', "STATIC"])


def clean_environment(home: Path) -> dict[str, str]:
    """A new user's shell: PATH and HOME only (no AWS_*, no SINGLETON_FLAGS_*, no AWS config files)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}


def test_the_pytest_example_runs_as_written_in_a_clean_environment(tmp_path: Path) -> None:
    # Given an application's folder as reading-flags.md lays it out: its declarations, my_function.py (the client
    # example, creating its client at module scope) and a test file holding the pytest example
    code = examples()
    shutil.copy(DECLARATIONS_FILE, tmp_path / "flags.json")
    (tmp_path / "my_function.py").write_text(code["client"])
    (tmp_path / "test_my_function.py").write_text(code["pytest"])
    home = tmp_path / "home"
    home.mkdir()
    # When pytest runs it in an environment without any AWS or SINGLETON_FLAGS variable
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_function.py"],
        cwd=tmp_path,
        env=clean_environment(home),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )
    # Then the test passes with the documented fixture alone
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "1 passed" in completed.stdout


def test_the_consumer_examples_own_tests_pass_in_a_clean_environment(tmp_path: Path) -> None:
    # Given the consumer example's tests, whose handler creates its client at import (Flags.from_env(os.environ))
    home = tmp_path / "home"
    home.mkdir()
    # When pytest runs them from the example's folder without any AWS or SINGLETON_FLAGS variable
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=REPO_ROOT / "examples" / "consumer",
        env=clean_environment(home),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )
    # Then they pass, with the documented fixture alone
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "4 passed" in completed.stdout


HANDLER_LOOP = """
import json, sys, time
import my_function
from my_function import FLAGS
for line in sys.stdin:  # one read per line the test sends
    details = FLAGS.details("signup_enabled")
    print(json.dumps({"answer": my_function.handler({}, None), "signup": details.value, "reason": details.reason,
                      "version": details.version}), flush=True)
"""


def banner_environment(output: str) -> dict[str, str]:
    """The variables the runner's banner prints for a handler (the line after "Your handler reads ...")."""
    lines = output.splitlines()
    index = next(number for number, line in enumerate(lines) if line.strip().startswith("Your handler reads"))
    return dict(pair.split("=", 1) for pair in lines[index + 1].split())


def test_a_handler_in_another_process_reads_the_runners_flags_and_sees_a_change(tmp_path: Path) -> None:
    # Given `make run`'s runner (embedded moto) and an application's folder: the client example and its flags.json
    runner = start_runner(tmp_path / "runner.log")
    try:
        shutil.copy(DECLARATIONS_FILE, tmp_path / "flags.json")
        (tmp_path / "my_function.py").write_text(examples()["client"])
        home = tmp_path / "home"
        home.mkdir()
        env = {**clean_environment(home), **banner_environment(runner.output()), "SINGLETON_FLAGS_MAX_AGE": "1"}
        assert env["AWS_ACCESS_KEY_ID"] == "local"  # the runner's fake credentials, never the operator's
        # When the handler runs with the banner's environment alone
        handler = subprocess.Popen(
            [sys.executable, "-c", HANDLER_LOOP],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert handler.stdin is not None and handler.stdout is not None

        def read() -> dict[str, Any]:
            handler.stdin.write("\n")  # type: ignore[union-attr]
            handler.stdin.flush()  # type: ignore[union-attr]
            line = handler.stdout.readline()  # type: ignore[union-attr]
            assert line, handler.stderr.read() if handler.stderr else ""
            return dict(json.loads(line))

        try:
            first = read()
            # Then it reads the runner's seeded values from the table (STATIC), as the client example answers
            assert first["answer"] == {"statusCode": 200, "body": "limit 600, signup True (CACHED)"}
            # When a change is made through the runner's API
            changed = runner.send("PATCH", "/flags", {"flags": {"signup_enabled": False}, "reason": "local recipe"})
            assert changed.status == 200, changed.body
            time.sleep(1.5)  # the handler's cache age, 1 s
            # Then the handler sees it after its cache age, at the new version
            second = read()
            assert (second["signup"], second["version"]) == (False, changed.body["version"])
            assert second["answer"]["body"] == "limit 600, signup False (CACHED)"
        finally:
            handler.stdin.close()
            handler.wait(timeout=COMMAND_TIMEOUT_SECONDS)
    finally:
        runner.stop()


def test_the_runner_answers_only_the_read_grant_to_other_processes(tmp_path: Path) -> None:
    # Given a running runner
    runner = start_runner(tmp_path / "runner.log")
    try:
        # When a process asks its DynamoDB endpoint for something the read grant does not allow (a Scan)
        answer = runner.send(
            "POST",
            "/_dynamodb",
            {"TableName": "singleton-flags-local"},
            {"X-Amz-Target": "DynamoDB_20120810.Scan", "Content-Type": "application/x-amz-json-1.0"},
        )
        # Then DynamoDB's AccessDeniedException, as IAM would refuse it; nothing is read
        assert answer.status == 400
        assert "AccessDeniedException" in str(answer.body)
        # And so is a GetItem outside the flags' partition (the audit trail's)
        audit = runner.send(
            "POST",
            "/_dynamodb",
            {"TableName": "singleton-flags-local", "Key": {"PK": {"S": "AUDIT#APP"}, "SK": {"S": "V#00000000000"}}},
            {"X-Amz-Target": "DynamoDB_20120810.GetItem", "Content-Type": "application/x-amz-json-1.0"},
        )
        assert (audit.status, "AccessDeniedException" in str(audit.body)) == (400, True)
        # And another Host is refused, as on every route
        refused = runner.send("POST", "/_dynamodb", {}, {"Host": "attacker.example:80"})
        assert refused.status == 421
    finally:
        runner.stop()
