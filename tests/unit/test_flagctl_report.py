"""``flagctl report``: per flag its declared lifecycle, its last change and its reads in the last N days; a flag
never read by name in the window is a stale candidate, unless it is permanent; unchanged alone never makes one.
Locally the reads are the runner's ``GET /_reads``; deployed, CloudWatch Logs Insights over the readers' records."""

from __future__ import annotations

import io
import json
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from flagctl.cli import main
from flagctl.client import Answer, Outgoing
from local.api import LocalApi
from local.gateway import Request
from singleton_flags_infra.config import load_config

LOCAL = "http://127.0.0.1:3000"
DEPLOYED = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod/"
DECLARED = [
    # a kill switch: permanent by default (its fallback differs from its initial value), never read
    {"name": "signup_enabled", "state": "active", "permanent": True, "owner": "growth"},
    # a release toggle, never read: the candidate
    {"name": "checkout_v2", "state": "active", "permanent": False, "owner": "payments"},
    # a release toggle read, though unchanged since the seed: not a candidate
    {"name": "search_ranking", "state": "deprecated", "deprecated_on": "2026-11-01", "permanent": False},
]
HISTORY = {
    "records": [
        {"version": 3, "at": "2026-11-20T10:00:00Z", "actor": "ops", "kind": "change", "changes": {"checkout_v2": {}}},
        {
            "version": 0,
            "at": "2026-01-01T00:00:00Z",
            "actor": "cloudformation:app",
            "kind": "seed",
            "changes": {"signup_enabled": {}, "checkout_v2": {}, "search_ranking": {}},
        },
    ],
    "next_cursor": None,
}


class Api:
    """Answers by path: the declarations, the history, the runner's reads; records what was sent."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.sent: list[Outgoing] = []

    def __call__(self, outgoing: Outgoing) -> Answer:
        self.sent.append(outgoing)
        target = outgoing.headers.get("X-Amz-Target") or urlsplit(outgoing.url).path.rsplit("/prod", 1)[-1]
        answer = self.answers[target]
        if isinstance(answer, list):
            answer = answer.pop(0)
        return Answer(200, {}, answer)


def report(api: Api, *argv: str, url: str = LOCAL) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--url", url, "report", *argv], transport=api, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def local_api(reads: dict[str, Any]) -> Api:
    return Api(
        {
            "/flags/declarations": {"declarations": DECLARED},
            "/flags/history": HISTORY,
            "/_reads": {"since": time.time() - 3600, "flags": reads},
        }
    )


def test_report_marks_a_never_read_flag_and_never_a_permanent_one() -> None:
    # Given reads of search_ranking only, and reads of every flag at once (which name none)
    now = time.time()
    api = local_api(
        {"search_ranking": {"reads": 4, "last_read_at": now}, "*": {"reads": 9, "last_read_at": now}},
    )
    # When
    code, out, err = report(api, "--json", "--days", "7")
    # Then
    assert code == 0, err
    body = json.loads(out)
    flags = {flag["name"]: flag for flag in body["flags"]}
    assert [name for name, flag in flags.items() if flag["stale_candidate"]] == ["checkout_v2"]
    assert flags["signup_enabled"]["reads"] == 0 and flags["signup_enabled"]["stale_candidate"] is False
    assert flags["search_ranking"]["reads"] == 4  # unchanged since the seed, read: no candidate
    assert flags["checkout_v2"]["last_change"] == {
        "version": 3,
        "at": "2026-11-20T10:00:00Z",
        "actor": "ops",
        "kind": "change",
    }
    assert flags["search_ranking"]["last_change"]["version"] == 0
    assert body["reads_of_every_flag"] == 9 and body["counts_are_lower_bounds"] is True


def test_the_table_says_the_counts_are_lower_bounds_and_names_the_candidate() -> None:
    code, out, _ = report(local_api({}))
    assert code == 0
    assert "counts are lower bounds" in out
    (line,) = [line for line in out.splitlines() if line.startswith("checkout_v2")]
    assert "STALE CANDIDATE" in line
    (line,) = [line for line in out.splitlines() if line.startswith("signup_enabled")]
    assert "permanent" in line and "STALE" not in line


def test_a_deployed_stage_without_log_groups_says_what_its_reads_need_and_marks_nothing() -> None:
    api = Api({"/flags/declarations": {"declarations": DECLARED}, "/flags/history": HISTORY})
    code, out, _ = report(api, "--json", url=DEPLOYED)
    body = json.loads(out)
    assert code == 0
    assert "logs:StartQuery" in body["reads_unknown"] and "--log-group" in body["reads_unknown"]
    assert all(flag["reads"] is None and not flag["stale_candidate"] for flag in body["flags"])


@pytest.fixture
def no_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")


@pytest.mark.usefixtures("no_metadata")
def test_deployed_reads_come_from_logs_insights_over_the_readers_served_version_records() -> None:
    # Given Logs Insights summing the readers' flag_reads: search_ranking read, the others not
    row = [{"field": "search_ranking", "value": "12"}, {"field": "checkout_v2", "value": "0"}]
    api = Api(
        {
            "/flags/declarations": {"declarations": DECLARED},
            "/flags/history": HISTORY,
            "Logs_20140328.StartQuery": {"queryId": "q-1"},
            "Logs_20140328.GetQueryResults": [{"status": "Running"}, {"status": "Complete", "results": [row]}],
        }
    )
    # When
    code, out, err = report(api, "--json", "--days", "14", "--log-group", "/aws/lambda/read", url=DEPLOYED)
    # Then one query over the given log group, in the logs JSON protocol, signed for logs in the API's region
    assert code == 0, err
    start = next(o for o in api.sent if o.headers.get("X-Amz-Target") == "Logs_20140328.StartQuery")
    assert start.url == "https://logs.eu-west-1.amazonaws.com/"
    assert start.headers["Content-Type"] == "application/x-amz-json-1.1"
    assert "/eu-west-1/logs/aws4_request" in start.headers["Authorization"]
    asked = json.loads(start.body or b"")
    assert asked["logGroupNames"] == ["/aws/lambda/read"]
    assert asked["endTime"] - asked["startTime"] == pytest.approx(14 * 86400, abs=5)
    assert "filter ispresent(ServedVersion)" in asked["queryString"]
    assert "sum(`flag_reads.checkout_v2`)" in asked["queryString"]
    flags = {flag["name"]: flag for flag in json.loads(out)["flags"]}
    assert (flags["search_ranking"]["reads"], flags["search_ranking"]["stale_candidate"]) == (12, False)
    assert flags["checkout_v2"]["stale_candidate"] is True
    assert flags["signup_enabled"]["stale_candidate"] is False


class AnsweringFunctions:
    def invoke(self, function: str, event: Any, request_id: str | None = None) -> Any:
        return {"statusCode": 404 if event["path"].endswith("nope") else 200, "headers": {}, "body": "{}"}


def test_the_runner_counts_the_reads_its_read_function_answered_per_flag() -> None:
    # Given the runner, and reads of one flag (by GET and OFREP), of every flag, and of an undeclared name (404)
    api = LocalApi(AnsweringFunctions(), load_config(), {})  # type: ignore[arg-type]
    for method, path in [
        ("GET", "/flags/signup_enabled"),
        ("POST", "/ofrep/v1/evaluate/flags/signup_enabled"),
        ("GET", "/flags"),
        ("GET", "/flags/nope"),
    ]:
        api.handle(Request(method=method, raw_path=path, query="", headers=[], body=b"{}"))
    # When
    answer = api.handle(Request(method="GET", raw_path="/_reads", query="", headers=[], body=b""))
    # Then
    body = json.loads(answer.body)
    assert {name: tally["reads"] for name, tally in body["flags"].items()} == {"signup_enabled": 2, "*": 1}
    assert body["since"] <= time.time()
