"""The singleton provider: one GetItem per max_age window, decoded once and checked against the declarations."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.stub import Stubber

from singleton_flags.declarations import Declarations
from singleton_flags.keys import SINGLETON_SK, singleton_key
from singleton_flags.provider import SingletonProvider
from singleton_flags.snapshot import Snapshot
from tests.support.unit import CallCount, Clock, Output, expire, flags_item, warnings_in


class TestOneGetItemPerWindow:
    def test_many_reads_in_one_window_make_one_get_item(
        self, put_flags: Any, provider: SingletonProvider, get_item_calls: CallCount
    ) -> None:
        # Given a seeded item
        put_flags(version=3)
        # When the provider is asked 1,000 times within one max_age window
        snapshots = [provider.get(SINGLETON_SK) for _ in range(1000)]
        # Then DynamoDB saw exactly one GetItem, and every caller got the same snapshot
        assert get_item_calls.calls == 1
        assert provider.fetches == 1
        assert all(snapshot is snapshots[0] for snapshot in snapshots)
        assert snapshots[0].version == 3

    def test_the_get_item_addresses_the_full_literal_key(
        self, ddb: Any, table_name: str, declarations: Declarations, clock: Clock
    ) -> None:
        # Given a client that only answers a GetItem on PK=SETTINGS#APP, SK=FLAGS#V1 of our table
        provider = SingletonProvider(client=ddb, table_name=table_name, declarations=declarations, clock=clock)
        with Stubber(ddb) as stubber:
            stubber.add_response(
                "get_item",
                {"Item": flags_item(declarations, version=1)},
                expected_params={"TableName": table_name, "Key": singleton_key(SINGLETON_SK)},
            )
            # When the provider fetches
            snapshot = provider.get(SINGLETON_SK)
            # Then that one call was made, nothing else
            stubber.assert_no_pending_responses()
        assert snapshot.found and snapshot.version == 1

    def test_a_cache_hit_returns_the_cached_snapshot_even_if_the_table_changed(
        self, put_flags: Any, provider: SingletonProvider, get_item_calls: CallCount
    ) -> None:
        # Given a cached snapshot
        put_flags(version=1, signup_enabled=True)
        first = provider.get(SINGLETON_SK)
        # When the table changes inside the window
        put_flags(version=2, signup_enabled=False)
        # Then the cache answers, without a call
        assert provider.get(SINGLETON_SK) is first
        assert get_item_calls.calls == 1

    def test_after_expiry_the_next_read_fetches_once(
        self, put_flags: Any, provider: SingletonProvider, get_item_calls: CallCount
    ) -> None:
        # Given a cached snapshot of version 1, and the table now at version 2
        put_flags(version=1)
        provider.get(SINGLETON_SK)
        put_flags(version=2, ai_search_enabled=True)
        # When the cached entry ages past max_age
        expire(provider)
        # Then the next reads fetch once and see the new values
        snapshots = [provider.get(SINGLETON_SK) for _ in range(10)]
        assert get_item_calls.calls == 2
        assert snapshots[-1].version == 2 and snapshots[-1].values["ai_search_enabled"] is True

    def test_max_age_follows_powertools_env(
        self, put_flags: Any, provider: SingletonProvider, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Given POWERTOOLS_PARAMETERS_MAX_AGE=60
        monkeypatch.setenv("POWERTOOLS_PARAMETERS_MAX_AGE", "60")
        put_flags()
        # When the provider fetches
        provider.get(SINGLETON_SK)
        # Then the entry lives about 60 s
        (entry,) = provider.store.values()
        assert timedelta(seconds=58) < entry.ttl - datetime.now() <= timedelta(seconds=60)

    def test_max_age_zero_does_not_cache(
        self, put_flags: Any, provider: SingletonProvider, get_item_calls: CallCount
    ) -> None:
        put_flags()
        for _ in range(3):
            provider.get(SINGLETON_SK, max_age=0)
        assert get_item_calls.calls == 3

    def test_prime_serves_a_written_snapshot_without_a_call(
        self, provider: SingletonProvider, declarations: Declarations, clock: Clock, get_item_calls: CallCount
    ) -> None:
        # Given a snapshot this environment just wrote
        written = Snapshot(found=True, values=declarations.initials(), version=9, fetched_at=clock())
        # When primed, then reads get it from the cache
        provider.prime(SINGLETON_SK, written)
        assert provider.cached(SINGLETON_SK) is written
        assert provider.get(SINGLETON_SK) is written
        assert get_item_calls.calls == 0

    def test_a_lookup_serves_the_cached_snapshot_until_its_age_ends_on_the_monotonic_clock(
        self,
        put_flags: Any,
        provider: SingletonProvider,
        declarations: Declarations,
        clock: Clock,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        # Given a snapshot fetched with a 30 s cache age, and a lookup of its name on a monotonic clock at 1000 s
        put_flags()
        snapshot = provider.get(SINGLETON_SK, max_age=30)
        monotonic = Clock(now=1000.0)
        monkeypatch.setattr(time, "monotonic", monotonic)
        lookup = provider.cache_lookup(SINGLETON_SK)
        # When asked, then it is Powertools' cached snapshot, until about 30 s later on the monotonic clock
        assert lookup() is snapshot is provider.cached(SINGLETON_SK)
        monotonic.advance(29)
        assert lookup() is snapshot
        monotonic.advance(2)
        assert lookup() is None
        # And an entry replaced (a write primed) is served at once, one expired or cleared is not
        other = Snapshot(found=True, values=declarations.initials(), version=9, fetched_at=clock())
        provider.prime(SINGLETON_SK, other, max_age=30)
        assert lookup() is other
        expire(provider)
        assert lookup() is None
        provider.prime(SINGLETON_SK, snapshot, max_age=30)
        assert lookup() is snapshot
        provider.clear_cache()
        assert lookup() is None


class TestDecoding:
    def test_a_found_item_is_decoded_with_its_bookkeeping(self, put_flags: Any, provider: SingletonProvider) -> None:
        # Given an item with values and bookkeeping
        put_flags(
            version=12,
            api_rate_limit_per_minute=900,
            trace_sample_rate=0.5,
            search_ranking="hybrid",
            updated_at={"S": "2024-01-01T00:00:00Z"},
            updated_by={"S": "arn:aws:iam::123456789012:user/alice"},
            maintenance_owner={"S": "nightly"},
            maintenance_deadline={"N": "1700003600"},
        )
        # When fetched
        snapshot = provider.get(SINGLETON_SK)
        # Then every value has its declared type and the bookkeeping is parsed
        assert snapshot.found and snapshot.fallen_back == ()
        assert snapshot.values["api_rate_limit_per_minute"] == 900
        assert snapshot.values["trace_sample_rate"] == 0.5
        assert snapshot.values["search_ranking"] == "hybrid"
        assert snapshot.version == 12
        assert snapshot.updated_by.endswith("alice")
        assert snapshot.maintenance_owner == "nightly"
        assert snapshot.maintenance_deadline == 1700003600.0

    def test_a_missing_item_gives_the_declared_fallbacks(
        self, ddb: Any, provider: SingletonProvider, declarations: Declarations, clock: Clock
    ) -> None:
        # Given an empty table
        # When fetched
        snapshot = provider.get(SINGLETON_SK)
        # Then the snapshot says so and carries the fail-closed fallbacks, no exception
        assert snapshot.found is False
        assert snapshot.version is None
        assert dict(snapshot.values) == declarations.fallbacks()
        assert snapshot.fetched_at == clock()

    def test_a_missing_attribute_gives_that_flags_fallback_and_a_warning(
        self, put_flags: Any, provider: SingletonProvider, declarations: Declarations, stdout: Output
    ) -> None:
        # Given an item without maintenance_mode, the others changed from their initials
        put_flags(maintenance_mode=None, signup_enabled=False, api_rate_limit_per_minute=42)
        # When fetched (and then read from cache)
        snapshot = provider.get(SINGLETON_SK)
        provider.get(SINGLETON_SK)
        # Then that flag is its fallback (maintenance ON) and the others are intact
        assert snapshot.values["maintenance_mode"] is True
        assert snapshot.values["signup_enabled"] is False
        assert snapshot.values["api_rate_limit_per_minute"] == 42
        assert snapshot.fallen_back == ("maintenance_mode",)
        # And one warning names it, once per fetch (not per read)
        (warning,) = warnings_in(stdout.records())
        assert warning["flag"] == "maintenance_mode"
        assert "missing" in warning["problem"]

    @pytest.mark.parametrize(
        ("flag", "stored", "problem"),
        [
            ("signup_enabled", {"S": "true"}, "not a bool"),
            ("maintenance_mode", {"N": "0"}, "not a bool"),
            ("api_rate_limit_per_minute", {"N": "12.5"}, "not a int"),
            ("api_rate_limit_per_minute", {"S": "600"}, "not a int"),
            ("trace_sample_rate", {"BOOL": False}, "not a float"),
            ("search_ranking", {"L": [{"S": "classic"}]}, "not a string"),
            ("api_rate_limit_per_minute", {"N": "0"}, "breaks rule 'min'"),
            ("api_rate_limit_per_minute", {"N": "100001"}, "breaks rule 'max'"),
            ("trace_sample_rate", {"N": "1.5"}, "breaks rule 'max'"),
            ("search_ranking", {"S": "random"}, "breaks rule 'enum'"),
            ("search_ranking", {"S": "x" * 300}, "breaks rule 'enum'"),
        ],
    )
    def test_an_unusable_stored_value_gives_that_flags_fallback(
        self,
        put_flags: Any,
        provider: SingletonProvider,
        declarations: Declarations,
        stdout: Output,
        flag: str,
        stored: dict[str, Any],
        problem: str,
    ) -> None:
        # Given an item where one flag holds the wrong type or breaks its constraint (written around the API)
        put_flags(**{flag: stored})
        # When fetched
        snapshot = provider.get(SINGLETON_SK)
        # Then that flag is its fallback and the others keep their stored values
        assert snapshot.values[flag] == declarations[flag].fallback
        assert snapshot.fallen_back == (flag,)
        others = {name: value for name, value in snapshot.values.items() if name != flag}
        assert others == {name: value for name, value in declarations.initials().items() if name != flag}
        # And one warning names the flag and the problem
        (warning,) = warnings_in(stdout.records())
        assert warning["flag"] == flag and problem in warning["problem"]

    def test_a_non_numeric_version_is_reported_as_none(self, put_flags: Any, provider: SingletonProvider) -> None:
        put_flags(schema_version={"S": "seven"})
        assert provider.get(SINGLETON_SK).version is None

    def test_get_multiple_returns_the_flag_values(
        self, put_flags: Any, provider: SingletonProvider, declarations: Declarations
    ) -> None:
        # Given a seeded item, when Powertools' get_multiple is used with the sort key as its path
        put_flags()
        # Then it returns every declared flag's value
        assert provider.get_multiple(SINGLETON_SK) == declarations.initials()


def test_a_dynamodb_error_surfaces_as_get_parameter_error(ddb: Any, provider: SingletonProvider) -> None:
    # Given DynamoDB refuses the call
    with Stubber(ddb) as stubber:
        stubber.add_client_error("get_item", service_error_code="AccessDeniedException", http_status_code=400)
        # When fetched, then Powertools' error is raised (the reader decides what to serve)
        with pytest.raises(GetParameterError, match="AccessDenied"):
            provider.get(SINGLETON_SK)
    # And nothing was cached
    assert provider.store == {}


def test_a_malformed_attribute_or_deadline_is_a_fallback_not_a_failed_fetch(declarations) -> None:
    # Given an item (as GetItem could return it) with an int flag holding a null number and a garbled deadline
    from singleton_flags.snapshot import Snapshot
    from tests.support.unit import flags_item

    item = flags_item(declarations, 3, api_rate_limit_per_minute={"N": None}, maintenance_deadline={"N": "soon"})
    # When it is decoded
    snapshot = Snapshot.from_item(item, declarations, fetched_at=0.0)
    # Then only that flag falls back; the rest of the item, and its version, are served
    assert snapshot.found and snapshot.version == 3
    assert snapshot.values["api_rate_limit_per_minute"] == declarations["api_rate_limit_per_minute"].fallback
    assert snapshot.fallen_back == ("api_rate_limit_per_minute",)
    assert snapshot.maintenance_deadline is None
