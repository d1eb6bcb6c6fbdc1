"""The propagation lag alarms, evaluated as synthesized (their metric math, period, datapoints to alarm and missing
data treatment) on datapoints as the readers and the writers print them (tests/support/alarm_eval.py).

A change served everywhere is no alarm; one reader still serving the old version past its bound (the cache age
for CACHED, plus max_stale for STALE) plus the margin is; no reader at all is none.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from singleton_flags_infra.monitoring import lag_periods
from singleton_flags_service.vocabulary import COMMITTED_VERSION, NO_VERSION, SERVED_VERSION
from tests.support.alarm_eval import Alarm, Datapoint
from tests.support.synth import Synth

pytestmark = pytest.mark.infra


def alarm(synth: Synth, name: str) -> Alarm:
    """The alarm whose construct id is ``name`` (its logical id: the construct path plus CDK's hash)."""
    pattern = re.compile(rf"(?:[A-Za-z]+)?Monitoring{name}[0-9A-F]{{8}}")
    (found,) = [
        resource["Properties"]
        for logical_id, resource in synth.resources("AWS::CloudWatch::Alarm").items()
        if pattern.fullmatch(logical_id)
    ]
    return Alarm.from_properties(found)


class Fleet:
    """Datapoints of one stage: commits, and each reader's record once a minute."""

    def __init__(self, synth: Synth) -> None:
        self.namespace = f"SingletonFlags/{synth.config.stage}"
        self.points: list[Datapoint] = []

    def commit(self, minute: int, version: int) -> None:
        self.points.append(
            Datapoint(minute, self.namespace, COMMITTED_VERSION, {"service": "singleton-flags"}, version)
        )

    def serve(self, minutes: range, reason: str, version: int) -> None:
        for minute in minutes:
            self.points.append(Datapoint(minute, self.namespace, SERVED_VERSION, {"reason": reason}, version))


@pytest.fixture
def fleet(variant: Synth) -> Fleet:
    return Fleet(variant)


def minutes(synth: Synth) -> dict[str, int]:
    config = synth.config
    return {
        "fresh": lag_periods(config.cache_max_age_seconds),
        "stale": lag_periods(config.cache_max_age_seconds + config.max_stale_seconds),
    }


def test_the_alarms_read_as_propagation_lag_and_treat_missing_data_as_not_breaching(variant: Synth) -> None:
    for name in ("PropagationLag", "PropagationLagWhileStale"):
        found = alarm(variant, name)
        assert found.treat_missing == "notBreaching"
        assert found.period == 60
        assert found.evaluation_periods == found.datapoints_to_alarm + 1


class TestPropagationLag:
    def test_a_change_served_everywhere_is_no_alarm(self, variant: Synth, fleet: Fleet) -> None:
        # Given version 4 committed at minute 10, and three readers, one of which reads it a minute late
        fleet.commit(0, 3)
        fleet.commit(10, 4)
        fleet.serve(range(11), "CACHED", 3)
        fleet.serve(range(10), "STATIC", 3)
        fleet.serve(range(10, 30), "STATIC", 4)
        fleet.serve(range(11, 12), "CACHED", 3)  # its record was printed before its cache expired
        fleet.serve(range(11, 30), "CACHED", 4)
        fleet.serve(range(30), "STALE", 4)  # a reader whose refreshes fail, serving the newest version
        # Then neither alarm fires, minute by minute
        for name in ("PropagationLag", "PropagationLagWhileStale"):
            assert set(alarm(variant, name).states(fleet.points, range(30))) == {"OK"}

    def test_one_cached_reader_still_serving_the_old_version_past_the_bound_is_an_alarm(
        self, variant: Synth, fleet: Fleet
    ) -> None:
        # Given version 5 committed at minute 10, a reader serving it and one still serving version 4 from its cache
        fleet.commit(10, 5)
        fleet.serve(range(30), "CACHED", 4)
        fleet.serve(range(11, 30), "STATIC", 5)
        lag = alarm(variant, "PropagationLag")
        states = lag.states(fleet.points, range(30))
        # Then PropagationLag fires once the bound plus the margin has passed, not before
        late = minutes(variant)["fresh"]
        assert states[10 + late - 1] == "OK"
        assert states[10 + late] == "ALARM"

    def test_a_lone_reader_left_behind_is_an_alarm(self, variant: Synth, fleet: Fleet) -> None:
        # Given one reader only, still serving version 4 from its cache after version 5 was committed
        fleet.commit(10, 5)
        fleet.serve(range(30), "CACHED", 4)
        # Then the committed version alone tells it is behind
        late = minutes(variant)["fresh"]
        assert alarm(variant, "PropagationLag").state(fleet.points, 10 + late) == "ALARM"

    def test_a_reader_serving_the_fallbacks_is_behind(self, variant: Synth, fleet: Fleet) -> None:
        fleet.commit(10, 5)
        fleet.serve(range(30), "DEFAULT", NO_VERSION)
        fleet.serve(range(11, 30), "CACHED", 5)
        late = minutes(variant)["fresh"]
        assert alarm(variant, "PropagationLag").state(fleet.points, 10 + late) == "ALARM"

    def test_no_readers_is_no_alarm(self, variant: Synth, fleet: Fleet) -> None:
        # Given commits and no reader at all (an idle fleet prints nothing)
        fleet.commit(10, 5)
        fleet.commit(12, 6)
        # Then no alarm, whatever the minute
        for name in ("PropagationLag", "PropagationLagWhileStale"):
            assert set(alarm(variant, name).states(fleet.points, range(30))) == {"OK"}

    def test_a_stale_reader_within_max_stale_is_no_alarm_of_either(self, variant: Synth, fleet: Fleet) -> None:
        # Given version 5 committed, one reader serving it, one serving version 4 as STALE (refreshes failing)
        fleet.commit(10, 5)
        fleet.serve(range(40), "STATIC", 5)
        stale_for = minutes(variant)["stale"] - 1
        fleet.serve(range(10, 10 + stale_for), "STALE", 4)
        # Then PropagationLag does not count it, and PropagationLagWhileStale waits for max_stale
        assert set(alarm(variant, "PropagationLag").states(fleet.points, range(40))) == {"OK"}
        assert set(alarm(variant, "PropagationLagWhileStale").states(fleet.points, range(40))) == {"OK"}

    def test_a_stale_reader_past_the_cache_age_plus_max_stale_is_an_alarm(self, variant: Synth, fleet: Fleet) -> None:
        # Given version 5 committed, one reader serving it, one still serving version 4 as STALE past its bound
        fleet.commit(10, 5)
        fleet.serve(range(40), "STATIC", 5)
        fleet.serve(range(10, 40), "STALE", 4)
        late = minutes(variant)["stale"]
        states = alarm(variant, "PropagationLagWhileStale").states(fleet.points, range(40))
        # Then PropagationLagWhileStale fires after the cache age plus max_stale plus the margin, not before
        assert states[10 + late - 1] == "OK"
        assert states[10 + late] == "ALARM"


def test_the_dashboard_shows_committed_vs_served(variant: Synth) -> None:
    (dashboard,) = variant.resources("AWS::CloudWatch::Dashboard").values()
    body: Any = dashboard["Properties"]["DashboardBody"]
    text = body if isinstance(body, str) else str(body)
    assert "Committed vs served versions" in text and COMMITTED_VERSION in text and SERVED_VERSION in text


def test_changes_every_minute_each_served_within_the_cache_age_are_no_alarm(variant: Synth, fleet: Fleet) -> None:
    # Given a version committed every minute, and readers that each printed the previous version earlier in the
    # minute of each commit and the new one from the next minute on
    for minute in range(10, 30):
        version = minute - 9
        fleet.commit(minute, version)
        fleet.serve(range(minute, minute + 1), "CACHED", version - 1)
        fleet.serve(range(minute, minute + 1), "STATIC", version - 1)
    # Then the minutes holding a commit count as not late: no alarm
    assert set(alarm(variant, "PropagationLag").states(fleet.points, range(40))) == {"OK"}
