"""Start AWS's DynamoDB Local (in memory, on a free port) for tests, benches and the local runner; always stop it.

    with running_dynamodb_local() as endpoint:          # "http://127.0.0.1:<port>"
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
        create_table(client, "flags")

The jar is AWS's own, shipped in the npm package ``amplify-dynamodb-simulator`` (``npm ci`` installs it
under ``node_modules/amplify-dynamodb-simulator/emulator``; ``DYNAMODB_LOCAL_DIR`` points elsewhere), run
with the machine's Java 17 (``java`` on PATH, else ``$JAVA_HOME/bin/java``).

Network: DynamoDB Local has no bind-address option (``-help`` of 1.25.1 lists only -port, -inMemory,
-dbPath, -sharedDb, -cors, -delayTransientStatuses, -disableTelemetry, -optimizeDbBeforeStartup; its
Jetty server is built from a port alone), so it LISTENS ON ALL INTERFACES. We pick a port that is free
on 127.0.0.1, talk to it only through 127.0.0.1, keep it in memory with throwaway data, and stop it as
soon as the block ends. On a shared or exposed host, firewall the port range if that matters.

Lifetime: the JVM runs in its own session (Ctrl-C in a terminal reaches us, not it, so teardown happens in
order), is stopped on leaving the block (SIGTERM to its process group, then SIGKILL), again at interpreter
exit (atexit) as a backstop, and on Linux receives SIGKILL if the process that started it dies
(``PR_SET_PDEATHSIG``; armed only when started from the main thread, since the signal follows the
starting *thread*).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
EMULATOR_DIR = REPO_ROOT / "node_modules" / "amplify-dynamodb-simulator" / "emulator"
JAR_NAME = "DynamoDBLocal.jar"
LOOPBACK = "127.0.0.1"
REGION = "us-east-1"
STARTUP_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 5.0
# DynamoDB Local keeps a database per access key + region unless -sharedDb: with it, every client sees the
# same tables whatever fake credentials it carries.
JAVA_OPTIONS = ("-inMemory", "-sharedDb", "-disableTelemetry")
# Its start-up banner ends with this line, printed just before Jetty binds the port; a failed bind follows.
BANNER_END = "CorsParams:"
BIND_FAILED = "Failed to bind"
_PR_SET_PDEATHSIG = 1


class DynamoDBLocalUnavailable(RuntimeError):
    """The jar or Java is missing: DynamoDB Local cannot be started on this machine."""


class DynamoDBLocalFailed(RuntimeError):
    """DynamoDB Local was found but did not start answering in time (its output is in the message)."""


class PortTaken(DynamoDBLocalFailed):
    """Another process bound the port between our probe and the JVM's bind (the JVM stays up: it is stopped)."""


def emulator_dir() -> Path:
    override = os.environ.get("DYNAMODB_LOCAL_DIR")
    return Path(override) if override else EMULATOR_DIR


def find_jar(directory: Path | None = None) -> Path:
    jar = (directory or emulator_dir()) / JAR_NAME
    if not jar.is_file():
        raise DynamoDBLocalUnavailable(
            f"{jar} not found: run `npm ci` (it installs amplify-dynamodb-simulator with AWS's DynamoDBLocal.jar)"
        )
    return jar


def find_java() -> str:
    java = shutil.which("java")
    if java is None and os.environ.get("JAVA_HOME"):
        candidate = Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        java = str(candidate) if candidate.is_file() else None
    if java is None:
        raise DynamoDBLocalUnavailable("java not found (PATH, JAVA_HOME): DynamoDB Local needs Java 17")
    return java


def free_port(host: str = LOOPBACK) -> int:
    """A port the kernel says is free on ``host`` right now (another process may still take it: we retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def local_client(endpoint: str, *, region: str = REGION, timeout: float = 5.0, attempts: int = 3) -> Any:
    """A low-level DynamoDB client for DynamoDB Local (fake credentials: Local accepts any)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - DynamoDB Local accepts any credentials
        config=Config(
            connect_timeout=timeout,
            read_timeout=timeout,
            retries={"total_max_attempts": attempts, "mode": "standard"},
            max_pool_connections=50,
        ),
    )


def create_table(client: Any, name: str) -> None:
    """Create the flags table as the stack does (``singleton_flags_infra.table.table_definition``) and enable its TTL.

    Point-in-time recovery and deletion protection are deployment safeguards with no effect on behaviour
    here, so they are left out.
    """
    from singleton_flags_infra.table import table_definition

    definition = table_definition()
    client.create_table(**definition.create_table_params(name))
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    client.update_time_to_live(TableName=name, TimeToLiveSpecification=definition.time_to_live_specification())


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


@dataclass
class DynamoDBLocal:
    """A running DynamoDB Local process. ``stop()`` is idempotent and safe from atexit."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    _stopped: bool = field(default=False, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def output(self, limit: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        try:
            for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_SECONDS), (signal.SIGKILL, STOP_TIMEOUT_SECONDS)):
                if self.process.poll() is not None:
                    break
                try:
                    os.killpg(self.process.pid, sig)  # its own session: the JVM and anything it spawned
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    continue
        finally:
            with suppress(OSError):
                self.log_path.unlink()


def _answers(probe: Any) -> bool:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        probe.list_tables(Limit=1)
        return True
    except (BotoCoreError, ClientError):
        return False


def start(*, startup_timeout: float = STARTUP_TIMEOUT_SECONDS, port: int | None = None) -> DynamoDBLocal:
    """Launch DynamoDB Local and return once ListTables answers; raise (after stopping it) otherwise."""
    jar, java = find_jar(), find_java()
    port = port or free_port()
    log = tempfile.NamedTemporaryFile(prefix="dynamodb-local-", suffix=".log", delete=False)  # noqa: SIM115
    command = [java, f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}", "-jar", str(jar), "-port", str(port)]
    command += JAVA_OPTIONS
    on_main_thread = threading.current_thread() is threading.main_thread()
    process = subprocess.Popen(
        command,
        cwd=jar.parent,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform == "linux" and on_main_thread else None,  # noqa: PLW1509
    )
    log.close()
    server = DynamoDBLocal(process=process, port=port, log_path=Path(log.name))
    atexit.register(server.stop)
    deadline = time.monotonic() + startup_timeout
    try:
        probe = local_client(server.endpoint, timeout=0.5, attempts=1)
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise DynamoDBLocalFailed(
                    f"DynamoDB Local exited with {process.returncode} before answering:\n{server.output()}"
                )
            log_text = server.output(limit=100_000)
            if BIND_FAILED in log_text:
                raise PortTaken(f"port {port} was taken before DynamoDB Local could bind it")
            # The banner first: an answer before it would come from whoever else holds the port.
            if BANNER_END in log_text and _answers(probe) and BIND_FAILED not in server.output(limit=100_000):
                return server
            time.sleep(0.1)
        raise DynamoDBLocalFailed(
            f"DynamoDB Local did not answer on {server.endpoint} within {startup_timeout:.0f} s:\n{server.output()}"
        )
    except BaseException:
        server.stop()
        raise


@contextmanager
def running_dynamodb_local(
    *, startup_timeout: float = STARTUP_TIMEOUT_SECONDS, port_attempts: int = 3
) -> Iterator[str]:
    """Yield the endpoint URL of a fresh in-memory DynamoDB Local; stop it when the block ends, however.

    A port that another process grabbed between our probe and the JVM's bind is retried on another port,
    ``port_attempts`` times.
    """
    for attempt in range(1, port_attempts + 1):
        try:
            server = start(startup_timeout=startup_timeout)
            break
        except PortTaken:
            if attempt == port_attempts:
                raise
    try:
        yield server.endpoint
    finally:
        server.stop()
