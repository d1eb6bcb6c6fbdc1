"""A dead DynamoDB endpoint costs a GET /flags at most ~2 s, and the answer is still 200 (DEFAULT or STALE).

These tests open sockets, all on 127.0.0.1 and all closed by the test: a port nobody listens on (connection
refused) and a server that accepts connections but never answers (read timeout). The function's real read
client is used, built with botocore's default endpoint resolution (``AWS_ENDPOINT_URL_DYNAMODB``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from local.functions import load_module
from singleton_flags.aws import dynamodb_client
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags.snapshot import Snapshot

pytestmark = pytest.mark.integration

BUDGET_SECONDS = 2.0


class SilentServer:
    """Accepts TCP connections on 127.0.0.1 and never sends a byte back."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self._held: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(connection)

    def close(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=2)
        self._listener.close()
        for connection in self._held:
            connection.close()


def closed_port() -> int:
    """A loopback port that was just free and is closed again: connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(params=["refused", "silent"])
def dead_endpoint(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``AWS_ENDPOINT_URL_DYNAMODB`` pointing at a dead local endpoint of either kind."""
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    server = SilentServer() if request.param == "silent" else None
    port = server.port if server else closed_port()
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", url)
    try:
        yield url
    finally:
        if server:
            server.close()


@pytest.fixture
def read_function(dead_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The read handler, its provider and reader rebuilt on a client made now (so it resolves the dead
    endpoint), with a short back-off so that one test can see several network attempts."""
    module = load_module("singleton_flags_service.handlers.read_api")

    provider = SingletonProvider(
        client=dynamodb_client(), table_name=module.SETTINGS.table_name, declarations=module.DECLARATIONS
    )
    reader = FlagReader(provider, module.DECLARATIONS, max_stale=60, backoff_base=0.05, backoff_max=0.1)
    monkeypatch.setattr(module, "PROVIDER", provider)
    monkeypatch.setattr(module, "READER", reader)
    return module


def timed_get(module: Any, make_event: Any, lambda_context: Any) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    response = module.handler(make_event("GET", "/flags"), lambda_context)
    return response, time.perf_counter() - started


def test_the_client_really_goes_to_the_dead_endpoint(read_function: Any, dead_endpoint: str) -> None:
    assert read_function.PROVIDER._client.meta.endpoint_url == dead_endpoint


def test_a_cold_environment_answers_200_with_fallbacks_within_the_budget(
    read_function: Any, make_event: Any, lambda_context: Any
) -> None:
    # Given a cold environment and a dead endpoint
    # When GET /flags arrives, then again after each back-off window (each of those goes to the network)
    for _ in range(3):
        response, elapsed = timed_get(read_function, make_event, lambda_context)
        # Then 200 with the fallbacks, never a 5xx, and within ~2 s
        assert response["statusCode"] == 200
        body = json.loads(response["body"])
        assert (body["reason"], body["version"]) == ("DEFAULT", None)
        assert body["flags"] == read_function.DECLARATIONS.fallbacks()
        assert elapsed < BUDGET_SECONDS, f"a dead endpoint held the request {elapsed:.2f} s"
        time.sleep(0.12)  # past the back-off: the next request tries DynamoDB again
    assert read_function.PROVIDER.fetches == 3


def test_a_warm_environment_answers_200_with_the_last_good_value_within_the_budget(
    read_function: Any, make_event: Any, lambda_context: Any
) -> None:
    # Given a warm environment holding version 5 (as after a write), whose cache has just expired
    declarations = read_function.DECLARATIONS
    good = Snapshot(
        found=True, values={**declarations.initials(), "signup_enabled": False}, version=5, fetched_at=time.time()
    )
    read_function.READER.prime(good)
    read_function.PROVIDER.clear_cache()
    # When GET /flags arrives and DynamoDB is dead
    response, elapsed = timed_get(read_function, make_event, lambda_context)
    # Then 200 with the last good value as STALE, within ~2 s
    assert response["statusCode"] == 200
    body = json.loads(response["body"])
    assert (body["reason"], body["version"], body["flags"]["signup_enabled"]) == ("STALE", 5, False)
    assert elapsed < BUDGET_SECONDS, f"a dead endpoint held the request {elapsed:.2f} s"


def test_the_request_after_a_failed_call_does_not_wait_again(
    read_function: Any, make_event: Any, lambda_context: Any, request: pytest.FixtureRequest, monkeypatch: Any
) -> None:
    # Given the production back-off (1 s base, jitter) and a first request that failed on the dead endpoint
    reader = FlagReader(read_function.PROVIDER, read_function.DECLARATIONS, max_stale=60)
    monkeypatch.setattr(read_function, "READER", reader)
    timed_get(read_function, make_event, lambda_context)
    # When the next request arrives right after it
    response, elapsed = timed_get(read_function, make_event, lambda_context)
    # Then it is answered from the degraded path without touching the network
    assert response["statusCode"] == 200
    assert read_function.PROVIDER.fetches == 1
    assert elapsed < 0.05, f"the request after a failure waited {elapsed:.2f} s"
