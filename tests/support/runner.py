"""Helpers of the e2e tier (fixtures live in conftest.py; tests import these by name).

The runner is ``python -m local`` as a subprocess on a free port. Its output goes to a file (a pipe nobody
reads would fill up and block it); a test that fails shows it. The cache age is 1 s here (cdk.json says 5)
so that a write is seen by the read function quickly; tests poll for it (``eventually``) as a client would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from local.dynamodb_local import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 15.0


def runner_env(port: int, **overrides: str | None) -> dict[str, str]:
    """A clean environment: fake credentials, no endpoint unless given, the test's port and cache age."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "POWERTOOLS_", "FLAGS_")) and key not in ("TABLE_NAME", "PORT")
    }
    env.update(
        {
            "PORT": str(port),
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": "us-east-1",
            "POWERTOOLS_PARAMETERS_MAX_AGE": "1",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
    )
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@dataclass
class Answer:
    status: int
    headers: Mapping[str, str]
    body: Any  # parsed JSON (text for another content type), None when empty

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers.items() if key.lower() == name.lower()), None)


def call(
    method: str, url: str, body: Any = None, headers: Mapping[str, str] | None = None, timeout: float = 10
) -> Answer:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))  # noqa: S310 - our own http:// URLs
    if data is not None and not request.has_header("Content-type"):
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - see the Request
            status, answer_headers, raw = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        status, answer_headers, raw = error.code, dict(error.headers), error.read()
    is_json = "json" in answer_headers.get("Content-Type", "")
    return Answer(status, answer_headers, (json.loads(raw) if is_json else raw.decode()) if raw else None)


@dataclass
class Runner:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> Answer:
        return call("GET", self.url + path, headers=headers)

    def send(self, method: str, path: str, body: Any = None, headers: Mapping[str, str] | None = None) -> Answer:
        return call(method, self.url + path, body, headers)

    def stop(self, sig: int = signal.SIGINT) -> int:
        """Stop the runner as Ctrl-C does: the signal goes to its whole process group (``make run``'s too)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def run_module(
    module: str, *args: str, env: Mapping[str, str] | None = None, cwd: Path = REPO_ROOT, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` to completion, output captured (the repository on PYTHONPATH)."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env={**(env if env is not None else runner_env(0)), "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


RUNNER_COMMAND = (sys.executable, "-m", "local")
# The runner, its declarations read from the file its first argument names instead of the service's own.
WITH_DECLARATIONS = (
    "import sys; from pathlib import Path; from singleton_flags_service import contract; "
    "contract.load_service_declarations.__defaults__ = (Path(sys.argv[1]),); "
    "from local.runner import main; sys.exit(main())"
)


def protected_declarations(directory: Path, flag: str, protection: Mapping[str, Any]) -> Path:
    """The service's declarations with ``flag`` protected as ``protection`` says, in a file under ``directory``
    for the runner (``declarations_command``)."""
    from singleton_flags_service.contract import DECLARATIONS_FILE

    document = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
    for declared in document["flags"]:
        if declared["name"] == flag:
            declared["protection"] = dict(protection)
    path = directory / "declarations.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def declarations_command(declarations: Path) -> tuple[str, ...]:
    """The command that starts the runner with the declarations file ``declarations``."""
    return (sys.executable, "-c", WITH_DECLARATIONS, str(declarations))


MAKE_RUN = ("make", "--no-print-directory", "run")  # what the README tells a user to type


def ctrl_c_stops_it() -> None:
    """In a child, before it runs: SIGINT back to its default, so that Python turns it into KeyboardInterrupt as a
    terminal's Ctrl-C would. A process started with SIGINT ignored (a background job of a shell without job
    control, as CI runners start them) passes that on, and Python then leaves it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def launch(
    log: Path, env: Mapping[str, str], cwd: Path = REPO_ROOT, command: Sequence[str] = RUNNER_COMMAND
) -> subprocess.Popen[bytes]:
    """The runner in its own process group (a terminal's Ctrl-C reaches every process of it)."""
    with log.open("wb") as sink:
        return subprocess.Popen(
            list(command),
            cwd=cwd,
            env={**env, "PYTHONPATH": str(REPO_ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=ctrl_c_stops_it,  # noqa: PLW1509 - a signal disposition only, before exec
        )


def start_runner(log: Path, command: Sequence[str] = RUNNER_COMMAND, **overrides: str | None) -> Runner:
    """Start the runner on a free port and return once it answers; fail with its output otherwise."""
    runner = launch_runner(log, command, **overrides)
    if not serving(runner):
        pytest.fail(f"the local runner exited with {runner.process.returncode}:\n{runner.output()}", pytrace=False)
    return runner


def launch_runner(log: Path, command: Sequence[str] = RUNNER_COMMAND, **overrides: str | None) -> Runner:
    """The runner started on a free port, not yet waited for (``serving``)."""
    port = free_port()
    process = launch(log, runner_env(port, **overrides), command=command)
    return Runner(process, f"http://127.0.0.1:{port}", log)


def serving(runner: Runner) -> bool:
    """True once the runner answers, False if it exited first; fails with its output if it does neither in time."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if runner.process.poll() is not None:
            return False
        try:
            if runner.get("/openapi.json").status == 200:
                return True
        except OSError:
            time.sleep(0.1)
    runner.stop()
    pytest.fail(f"the local runner did not answer within {STARTUP_TIMEOUT_SECONDS:.0f} s:\n{runner.output()}")


@contextmanager
def running(log: Path, **overrides: str | None) -> Iterator[Runner]:
    """A started runner (``start_runner``), stopped on the way out."""
    started = start_runner(log, **overrides)
    try:
        yield started
    finally:
        started.stop()


@contextmanager
def flagctl_console(args: Sequence[str], env: Mapping[str, str]) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``python -m flagctl ARGS`` (a console) started, with the first line it printed (its URL); stopped as
    Ctrl-C stops it on the way out. Its request log (stderr) goes to a file: a pipe nobody reads fills up, and the
    process would then block on its next log line, or on its last flush at exit."""
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "flagctl", *args],
            cwd=REPO_ROOT,
            env={**env, "PYTHONPATH": str(REPO_ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            preexec_fn=ctrl_c_stops_it,  # noqa: PLW1509 - a signal disposition only, before exec
        )
        try:
            assert process.stdout is not None
            yield process, process.stdout.readline()
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=STOP_TIMEOUT_SECONDS)


def eventually(probe: Callable[[], Any], accept: Callable[[Any], bool], timeout: float = 5.0) -> Any:
    """Poll ``probe`` until ``accept`` says yes (the read function's cache is 1 s old at most)."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if accept(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.2)
