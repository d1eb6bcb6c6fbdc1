"""A reader that cannot read its table says why, in words, once per cause per execution environment; what it
serves never depends on why: the declared fallbacks (maintenance ON, features off) with reason DEFAULT, through
the client, the OpenFeature provider (never NOT_READY or FATAL) and OFREP (the read function)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
)
from openfeature import api
from openfeature.provider import ProviderStatus

from singleton_flags import Flags, FlagsConfigError
from singleton_flags.declarations import Declarations
from singleton_flags.emf import EmfPrinter, ReadCounter
from singleton_flags.openfeature import register
from singleton_flags.reader import FlagReader
from singleton_flags.vocabulary import NEVER_READ_FAILURES, ReadCause
from singleton_flags_service.vocabulary import DEFAULT, STALE
from tests.support.unit import Clock, ReadApi, body_of, expire


def _client_error(code: str) -> Callable[[], BaseException]:
    return lambda: ClientError({"Error": {"Code": code, "Message": "injected"}}, "GetItem")


# (the error a GetItem raises, the cause, words its log message must hold)
CAUSES: dict[str, tuple[Callable[[], BaseException], ReadCause, str]] = {
    "table-not-found": (_client_error("ResourceNotFoundException"), ReadCause.TABLE_NOT_FOUND, "table was not found"),
    "access-denied": (_client_error("AccessDeniedException"), ReadCause.ACCESS_DENIED, "access denied"),
    "bad-credentials": (
        _client_error("UnrecognizedClientException"),
        ReadCause.INVALID_CREDENTIALS,
        "credentials were refused",
    ),
    "no-credentials": (NoCredentialsError, ReadCause.NO_CREDENTIALS, "no AWS credentials"),
    "no-region": (NoRegionError, ReadCause.NO_REGION, "no AWS region"),
    "unreachable": (
        lambda: EndpointConnectionError(endpoint_url="http://127.0.0.1:9"),
        ReadCause.UNREACHABLE,
        "cannot be reached",
    ),
    "timed-out": (lambda: ConnectTimeoutError(endpoint_url="http://10.0.0.1"), ReadCause.UNREACHABLE, "timed out"),
    "throttled": (_client_error("ProvisionedThroughputExceededException"), ReadCause.THROTTLED, "throttled"),
    "misconfigured": (
        lambda: FlagsConfigError("SINGLETON_FLAGS_TABLE is required"),
        ReadCause.MISCONFIGURED,
        "SINGLETON_FLAGS_TABLE is required",
    ),
}


class Failing:
    """A DynamoDB client whose every GetItem raises what ``error`` makes (None: answers from ``real``)."""

    def __init__(self, error: Callable[[], BaseException] | None, real: Any = None) -> None:
        self.error, self.real = error, real

    def get_item(self, **params: Any) -> dict[str, Any]:
        if self.error is None:
            return self.real.get_item(**params)  # type: ignore[no-any-return]
        raise self.error()


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.levelno >= logging.WARNING and "cannot read" in record.msg]


@pytest.fixture(params=list(CAUSES))
def cause(request: pytest.FixtureRequest) -> tuple[Callable[[], BaseException], ReadCause, str]:
    return CAUSES[request.param]


class TestTheClient:
    def test_every_cause_serves_the_fallbacks_default_and_is_told_once(
        self,
        cause: tuple[Callable[[], BaseException], ReadCause, str],
        declarations: Declarations,
        clock: Clock,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        error, expected, words = cause
        # Given a client whose table cannot be read for this cause
        flags = Flags(table_name="t", declarations=declarations, client=Failing(error), clock=clock)
        # When it is read again and again, past every back-off
        with caplog.at_level(logging.DEBUG, logger="singleton_flags"):
            served = []
            for _ in range(5):
                served.append(flags.all_details())
                clock.advance(60)
        # Then each read serves every declared fallback with reason DEFAULT
        for details in served:
            assert {name: d.value for name, d in details.items()} == declarations.fallbacks()
            assert {d.reason for d in details.values()} == {DEFAULT}
        # and the log message names the cause in words, once (the field says it never read successfully)
        told = warnings_of(caplog)
        assert len(told) == 1, [record.getMessage() for record in told]
        assert words in told[0].getMessage()
        assert "serving the declared fallbacks" in told[0].getMessage()
        assert (told[0].cause, told[0].never_read) == (expected.value, True)  # type: ignore[attr-defined]

    def test_a_stale_read_says_so_apart_from_never_read(
        self,
        ddb: Any,
        table_name: str,
        declarations: Declarations,
        clock: Clock,
        put_flags: Any,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        # Given a client that read version 3, then lost its grant
        put_flags(version=3)
        client = Failing(None, ddb)
        flags = Flags(table_name=table_name, declarations=declarations, client=client, clock=clock, max_stale=60)
        flags.all()
        client.error = CAUSES["access-denied"][0]
        expire(flags._reader.provider)
        # When read
        with caplog.at_level(logging.DEBUG, logger="singleton_flags"):
            details = flags.details("signup_enabled")
        # Then the last good value (STALE), and the message says access denied, serving the last good values
        assert (details.reason, details.version) == (STALE, 3)
        (told,) = warnings_of(caplog)
        assert "access denied" in told.getMessage() and "last good values" in told.getMessage()
        assert told.never_read is False  # type: ignore[attr-defined]


class TestTheMetric:
    def test_never_read_failures_are_counted_by_cause_with_the_flush(
        self, declarations: Declarations, clock: Clock
    ) -> None:
        # Given a reader counting reads as EMF, whose table was never found
        stream = io.StringIO()
        counter = ReadCounter(EmfPrinter("SingletonFlags", "orders", stream), clock=clock)
        flags = Flags(
            table_name="t", declarations=declarations, client=Failing(CAUSES["table-not-found"][0]), clock=clock
        )
        reader: FlagReader = flags._reader
        reader._counter, reader._counting = counter, True
        # When it is read
        flags.all()
        # Then the flush names the failure apart, with its cause
        blobs = [json.loads(line) for line in stream.getvalue().splitlines()]
        never = [blob for blob in blobs if NEVER_READ_FAILURES in blob]
        assert [(blob[NEVER_READ_FAILURES], blob["cause"]) for blob in never] == [(1, "TABLE_NOT_FOUND")]


@pytest.fixture
def sdk() -> Iterator[None]:
    api.clear_providers()
    yield
    api.clear_providers()


class TestTheOpenFeatureProvider:
    def test_every_cause_keeps_the_provider_usable_and_serves_the_fallbacks(
        self,
        sdk: None,
        cause: tuple[Callable[[], BaseException], ReadCause, str],
        declarations: Declarations,
        clock: Clock,
    ) -> None:
        error = cause[0]
        # Given a provider whose table cannot be read, registered (initialize reads it and never raises)
        flags = Flags(table_name="t", declarations=declarations, client=Failing(error), clock=clock)
        provider = register(flags)
        client = api.get_client()
        # When the application evaluates with call-site defaults opposite to the fallbacks
        maintenance = client.get_boolean_details("maintenance_mode", False)
        signup = client.get_boolean_details("signup_enabled", True)
        # Then the declared fallbacks, reason DEFAULT, no error code; the provider is neither NOT_READY nor FATAL
        assert (maintenance.value, maintenance.reason, maintenance.error_code) == (True, DEFAULT, None)
        assert (signup.value, signup.reason, signup.variant) == (False, DEFAULT, "fallback")
        assert client.get_provider_status() not in (ProviderStatus.NOT_READY, ProviderStatus.FATAL)
        assert provider.flags is flags

    def test_initialize_never_raises_even_without_declarations(self, sdk: None) -> None:
        # Given a client from a bare environment: no declarations to fall back on
        flags = Flags.from_env({})
        # When registered
        register(flags)
        # Then the provider is not FATAL, and an evaluation names the missing declarations
        client = api.get_client()
        assert client.get_provider_status() not in (ProviderStatus.NOT_READY, ProviderStatus.FATAL)
        details = client.get_boolean_details("maintenance_mode", True)
        assert "declarations are required" in str(details.error_message)


class TestOfrep:
    def test_every_cause_answers_the_fallbacks_default(
        self, cause: tuple[Callable[[], BaseException], ReadCause, str], read_api: ReadApi
    ) -> None:
        # Given the read function's table cannot be read for this cause
        read_api.provider._client = Failing(cause[0])
        # When an OFREP client evaluates every flag
        response = read_api("POST", "/ofrep/v1/evaluate/flags")
        # Then 200, every declared fallback, reason DEFAULT, variant fallback
        assert response["statusCode"] == 200
        flags = body_of(response)["flags"]
        fallbacks = read_api.module.DECLARATIONS.fallbacks()
        assert {flag["key"]: flag["value"] for flag in flags} == fallbacks
        assert {(flag["reason"], flag["variant"]) for flag in flags} == {(DEFAULT, "fallback")}
