"""The unaudited-write alarm as synthesized: the change-events function's count of writes to the flags item that
no audit record accounts for, alarmed at the first one, to the stage's alarm topic like every other alarm.
"""

from __future__ import annotations

import pytest

from tests.infra.test_infra_events import alarm_on
from tests.support.synth import Synth

pytestmark = pytest.mark.infra


def test_an_unaudited_write_to_the_flags_item_raises_its_alarm(synth: Synth) -> None:
    alarm = alarm_on(synth, "SingletonFlags/prod", "UnauditedWrites")
    assert (alarm["Threshold"], alarm["ComparisonOperator"], alarm["Statistic"], alarm["Period"]) == (
        0,
        "GreaterThanThreshold",
        "Sum",
        300,
    )
    assert (alarm["EvaluationPeriods"], alarm["TreatMissingData"]) == (1, "notBreaching")
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "singleton-flags"}]
    assert "without an audit record" in alarm["AlarmDescription"]
    (alarm_id,) = [
        lid
        for lid, resource in synth.resources("AWS::CloudWatch::Alarm").items()
        if resource["Properties"].get("MetricName") == "UnauditedWrites"
    ]
    assert "UnauditedFlagsWrite" in alarm_id
    # like every alarm of the stack, it notifies (when the stage has an alarm topic)
    other = alarm_on(synth, "SingletonFlags/prod", "BreakGlassUsed")
    assert alarm.get("AlarmActions") == other.get("AlarmActions")
