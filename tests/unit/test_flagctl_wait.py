"""``flagctl set --wait`` against a deployed stage: CloudWatch's GetMetricData on the readers' ServedVersion, in
CloudWatch's JSON protocol, signed for ``monitoring`` in the API's region; exit 0 once the readers heard from since
the change serve its version, 7 when that cannot be known in time, 5 when CloudWatch refuses."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest

from flagctl.cli import main
from flagctl.client import Answer, Outgoing

URL = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod/"
CHANGED = {"applied": True, "version": 7, "changed": {"signup_enabled": {"old": False, "new": True}}, "flags": {}}


class Scripted:
    """Answers in order: the PATCH's, then CloudWatch's."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.sent: list[Outgoing] = []

    def __call__(self, outgoing: Outgoing) -> Answer:
        self.sent.append(outgoing)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def metric_data(*periods: tuple[float, dict[str, float]]) -> Answer:
    """GetMetricData's answer: per period start, the oldest version per reason."""
    results = []
    for reason in ("STATIC", "CACHED", "STALE", "DEFAULT"):
        stamps = [(start, values[reason]) for start, values in periods if reason in values]
        results.append(
            {
                "Id": reason.lower(),
                "Timestamps": [start for start, _ in stamps],
                "Values": [value for _, value in stamps],
                "StatusCode": "Complete",
            }
        )
    return Answer(200, {}, {"MetricDataResults": results})


def run(transport: Scripted, *wait: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["--url", URL, "set", "signup_enabled=true", "--reason", "r", "--wait", *wait]
    return main(argv, transport=transport, out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def no_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_it_asks_cloudwatch_for_the_oldest_served_version_per_reason_signed_for_monitoring() -> None:
    # Given readers that, a minute after the change, all serve its version
    later = time.time() + 60
    transport = Scripted(Answer(200, {}, CHANGED), metric_data((later, {"STATIC": 7, "CACHED": 7})))
    # When
    code, out, err = run(transport)
    # Then one GetMetricData call, in CloudWatch's JSON protocol, to the API's region, signed for monitoring
    assert code == 0, err
    _, asked = transport.sent
    assert (asked.method, asked.url) == ("POST", "https://monitoring.eu-west-1.amazonaws.com/")
    assert asked.headers["X-Amz-Target"] == "GraniteServiceVersion20100801.GetMetricData"
    assert asked.headers["Content-Type"] == "application/x-amz-json-1.0"
    assert "/eu-west-1/monitoring/aws4_request" in asked.headers["Authorization"]
    body = json.loads(asked.body or b"")
    stats = [query["MetricStat"] for query in body["MetricDataQueries"]]
    assert {stat["Metric"]["Namespace"] for stat in stats} == {"SingletonFlags/prod"}
    assert {stat["Metric"]["MetricName"] for stat in stats} == {"ServedVersion"}
    assert sorted(stat["Metric"]["Dimensions"][0]["Value"] for stat in stats) == sorted(
        ["STATIC", "CACHED", "STALE", "DEFAULT"]
    )
    assert {(stat["Stat"], stat["Period"]) for stat in stats} == {("Minimum", 60)}
    assert "version 7 is served by every reader heard from since the change (2)" in out


def test_a_reader_still_serving_the_old_version_at_the_timeout_is_not_seen() -> None:
    later = time.time() + 60
    transport = Scripted(Answer(200, {}, CHANGED), metric_data((later, {"CACHED": 7, "STALE": 6})))
    code, _, err = run(transport, "--wait-timeout", "0.001")
    assert code == 7
    assert "version 7 is applied, but not seen served within 0.001 s" in err
    assert "readers heard from since the change still serve version 6" in err


def test_records_from_before_the_change_do_not_count() -> None:
    # Given CloudWatch holding only a period that began before the change (readers serving the old version then)
    earlier = time.time() - 120
    transport = Scripted(Answer(200, {}, CHANGED), metric_data((earlier, {"CACHED": 6})))
    # Then nothing is known of the readers since the change
    code, _, err = run(transport, "--wait-timeout", "0.001")
    assert code == 7
    assert "no reader was heard from since the change (idle readers print nothing), so it cannot be known" in err


def test_cloudwatch_refusing_the_call_is_a_server_error_naming_the_permission() -> None:
    refused = Answer(400, {}, {"__type": "AccessDeniedException", "message": "not authorized"})
    transport = Scripted(Answer(200, {}, CHANGED), refused)
    code, _, err = run(transport, "--wait-timeout", "0.001")
    assert code == 5
    assert "cloudwatch:GetMetricData" in err


def test_a_url_without_a_stage_needs_a_namespace() -> None:
    transport = Scripted(Answer(200, {}, CHANGED))
    out, err = io.StringIO(), io.StringIO()
    argv = ["--url", "https://flags.example.com", "set", "a=1", "--reason", "r", "--wait"]
    assert main(argv, transport=transport, out=out, err=err) == 2
    assert "cannot tell the stage of https://flags.example.com: give --wait-namespace" in err.getvalue()


def test_wait_options_are_set_options_only(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        main(["--url", URL, "get", "--wait"])
