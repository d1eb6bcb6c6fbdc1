"""The reader: where each value comes from (STATIC, CACHED, STALE, DEFAULT), back-off, maintenance deadlines."""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import FunctionType, MethodType, ModuleType, SimpleNamespace
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parameters.base import BaseProvider
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from singleton_flags import Flags, FlagState
from singleton_flags.aws import dynamodb_client
from singleton_flags.declarations import Declarations
from singleton_flags.keys import SINGLETON_SK
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags.snapshot import Snapshot
from singleton_flags_service.vocabulary import CACHED, DEFAULT, STALE, STATIC
from tests.support.unit import (
    START,
    CallCount,
    Clock,
    Output,
    build_reader,
    count_calls,
    expire,
    flags_item,
    warnings_in,
)

MAX_STALE = 60.0
DYNAMODB_ERRORS = [
    ("ProvisionedThroughputExceededException", 400),
    ("AccessDeniedException", 400),
    ("InternalServerError", 500),
]


@pytest.fixture
def stale_reader(provider: SingletonProvider, declarations: Declarations, clock: Clock) -> FlagReader:
    """Back-off 1 s, 2 s, 4 s ... capped at 30 s; stale values served for at most 60 s."""
    return build_reader(provider, declarations, clock, max_stale=MAX_STALE)


@pytest.fixture
def failing(ddb: Any) -> Iterator[Stubber]:
    """The table's client, answered by a Stubber from here on (queue errors or responses on it)."""
    with Stubber(ddb) as stubber:
        yield stubber


def fail_with(stubber: Stubber, code: str, status: int = 400, times: int = 1) -> None:
    for _ in range(times):
        stubber.add_client_error("get_item", service_error_code=code, http_status_code=status)


def seconds_until_next_call(reader: FlagReader, clock: Clock, step: float = 0.25) -> float:
    fetches, started = reader.provider.fetches, clock()
    while reader.provider.fetches == fetches:
        clock.advance(step)
        assert clock() - started < 60, "the reader never called DynamoDB again"
        reader.read()
    return clock() - started


class TestReasons:
    def test_first_read_is_static_then_cached(
        self, put_flags: Any, reader: FlagReader, clock: Clock, get_item_calls: CallCount
    ) -> None:
        # Given a seeded item at version 4
        put_flags(version=4, signup_enabled=False)
        # When read twice in one max_age window
        first, second = reader.read(), reader.read()
        # Then the first came from the table, the second from the cache, with the same version and fetch time
        assert (first.reason, second.reason) == (STATIC, CACHED)
        assert first.version == second.version == 4
        assert first.fetched_at == second.fetched_at == clock()
        assert first.values["signup_enabled"] is False
        assert get_item_calls.calls == 1

    def test_after_max_age_the_next_read_is_static_again(
        self, put_flags: Any, reader: FlagReader, get_item_calls: CallCount
    ) -> None:
        put_flags(version=1)
        reader.read()
        put_flags(version=2)
        expire(reader.provider)
        state = reader.read()
        assert (state.reason, state.version) == (STATIC, 2)
        assert get_item_calls.calls == 2

    def test_a_missing_item_is_default_with_fallbacks_and_no_version(
        self, ddb: Any, reader: FlagReader, declarations: Declarations, stdout: Output
    ) -> None:
        # Given an empty table
        # When read, then the declared fallbacks are served as DEFAULT, without a version
        state = reader.read()
        assert state.reason == DEFAULT
        assert dict(state.values) == declarations.fallbacks()
        assert state.version is None
        # And the missing item is logged once (a cached DEFAULT read logs nothing more)
        assert reader.read().reason == DEFAULT
        assert [w["message"] for w in warnings_in(stdout.records())] == [
            "the flags item is missing, serving declared fallbacks"
        ]

    def test_a_deleted_item_is_default_even_with_a_last_good_value(
        self, ddb: Any, table_name: str, put_flags: Any, reader: FlagReader, declarations: Declarations
    ) -> None:
        # Given a reader that once read the item, and the item then deleted
        item = put_flags(version=3)
        reader.read()
        ddb.delete_item(TableName=table_name, Key={"PK": item["PK"], "SK": item["SK"]})
        expire(reader.provider)
        # When read, then the fallbacks are served (a missing item is not an outage)
        state = reader.read()
        assert state.reason == DEFAULT and dict(state.values) == declarations.fallbacks()


class TestDynamoDBFailing:
    @pytest.mark.parametrize(("code", "status"), DYNAMODB_ERRORS)
    def test_stale_while_younger_than_max_stale_then_default(
        self,
        put_flags: Any,
        ddb: Any,
        stale_reader: FlagReader,
        declarations: Declarations,
        clock: Clock,
        code: str,
        status: int,
    ) -> None:
        # Given a good read at START (version 5, signup off), then the cache expired
        put_flags(version=5, signup_enabled=False)
        assert stale_reader.read().reason == STATIC
        expire(stale_reader.provider)
        with Stubber(ddb) as stubber:
            fail_with(stubber, code, status, times=3)
            # When DynamoDB fails while the last good value is younger than max_stale
            clock.advance(10)
            at_10s = stale_reader.read()
            clock.now = START + MAX_STALE  # past the back-off, exactly max_stale old
            at_max_stale = stale_reader.read()
            # Then the last good value is served as STALE, version and fetch time included
            for state in (at_10s, at_max_stale):
                assert state.reason == STALE
                assert state.version == 5 and state.fetched_at == START
                assert state.values["signup_enabled"] is False
            # And once it is older than max_stale, the fallbacks are served as DEFAULT
            clock.now = START + MAX_STALE + 5
            late = stale_reader.read()
            stubber.assert_no_pending_responses()
        assert late.reason == DEFAULT
        assert dict(late.values) == declarations.fallbacks() and late.version is None

    @pytest.mark.parametrize(("code", "status"), DYNAMODB_ERRORS)
    def test_failing_on_a_cold_start_serves_default(
        self, failing: Stubber, stale_reader: FlagReader, declarations: Declarations, code: str, status: int
    ) -> None:
        # Given no value was ever read and DynamoDB fails
        fail_with(failing, code, status)
        # When read, then fallbacks, never an exception
        state = stale_reader.read()
        assert state.reason == DEFAULT and dict(state.values) == declarations.fallbacks()

    def test_a_connection_error_is_stale_then_default(
        self, put_flags: Any, table_name: str, declarations: Declarations, clock: Clock
    ) -> None:
        # Given the function's real read client (one attempt, short timeouts) and a good read
        client = dynamodb_client()
        provider = SingletonProvider(client=client, table_name=table_name, declarations=declarations, clock=clock)
        reader = build_reader(provider, declarations, clock, max_stale=MAX_STALE)
        put_flags(version=8)
        assert reader.read().reason == STATIC
        expire(provider)
        # When the endpoint cannot be reached (raised where the HTTP request would be sent)
        attempts = count_calls(client)
        sends: list[str] = []

        def unreachable(request: Any, **_: Any) -> None:
            sends.append(request.url)
            raise EndpointConnectionError(endpoint_url=request.url)

        client.meta.events.register("before-send.dynamodb.GetItem", unreachable)
        clock.advance(5)
        stale = reader.read()
        clock.advance(MAX_STALE)
        default = reader.read()
        # Then STALE with the last good version, then DEFAULT; each read tried exactly once (no retries)
        assert (stale.reason, stale.version) == (STALE, 8)
        assert (default.reason, default.version) == (DEFAULT, None)
        assert attempts.calls == 2 and len(sends) == 2


class TestBackOff:
    def test_no_call_within_the_back_off_window_and_one_after(
        self, put_flags: Any, ddb: Any, stale_reader: FlagReader, clock: Clock, get_item_calls: CallCount
    ) -> None:
        # Given a good read, an expired cache, and a failed fetch at t0 (back-off 1 s)
        put_flags(version=2)
        stale_reader.read()
        expire(stale_reader.provider)
        with Stubber(ddb) as stubber:
            fail_with(stubber, "InternalServerError", 500)
            clock.advance(10)
            assert stale_reader.read().reason == STALE
            calls_after_failure = get_item_calls.calls
            # When 100 reads arrive within the back-off window
            for _ in range(100):
                clock.advance(0.009)
                assert stale_reader.read().reason == STALE
            # Then none of them called DynamoDB
            assert get_item_calls.calls == calls_after_failure
            # And after the window one read calls, once, and is STATIC again
            stubber.add_response("get_item", {"Item": flags_item(stale_reader._declarations, version=3)})
            clock.advance(0.2)
            recovered = stale_reader.read()
            stubber.assert_no_pending_responses()
        assert get_item_calls.calls == calls_after_failure + 1
        assert (recovered.reason, recovered.version) == (STATIC, 3)
        assert stale_reader.read().reason == CACHED

    def test_the_window_doubles_per_failure_up_to_the_cap(
        self, failing: Stubber, provider: SingletonProvider, declarations: Declarations, clock: Clock
    ) -> None:
        # Given a reader backing off 1 s, doubling, capped at 4 s, and DynamoDB failing every time
        reader = build_reader(provider, declarations, clock, backoff_base=1.0, backoff_max=4.0)
        fail_with(failing, "InternalServerError", 500)
        reader.read()
        # When reads probe every 0.25 s, measure how long each failure keeps DynamoDB uncalled
        windows = []
        for _ in range(4):
            fail_with(failing, "InternalServerError", 500)
            windows.append(seconds_until_next_call(reader, clock))
        # Then the windows double from the base and stop at the cap
        assert windows == [1.0, 2.0, 4.0, 4.0]
        failing.assert_no_pending_responses()

    def test_the_window_starts_when_the_failed_call_returns(
        self, ddb: Any, failing: Stubber, stale_reader: FlagReader, clock: Clock
    ) -> None:
        # Given a call that takes 1 s to fail (the read client's read timeout on a black-holed endpoint)
        ddb.meta.events.register("before-parameter-build.dynamodb.GetItem", lambda **_: clock.advance(1.0))
        fail_with(failing, "RequestTimeout", 500, times=2)
        stale_reader.read()
        fetches = stale_reader.provider.fetches
        # When the next request arrives 10 ms after the failure was known (well within the 1 s window)
        clock.advance(0.01)
        stale_reader.read()
        # Then it does not call DynamoDB
        assert stale_reader.provider.fetches == fetches

    def test_failures_log_once_per_attempt_not_per_request(
        self, failing: Stubber, stale_reader: FlagReader, clock: Clock, stdout: Output
    ) -> None:
        # Given a failed fetch
        fail_with(failing, "AccessDeniedException")
        stale_reader.read()
        # When 50 more reads fall within the back-off window
        for _ in range(50):
            stale_reader.read()
        # Then exactly one warning was logged, carrying the reason and the retry delay
        (warning,) = warnings_in(stdout.records())
        assert warning["reason"] == DEFAULT and warning["consecutive_failures"] == 1
        assert warning["retry_in_seconds"] == 1.0

    def test_prime_serves_the_written_snapshot_and_ends_the_back_off(
        self,
        failing: Stubber,
        stale_reader: FlagReader,
        declarations: Declarations,
        clock: Clock,
    ) -> None:
        # Given a reader backing off after a failure
        fail_with(failing, "InternalServerError", 500)
        assert stale_reader.read().reason == DEFAULT
        # When this environment writes and primes the cache with what it wrote
        stale_reader.prime(Snapshot(found=True, values=declarations.initials(), version=6, fetched_at=clock()))
        # Then the next read serves it from the cache, without a call
        state = stale_reader.read()
        assert (state.reason, state.version) == (CACHED, 6)
        assert stale_reader.provider.fetches == 1


class TestCachedReads:
    """Every cached read asks Powertools' cache, the only one, and answers with the snapshot it holds now: cached
    reads end with the cache age, a refresh, or a window's deadline, exactly as ``BaseProvider.get`` would."""

    def test_repeated_cached_reads_see_a_refresh_at_once(
        self, put_flags: Any, reader: FlagReader, get_item_calls: CallCount
    ) -> None:
        # Given a reader that served version 1 from its cache several times
        put_flags(version=1)
        assert [reader.read().reason for _ in range(4)] == [STATIC, CACHED, CACHED, CACHED]
        # When the cache entry is replaced (its age passed) and the table holds version 2
        put_flags(version=2)
        expire(reader.provider)
        # Then the next read fetches version 2, and the cached reads after it serve version 2
        states = [reader.read() for _ in range(4)]
        assert [(state.reason, state.version) for state in states] == [(STATIC, 2)] + [(CACHED, 2)] * 3
        assert get_item_calls.calls == 2

    def test_repeated_cached_reads_end_with_the_cache_age(
        self,
        put_flags: Any,
        provider: SingletonProvider,
        declarations: Declarations,
        clock: Clock,
        get_item_calls: CallCount,
    ) -> None:
        # Given a reader with a 1 s cache age that served its cached value several times
        reader = build_reader(provider, declarations, clock, max_age=1)
        put_flags(version=1)
        assert [reader.read().reason for _ in range(3)] == [STATIC, CACHED, CACHED]
        # When 1 s passes on the real clocks (the cache entry itself untouched)
        time.sleep(1.05)
        # Then the next read fetches again
        assert reader.read().reason == STATIC
        assert get_item_calls.calls == 2

    def test_a_window_deadline_passing_between_repeated_cached_reads_is_honoured(
        self, put_flags: Any, reader: FlagReader, clock: Clock
    ) -> None:
        # Given window w1 on with a deadline 2 s away, read from the cache several times
        put_flags(maintenance_mode=True, maintenance_owner={"S": "w1"}, maintenance_deadline={"N": str(clock() + 2)})
        assert [reader.read().values["maintenance_mode"] for _ in range(3)] == [True, True, True]
        # When the deadline passes while the value is still cached
        clock.advance(3)
        state = reader.read()
        # Then the cached read serves it off
        assert state.reason == CACHED
        assert state.values["maintenance_mode"] is False and state.maintenance_deadline_passed

    def test_a_warm_read_after_clear_cache_is_a_fresh_get_item(
        self, put_flags: Any, reader: FlagReader, get_item_calls: CallCount
    ) -> None:
        # Given a warm reader serving version 1 from the cache, and the table now at version 2
        put_flags(version=1)
        assert [reader.read().reason for _ in range(3)] == [STATIC, CACHED, CACHED]
        put_flags(version=2)
        # When the provider's cache is cleared (Powertools' public clear_cache)
        reader.provider.clear_cache()
        # Then the next read is a GetItem, and serves version 2
        state = reader.read()
        assert (state.reason, state.version) == (STATIC, 2)
        assert get_item_calls.calls == 2

    def test_a_cached_read_serves_what_powertools_cache_holds_now(
        self, put_flags: Any, reader: FlagReader, get_item_calls: CallCount
    ) -> None:
        # Given a warm reader serving version 1 from the cache
        put_flags(version=1)
        assert [reader.read().version for _ in range(3)] == [1, 1, 1]
        # When another user of the provider refreshes its cache through Powertools' public get (version 2)
        put_flags(version=2, signup_enabled=False)
        reader.provider.get(SINGLETON_SK, force_fetch=True)
        # Then the reader's next read is that entry, from the cache: no GetItem of its own
        state = reader.read()
        assert (state.reason, state.version, state.values["signup_enabled"]) == (CACHED, 2, False)
        assert get_item_calls.calls == 2

    def test_the_reader_and_the_client_hold_no_item_but_the_last_good_one(
        self, ddb: Any, table_name: str, declarations: Declarations, put_flags: Any, clock: Clock
    ) -> None:
        # Given a client that read the item, then served it from the cache
        put_flags(version=3)
        flags = Flags(table_name=table_name, declarations=declarations, client=ddb, clock=clock)
        for _ in range(3):
            flags.get("signup_enabled")
        # When everything the client and its reader hold is searched for a snapshot or a served state
        # (Powertools' provider, whose cache is the one allowed, excepted)
        found = items_held(flags, "flags")
        # Then the only one is the last good snapshot, kept to be served as STALE after a failed fetch
        assert found == ["flags._reader._last_good"]

    def test_a_cache_shaped_otherwise_is_read_through_get_still_once_per_cache_age(
        self,
        ddb: Any,
        table_name: str,
        declarations: Declarations,
        clock: Clock,
        put_flags: Any,
        get_item_calls: CallCount,
    ) -> None:
        # Given a Powertools whose cache entries keep their expiry as epoch seconds (not as pinned)
        provider = EpochTtlProvider(client=ddb, table_name=table_name, declarations=declarations, clock=clock)
        reader = build_reader(provider, declarations, clock)
        put_flags(version=5)
        # When read several times in one cache age
        states = [reader.read() for _ in range(4)]
        # Then nothing raises: the reads go through Powertools' get, one GetItem, then cached values
        assert [(state.reason, state.version) for state in states] == [(STATIC, 5)] + [(CACHED, 5)] * 3
        assert get_item_calls.calls == 1
        assert provider.cached(SINGLETON_SK) is None


class EpochTtlProvider(SingletonProvider):
    """A provider whose cache entries hold their expiry as epoch seconds: a Powertools cache not shaped as pinned."""

    def add_to_cache(self, key: tuple[Any, ...], value: Any, max_age: int) -> None:
        if max_age > 0:
            self.store[key] = SimpleNamespace(value=value, ttl=time.time() + max_age)  # type: ignore[assignment]

    def has_not_expired_in_cache(self, key: tuple[Any, ...]) -> bool:
        return key in self.store and self.store[key].ttl >= time.time()  # type: ignore[operator]


def items_held(root: object, path: str) -> list[str]:
    """Where, under ``root``, a ``Snapshot`` or a ``FlagState`` is held: attributes, containers and closures,
    not entering Powertools' providers (whose cache is the one allowed), classes or modules."""
    found: list[str] = []
    seen: set[int] = set()

    def visit(value: object, where: str) -> None:
        if id(value) in seen or isinstance(value, (BaseProvider, type, ModuleType, str, bytes, int, float)):
            return
        seen.add(id(value))
        if isinstance(value, (Snapshot, FlagState)):
            found.append(where)
            return
        if isinstance(value, dict):
            for key, item in value.items():
                visit(item, f"{where}[{key!r}]")
        elif isinstance(value, (list, tuple, set, frozenset)):
            for index, item in enumerate(value):
                visit(item, f"{where}[{index}]")
        elif isinstance(value, FunctionType):
            for name, cell in zip(value.__code__.co_freevars, value.__closure__ or (), strict=True):
                visit(cell.cell_contents, f"{where}<{name}>")
        elif isinstance(value, MethodType):
            visit(value.__self__, f"{where}.__self__")
        else:
            attributes = getattr(value, "__dict__", {})
            for slot in getattr(type(value), "__slots__", ()):
                if hasattr(value, slot):
                    attributes = {**attributes, slot: getattr(value, slot)}
            for name, item in attributes.items():
                visit(item, f"{where}.{name}")

    visit(root, path)
    return sorted(found)


class TestMaintenanceDeadline:
    def test_a_window_past_its_deadline_is_served_off(self, put_flags: Any, reader: FlagReader, clock: Clock) -> None:
        # Given maintenance switched on by window w1 whose deadline has passed (its end never arrived)
        put_flags(
            maintenance_mode=True,
            maintenance_owner={"S": "w1"},
            maintenance_deadline={"N": str(int(clock() - 1))},
        )
        # When read
        state = reader.read()
        # Then maintenance is served off, and the state says why
        assert state.values["maintenance_mode"] is False
        assert state.maintenance_deadline_passed is True

    def test_a_manual_switch_without_owner_stays_on(self, put_flags: Any, reader: FlagReader, clock: Clock) -> None:
        # Given maintenance switched on by hand (no owner), even with a stale deadline attribute
        put_flags(maintenance_mode=True, maintenance_deadline={"N": str(int(clock() - 3600))})
        # When read, then it stays on
        state = reader.read()
        assert state.values["maintenance_mode"] is True
        assert state.maintenance_deadline_passed is False

    def test_a_window_before_its_deadline_stays_on_until_it_passes_even_from_cache(
        self, put_flags: Any, reader: FlagReader, clock: Clock
    ) -> None:
        # Given window w1 on with a deadline 2 s away
        put_flags(maintenance_mode=True, maintenance_owner={"S": "w1"}, maintenance_deadline={"N": str(clock() + 2)})
        assert reader.read().values["maintenance_mode"] is True
        # When the deadline passes while the value is still cached
        clock.advance(3)
        state = reader.read()
        # Then the cached read already serves it off
        assert state.reason == CACHED
        assert state.values["maintenance_mode"] is False and state.maintenance_deadline_passed

    def test_a_stale_window_past_its_deadline_is_served_off(
        self, put_flags: Any, ddb: Any, stale_reader: FlagReader, clock: Clock
    ) -> None:
        # Given a window on with a deadline 20 s away, then DynamoDB failing
        put_flags(maintenance_mode=True, maintenance_owner={"S": "w1"}, maintenance_deadline={"N": str(clock() + 20)})
        stale_reader.read()
        expire(stale_reader.provider)
        with Stubber(ddb) as stubber:
            fail_with(stubber, "InternalServerError", 500)
            clock.advance(30)
            state = stale_reader.read()
        # Then the stale value honours the deadline too
        assert state.reason == STALE
        assert state.values["maintenance_mode"] is False and state.maintenance_deadline_passed


def test_each_reader_counts_its_own_reads(put_flags: Any, provider: SingletonProvider, reader: FlagReader) -> None:
    """A fresh reader per test: no back-off state, no last good value carried over."""
    put_flags()
    assert reader.read().reason == STATIC
    assert reader._failures == 0 and reader._last_good is not None
