"""What ``SingletonProvider`` relies on inside Powertools' ``BaseProvider`` cache, pinned to the version it was
checked against.

The provider reads Powertools' cache from the inside for a cached read (``store``, its ``ExpirableValue`` entries,
``_build_cache_key``): these tests fail when the installed Powertools is another version, or when any of that
changes name or behaviour. On a new version: re-read ``aws_lambda_powertools/utilities/parameters/base.py``,
check each rule below against it, then update ``CHECKED_VERSION``.
"""

from __future__ import annotations

import importlib.metadata
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parameters.base import BaseProvider, ExpirableValue

from singleton_flags.declarations import Declarations
from singleton_flags.keys import SINGLETON_SK
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags.snapshot import Snapshot
from singleton_flags.vocabulary import CACHED
from tests.support.unit import Clock, build_reader

CHECKED_VERSION = "3.37.0"
REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements.txt"


def test_the_installed_powertools_is_the_version_the_contract_was_checked_against() -> None:
    assert importlib.metadata.version("aws-lambda-powertools") == CHECKED_VERSION


def test_the_requirements_pin_that_version() -> None:
    pin = re.search(r"^aws-lambda-powertools(?:\[[^\]]*\])?==(\S+)", REQUIREMENTS.read_text(), re.MULTILINE)
    assert pin is not None and pin.group(1) == CHECKED_VERSION


def test_get_caches_the_value_under_build_cache_key_as_an_expirable_value_with_a_naive_ttl(
    put_flags: Any, provider: SingletonProvider
) -> None:
    # Given a fetch with a 30 s cache age
    put_flags()
    snapshot = provider.get(SINGLETON_SK, max_age=30)
    # Then the store is a dict holding one entry, under the key _build_cache_key(name=...) makes
    key = provider._build_cache_key(name=SINGLETON_SK)
    assert type(provider.store) is dict and list(provider.store) == [key]
    # And the entry is an ExpirableValue: the value untouched, the ttl a naive datetime ~30 s from now
    entry = provider.store[key]
    assert type(entry) is ExpirableValue and entry._fields == ("value", "ttl")
    assert entry.value is snapshot
    assert type(entry.ttl) is datetime and entry.ttl.tzinfo is None
    assert timedelta(seconds=29) < entry.ttl - datetime.now() <= timedelta(seconds=30)


def test_an_entry_is_served_while_its_ttl_is_not_before_now_and_a_refresh_makes_a_new_ttl_object(
    put_flags: Any, provider: SingletonProvider
) -> None:
    # Given a cached entry
    put_flags(version=1)
    first = provider.get(SINGLETON_SK, max_age=30)
    key = provider._build_cache_key(name=SINGLETON_SK)
    # When its ttl is a second in the past
    provider.store[key] = provider.store[key]._replace(ttl=datetime.now() - timedelta(seconds=1))
    # Then Powertools no longer serves it, and its get replaces the entry (a new entry, a ttl object of its own)
    assert not provider.has_not_expired_in_cache(key)
    expired = provider.store[key]
    put_flags(version=2)
    second = provider.get(SINGLETON_SK, max_age=30)
    assert second is not first and second.version == 2
    assert provider.store[key] is not expired and provider.store[key].ttl is not expired.ttl


def test_add_to_cache_makes_a_new_entry_with_a_new_ttl_and_clear_cache_empties_the_store(
    provider: SingletonProvider, declarations: Declarations, clock: Clock
) -> None:
    snapshot = Snapshot(found=True, values=declarations.initials(), version=1, fetched_at=clock())
    key = provider._build_cache_key(name=SINGLETON_SK)
    provider.add_to_cache(key=key, value=snapshot, max_age=30)
    first = provider.store[key]
    provider.add_to_cache(key=key, value=snapshot, max_age=30)
    assert provider.store[key] is not first and provider.store[key].ttl is not first.ttl
    provider.add_to_cache(key=key, value=snapshot, max_age=0)  # an age of 0 caches nothing: the entry stays
    assert provider.store[key].value is snapshot
    provider.clear_cache()
    assert provider.store == {}


def test_a_cached_read_takes_the_fast_path_never_base_provider_get(
    put_flags: Any, provider: SingletonProvider, declarations: Declarations, clock: Clock, monkeypatch: Any
) -> None:
    # Given a reader whose first read fetched the item
    reader: FlagReader = build_reader(provider, declarations, clock)
    put_flags(version=4)
    reader.read()
    # When BaseProvider.get would raise if called
    monkeypatch.setattr(BaseProvider, "get", lambda *_, **__: pytest.fail("a cached read called BaseProvider.get"))
    # Then cached reads are answered from the cache entry, by the provider's lookup alone
    assert provider.cached(SINGLETON_SK) is provider.store[provider._build_cache_key(name=SINGLETON_SK)].value
    assert [(state.reason, state.version) for state in (reader.read(), reader.read())] == [(CACHED, 4)] * 2
