"""The testing helper: an application's unit tests set flags in memory, read through the real client."""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags.declarations import Declarations
from singleton_flags.testing import InMemoryFlags
from singleton_flags_service.errors import InvalidValue
from singleton_flags_service.vocabulary import DEFAULT, STALE, STATIC
from tests.support.unit import Clock


@pytest.fixture
def singleton_flags_declarations(declarations: Declarations) -> Declarations:
    """What an application's conftest.py does: name its declarations (here the sample ones)."""
    return declarations


def test_the_fixture_starts_at_the_initial_values_and_set_is_read_at_once(singleton_flags: InMemoryFlags) -> None:
    # Given the plugin's fixture, at the declared initial values
    assert singleton_flags.get_bool("signup_enabled") is True
    # When a test switches maintenance on
    singleton_flags.set(maintenance_mode=True)
    # Then the next read sees it, fetched (no DynamoDB anywhere)
    details = singleton_flags.details("maintenance_mode")
    assert (details.value, details.reason) == (True, STATIC)


def test_values_are_checked_against_their_declarations(declarations: Declarations) -> None:
    flags = InMemoryFlags(declarations, api_rate_limit_per_minute=120)
    assert flags.get_int("api_rate_limit_per_minute") == 120
    with pytest.raises(InvalidValue):
        flags.set(api_rate_limit_per_minute=0)
    with pytest.raises(KeyError):
        flags.set(no_such_flag=True)


def test_a_failing_table_is_stale_then_the_fallbacks(declarations: Declarations, clock: Clock) -> None:
    # Given an application's flags in memory, read once
    flags = InMemoryFlags(declarations, max_stale=60, clock=clock)
    flags.all()
    # When the table fails
    flags.fail()
    clock.advance(1)
    # Then the last good values are served as STALE, and after max_stale the fallbacks (maintenance ON)
    assert flags.details("maintenance_mode").reason == STALE
    clock.advance(120)
    fallen = flags.details("maintenance_mode")
    assert (fallen.value, fallen.reason) == (True, DEFAULT)
    # And once it recovers (after the back-off), the stored values again
    flags.recover()
    clock.advance(60)
    assert flags.details("maintenance_mode").reason == STATIC


def test_a_deleted_item_or_a_hand_edit_serves_fallbacks(declarations: Declarations) -> None:
    flags = InMemoryFlags(declarations)
    flags.table.put_attribute("signup_enabled", {"S": "yes"})
    assert flags.details("signup_enabled").reason == DEFAULT
    assert flags.details("ai_search_enabled").reason == STATIC
    flags.delete()
    assert flags.all() == declarations.fallbacks()


def test_the_plugin_is_registered_for_pytest(pytestconfig: Any) -> None:
    assert pytestconfig.pluginmanager.has_plugin("singleton_flags")
