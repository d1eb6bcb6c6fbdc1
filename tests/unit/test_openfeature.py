"""The OpenFeature provider, driven through the SDK's own API: reasons, metadata, errors, fail-closed, events."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from botocore.stub import Stubber
from openfeature import api
from openfeature.client import OpenFeatureClient
from openfeature.event import EventDetails, ProviderEvent
from openfeature.exception import ErrorCode
from openfeature.provider import ProviderStatus

from singleton_flags import Flags
from singleton_flags.declarations import Declarations
from singleton_flags.openfeature import SingletonFlagsProvider, register
from tests.support.unit import START, Clock, expire, flags_item

WATCHED = (
    ProviderEvent.PROVIDER_STALE,
    ProviderEvent.PROVIDER_ERROR,
    ProviderEvent.PROVIDER_READY,
    ProviderEvent.PROVIDER_CONFIGURATION_CHANGED,
)


@pytest.fixture
def flags(ddb: Any, table_name: str, declarations: Declarations, clock: Clock) -> Flags:
    return Flags(table_name=table_name, declarations=declarations, client=ddb, clock=clock, max_stale=60)


@pytest.fixture
def sdk() -> Iterator[None]:
    api.clear_providers()
    yield
    api.clear_providers()


class Events:
    """What the SDK hands to the application's global handlers. The SDK runs handlers on a thread pool:
    ``names`` waits for the expected count (at most 2 s), then a moment more, so an extra event would show."""

    def __init__(self) -> None:
        self.seen: list[tuple[ProviderEvent, EventDetails]] = []

    def __call__(self, event: ProviderEvent, details: EventDetails) -> None:
        self.seen.append((event, details))

    def received(self, expected: int) -> list[tuple[ProviderEvent, EventDetails]]:
        deadline = time.monotonic() + 2.0
        while len(self.seen) < expected and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        received, self.seen = self.seen, []
        return received

    def names(self, expected: int) -> list[ProviderEvent]:
        return [event for event, _ in self.received(expected)]


@pytest.fixture
def events(sdk: None) -> Iterator[Events]:
    """The application's handlers, added before the provider is set."""
    recorder = Events()
    handlers = {event: (lambda details, event=event: recorder(event, details)) for event in WATCHED}
    for event, handler in handlers.items():
        api.add_handler(event, handler)
    recorder.names(1)  # adding a READY handler runs it at once for the no-op default provider
    yield recorder
    for event, handler in handlers.items():
        api.remove_handler(event, handler)


def of_client(flags: Flags) -> tuple[OpenFeatureClient, SingletonFlagsProvider]:
    provider = register(flags)
    return api.get_client(), provider


def refresh(flags: Flags) -> None:
    expire(flags._reader.provider)


class TestResolution:
    def test_reasons_and_metadata_map_one_to_one(self, sdk: None, flags: Flags, put_flags: Any) -> None:
        # Given version 8 in the table and the provider set (its initialize read the item once)
        put_flags(version=8, search_ranking="semantic")
        client, _ = of_client(flags)
        # When the application evaluates a flag, then again after the cache age
        cached = client.get_string_details("search_ranking", "classic")
        refresh(flags)
        fetched = client.get_string_details("search_ranking", "classic")
        # Then the reasons are ours, the value is the stored one, the metadata names the version and fetch time
        assert (cached.value, cached.reason, cached.error_code) == ("semantic", "CACHED", None)
        assert (fetched.value, fetched.reason) == ("semantic", "STATIC")
        assert (fetched.variant, fetched.flag_metadata["version"]) == ("stored", 8)
        assert datetime.fromisoformat(str(fetched.flag_metadata["fetchedAt"])).timestamp() == START
        assert client.get_integer_value("api_rate_limit_per_minute", 1) == 600
        assert client.get_float_value("trace_sample_rate", 1.0) == 0.05
        assert client.get_boolean_value("signup_enabled", False) is True

    def test_an_undeclared_flag_is_flag_not_found(self, sdk: None, flags: Flags, put_flags: Any) -> None:
        put_flags()
        client, _ = of_client(flags)
        details = client.get_boolean_details("no_such_flag", False)
        assert (details.error_code, details.value) == (ErrorCode.FLAG_NOT_FOUND, False)

    @pytest.mark.parametrize(
        ("evaluate", "flag", "default"),
        [
            pytest.param("get_integer_details", "signup_enabled", 0, id="bool-as-int"),
            pytest.param("get_boolean_details", "search_ranking", False, id="string-as-bool"),
            pytest.param("get_float_details", "api_rate_limit_per_minute", 0.0, id="int-as-float"),
            pytest.param("get_object_details", "maintenance_mode", {}, id="bool-as-object"),
        ],
    )
    def test_a_flag_of_another_type_is_type_mismatch(
        self, sdk: None, flags: Flags, put_flags: Any, evaluate: str, flag: str, default: Any
    ) -> None:
        put_flags()
        client, _ = of_client(flags)
        details = getattr(client, evaluate)(flag, default)
        assert details.error_code == ErrorCode.TYPE_MISMATCH


class TestFailsClosed:
    def test_maintenance_is_on_when_the_item_is_missing_whatever_default_the_caller_passes(
        self, sdk: None, flags: Flags
    ) -> None:
        # Given an empty table (the item was lost) and the provider set
        client, _ = of_client(flags)
        # When the application asks for maintenance_mode with a default of False
        details = client.get_boolean_details("maintenance_mode", False)
        # Then it gets the declared fallback, maintenance ON, as a value with reason DEFAULT and no error code
        # (with an error code the SDK would return the caller's False: the application would fail open)
        assert (details.value, details.reason, details.error_code) == (True, "DEFAULT", None)
        assert client.get_boolean_value("maintenance_mode", False) is True
        assert client.get_boolean_value("signup_enabled", True) is False

    def test_maintenance_is_on_when_dynamodb_fails_past_max_stale(
        self, sdk: None, flags: Flags, put_flags: Any, ddb: Any, clock: Clock
    ) -> None:
        put_flags(version=2)
        client, _ = of_client(flags)
        with Stubber(ddb) as failing:
            for _ in range(5):
                failing.add_client_error("get_item", service_error_code="InternalServerError", http_status_code=500)
            refresh(flags)
            clock.advance(120)
            details = client.get_boolean_details("maintenance_mode", False)
        assert (details.value, details.reason, details.error_code) == (True, "DEFAULT", None)

    def test_a_flag_missing_from_the_item_is_its_fallback_the_others_are_read(
        self, sdk: None, flags: Flags, put_flags: Any
    ) -> None:
        put_flags(version=3, maintenance_mode=None)
        client, _ = of_client(flags)
        maintenance = client.get_boolean_details("maintenance_mode", False)
        signup = client.get_boolean_details("signup_enabled", False)
        assert (maintenance.value, maintenance.reason, maintenance.error_code) == (True, "DEFAULT", None)
        assert (signup.value, signup.reason, signup.flag_metadata["version"]) == (True, "CACHED", 3)


class TestEvents:
    def test_events_only_on_transitions(
        self,
        events: Events,
        flags: Flags,
        put_flags: Any,
        ddb: Any,
        table_name: str,
        clock: Clock,
        declarations: Any,
    ) -> None:
        # Given the provider set over version 1: the SDK's READY, then nothing for cached evaluations
        put_flags(version=1)
        client, _ = of_client(flags)
        for _ in range(5):
            client.get_boolean_value("signup_enabled", False)
        assert events.names(1) == [ProviderEvent.PROVIDER_READY]
        # When a refresh sees version 2, which changed signup_enabled and the rate limit
        ddb.put_item(
            TableName=table_name,
            Item=flags_item(declarations, 2, signup_enabled=False, api_rate_limit_per_minute=100),
        )
        refresh(flags)
        client.get_boolean_value("signup_enabled", True)
        client.get_boolean_value("signup_enabled", True)
        # Then one CONFIGURATION_CHANGED naming the changed keys
        [(event, details)] = events.received(1)
        assert event == ProviderEvent.PROVIDER_CONFIGURATION_CHANGED
        assert details.flags_changed == ["api_rate_limit_per_minute", "signup_enabled"]
        with Stubber(ddb) as failing:
            for _ in range(5):
                failing.add_client_error("get_item", service_error_code="InternalServerError", http_status_code=500)
            # When DynamoDB fails: one STALE while stale values are served, however many evaluations
            refresh(flags)
            clock.advance(1)
            for _ in range(3):
                client.get_boolean_value("signup_enabled", True)
            assert events.names(1) == [ProviderEvent.PROVIDER_STALE]
            assert client.get_provider_status() == ProviderStatus.STALE
            # And one ERROR when max_stale has passed and the fallbacks are served; evaluations still answer
            clock.advance(120)
            for _ in range(3):
                assert client.get_boolean_value("maintenance_mode", False) is True
            assert events.names(1) == [ProviderEvent.PROVIDER_ERROR]
        # When the table answers again (after the back-off): READY, with the stored values
        clock.advance(60)
        assert client.get_boolean_value("maintenance_mode", True) is False
        assert events.names(1) == [ProviderEvent.PROVIDER_READY]
        assert client.get_provider_status() == ProviderStatus.READY
