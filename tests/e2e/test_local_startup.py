"""How the local runner starts and stops: one clear line and a non-zero exit when it cannot; exit 0 on Ctrl-C."""

from __future__ import annotations

import signal
import socket
import subprocess
import time

from local.dynamodb_local import free_port
from tests.support.runner import REPO_ROOT, run_module, runner_env, start_runner

FAILURE_TIMEOUT_SECONDS = 30


def run_failing(env: dict[str, str], cwd=REPO_ROOT) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    finished = run_module("local", env=env, cwd=cwd, timeout=FAILURE_TIMEOUT_SECONDS)
    return finished, time.monotonic() - started


def assert_one_line(finished: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert finished.returncode != 0
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1, finished.stderr
    assert "Traceback" not in finished.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_a_port_in_use_is_one_line_and_a_non_zero_exit():
    # Given: something listens on the port
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        # When
        finished, _ = run_failing(runner_env(port))
    # Then
    assert_one_line(finished, f"port {port}", "already in use")


def test_an_unreachable_dynamodb_endpoint_is_one_line_and_a_non_zero_exit_within_seconds():
    # Given: a loopback port nobody listens on
    closed = free_port()
    # When
    finished, seconds = run_failing(runner_env(free_port(), AWS_ENDPOINT_URL_DYNAMODB=f"http://127.0.0.1:{closed}"))
    # Then
    assert_one_line(finished, "cannot reach DynamoDB", f"127.0.0.1:{closed}")
    assert seconds < 15


def test_a_broken_cdk_json_is_one_line_naming_the_key(tmp_path):
    # Given: a cdk.json whose context lacks required keys, in the directory the runner starts from
    (tmp_path / "cdk.json").write_text('{"context": {"singleton-flags": {"stage": "prod"}}}')
    # When
    finished, _ = run_failing(runner_env(free_port()), cwd=tmp_path)
    # Then
    assert_one_line(finished, "cdk.json", "singleton-flags.")


def test_ctrl_c_stops_the_runner_cleanly(tmp_path):
    # Given
    runner = start_runner(tmp_path / "runner.log")
    assert runner.get("/flags").status == 200
    # When
    code = runner.stop(signal.SIGINT)
    # Then
    assert code == 0, runner.output()
    assert "local runner stopped" in runner.output()
    assert "Traceback" not in runner.output()
