"""Exactly once on AWS's own engine: DynamoDB Local behind a proxy that holds back its answers.

The proxy forwards every byte at once but delays the answer to a TransactWriteItems past the client's read
timeout, so the transaction commits and the writer hears nothing: the situation where a plain retry would
apply a change twice, or a new request would be refused by its own first attempt. DynamoDB Local answers a
resent transaction with the same ClientRequestToken with success and applies nothing again.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import boto3
import pytest
from botocore.config import Config

from singleton_flags.declarations import Declarations
from singleton_flags_service.writes.store import FlagStore
from singleton_flags_service.writes.transaction import MAX_RESENDS
from tests.support.tables import read_singleton, read_trail

TRANSACT_TARGET = b"DynamoDB_20120810.TransactWriteItems"
READ_TIMEOUT = 0.4
HOLD = 1.0  # > READ_TIMEOUT: the answer arrives after the client gave up


class SlowAnswers:
    """A loopback TCP proxy to DynamoDB Local that holds back the answers to the next ``hold`` transactions."""

    def __init__(self, upstream: str) -> None:
        parsed = urlparse(upstream)
        self._upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self.hold = 0
        self.held = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> SlowAnswers:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._server.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                continue
            upstream = socket.create_connection(self._upstream, timeout=5)
            held = threading.Event()
            threading.Thread(target=self._requests, args=(client, upstream, held), daemon=True).start()
            threading.Thread(target=self._answers, args=(upstream, client, held), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket, held: threading.Event) -> None:
        with client, upstream:
            while (chunk := _recv(client)) is not None:
                if TRANSACT_TARGET in chunk:
                    with self._lock:
                        if self.hold > 0:
                            self.hold -= 1
                            self.held += 1
                            held.set()
                try:
                    upstream.sendall(chunk)
                except OSError:
                    return

    def _answers(self, upstream: socket.socket, client: socket.socket, held: threading.Event) -> None:
        while (chunk := _recv(upstream)) is not None:
            if held.is_set():
                time.sleep(HOLD)
                held.clear()
            try:
                client.sendall(chunk)
            except OSError:
                return


def _recv(sock: socket.socket) -> bytes | None:
    deadline = time.monotonic() + 10  # every connection ends by itself
    while time.monotonic() < deadline:
        try:
            sock.settimeout(0.5)
            chunk = sock.recv(65536)
            return chunk or None
        except TimeoutError:
            continue
        except OSError:
            return None
    return None


@pytest.fixture
def slow(local_endpoint: str) -> Iterator[SlowAnswers]:
    with SlowAnswers(local_endpoint) as proxy:
        yield proxy


def writer(proxy: SlowAnswers, table: str, declarations: Declarations) -> FlagStore:
    """A store whose client gives up on an answer after 0.4 s and leaves every resend to the store."""
    client = boto3.client(
        "dynamodb",
        endpoint_url=proxy.url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(connect_timeout=1, read_timeout=READ_TIMEOUT, retries={"total_max_attempts": 1}),
    )
    return FlagStore(client, table, declarations, call_seconds=READ_TIMEOUT + 1, sleep=lambda _: None)


def test_a_commit_whose_answer_is_lost_is_applied_once_and_answered_as_committed(
    slow: SlowAnswers, ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given DynamoDB Local committing the next transaction but its answer arriving after the client gave up
    store = writer(slow, flags_table, declarations)
    slow.hold = 1
    # When a change is written
    result = store.change({"signup_enabled": False}, actor="it", reason="lost answer", time_budget=20)
    # Then the caller hears it committed, and it is in the item and the trail exactly once
    assert slow.held == 1
    assert (result.applied, result.snapshot.version) == (True, 1)
    trail = read_trail(ddb_local, flags_table)
    assert [int(record["version"]["N"]) for record in trail] == [1]
    assert read_singleton(ddb_local, flags_table)["signup_enabled"] == {"BOOL": False}


def test_when_every_answer_is_lost_the_record_tells_the_writer_it_committed(
    slow: SlowAnswers, ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given every answer to the transaction held back (the first send committed it)
    store = writer(slow, flags_table, declarations)
    slow.hold = 1 + MAX_RESENDS
    # When a change is written / Then its own token in version 1's record says it committed: applied, once
    result = store.change({"api_rate_limit_per_minute": 1234}, actor="it", reason="all answers lost", time_budget=20)
    assert slow.held == 1 + MAX_RESENDS
    assert (result.applied, result.snapshot.version) == (True, 1)
    assert [int(record["version"]["N"]) for record in read_trail(ddb_local, flags_table)] == [1]
    assert read_singleton(ddb_local, flags_table)["schema_version"] == {"N": "1"}
