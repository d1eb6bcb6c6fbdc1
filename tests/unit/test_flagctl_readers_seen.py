"""Whether readers configured for an item were seen in the readers' telemetry within the last N days (what
finalising a migration asks): locally the runner's ``GET /_served`` (each reader with its item and last read);
deployed, CloudWatch Logs Insights over the readers' ServedVersion records (their ``item`` property). A reader that
names no item counts as seen; with no source at all the answer is unknown, and a caller refuses on it too."""

from __future__ import annotations

import calendar
import json
import time
from typing import Any

import pytest

from flagctl.client import Answer, FlagsClient, Outgoing
from flagctl.errors import BAD_INPUT, FlagctlError
from flagctl.insights import logs_insights
from flagctl.readers_seen import (
    DAY_SECONDS,
    insights_query,
    logs_insights_source,
    readers_seen,
    runner_source,
    source_for,
)
from local.api import LocalApi
from local.functions import load_module
from local.gateway import Request
from singleton_flags_infra.config import load_config
from singleton_flags_service.contract import HANDLERS, READ_FUNCTION
from singleton_flags_service.observability import ReadCounter

LOCAL = "http://127.0.0.1:3000"
DEPLOYED = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod/"
V1, V2 = "FLAGS#V1", "FLAGS#V2"
START_QUERY, GET_RESULTS = "Logs_20140328.StartQuery", "Logs_20140328.GetQueryResults"


class Answers:
    """Answers by path (or by X-Amz-Target for CloudWatch Logs), in order when given a list; records what was sent."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.sent: list[Outgoing] = []

    def __call__(self, outgoing: Outgoing) -> Answer:
        self.sent.append(outgoing)
        target = outgoing.headers.get("X-Amz-Target") or outgoing.url.removeprefix(LOCAL)
        answer = self.answers[target]
        if isinstance(answer, list):
            answer = answer.pop(0)
        return Answer(200, {}, answer)


def runner(readers: list[dict[str, Any]]) -> FlagsClient:
    return FlagsClient(LOCAL, transport=Answers({"/_served": {"readers": readers}}))


class TestTheLocalRunner:
    def test_a_reader_configured_for_the_item_that_read_within_the_window_is_seen(self) -> None:
        # Given the runner's readers: one of V1 read an hour ago, one of V1 read 8 days ago, one of V2 read now
        now = time.time()
        client = runner(
            [
                {"function": "read", "item": V1, "reason": "STATIC", "version": 4, "last_read_at": now - 3600},
                {"function": "old", "item": V1, "reason": "CACHED", "version": 3, "last_read_at": now - 8 * 86400},
                {"function": "new", "item": V2, "reason": "STATIC", "version": 4, "last_read_at": now},
            ]
        )
        # When asked about V1 over 7 days
        seen = readers_seen(V1, 7, runner_source(client))
        # Then the V1 reader of the window is seen (the older one and the V2 reader are not counted)
        assert (seen.seen, seen.unknown, seen.blocks) == (True, False, True)
        assert (seen.records, seen.unnamed, seen.last_seen) == (1, 0, pytest.approx(now - 3600))
        assert "readers configured for FLAGS#V1 were seen in the last 7 day(s): 1 record(s)" in seen.words()

    def test_no_reader_of_the_item_in_the_window_is_not_seen(self) -> None:
        now = time.time()
        client = runner(
            [
                {"function": "read", "item": V2, "reason": "STATIC", "version": 4, "last_read_at": now},
                {"function": "old", "item": V1, "reason": "STATIC", "version": 3, "last_read_at": now - 3 * 86400},
            ]
        )
        seen = readers_seen(V1, 2, runner_source(client))
        assert (seen.seen, seen.unknown, seen.blocks, seen.records) == (False, False, False, 0)
        assert seen.words().startswith("no reader configured for FLAGS#V1 was seen in the last 2 day(s)")

    def test_a_reader_that_names_no_item_counts_as_seen(self) -> None:
        # Given a reader older than the item property (its answer names no item)
        client = runner([{"function": "read", "reason": "STATIC", "version": 4, "last_read_at": time.time()}])
        seen = readers_seen(V2, 1, runner_source(client))
        assert (seen.seen, seen.records, seen.unnamed) == (True, 1, 1)
        assert "1 of them name no item" in seen.words()

    def test_an_answer_that_is_not_the_runners_is_an_error_not_an_empty_list(self) -> None:
        client = FlagsClient(LOCAL, transport=Answers({"/_served": {"message": "no such route"}}))
        with pytest.raises(FlagctlError, match="did not answer its readers"):
            readers_seen(V1, 1, runner_source(client))

    def test_the_runner_answers_the_item_its_read_function_is_configured_for(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Given the runner whose read function is configured for V2, and one read answered
        counter = ReadCounter(emit=lambda *count: None, served=lambda *record: None, item=V2)
        counter.record("STATIC", version=5, refreshed=True)
        monkeypatch.setattr(load_module(HANDLERS[READ_FUNCTION].rpartition(".")[0]), "COUNTER", counter)
        api = LocalApi(AnsweringFunctions(), load_config(), {})  # type: ignore[arg-type]
        api.handle(Request(method="GET", raw_path="/flags", query="", headers=[], body=b""))
        # When GET /_served is asked, directly and through the check
        (reader,) = json.loads(api.handle(request("/_served")).body)["readers"]
        through = FlagsClient(LOCAL, transport=lambda outgoing: answer_of(api, outgoing))
        # Then the reader names the item its read function is configured for, and is seen as its reader only
        assert (reader["function"], reader["item"], reader["version"]) == (READ_FUNCTION, V2, 5)
        assert readers_seen(V2, 1, runner_source(through)).seen is True
        assert readers_seen(V1, 1, runner_source(through)).seen is False


class AnsweringFunctions:
    def invoke(self, function: str, event: Any, request_id: str | None = None) -> Any:
        return {"statusCode": 200, "headers": {}, "body": "{}"}


def request(path: str) -> Request:
    return Request(method="GET", raw_path=path, query="", headers=[], body=b"")


def answer_of(api: LocalApi, outgoing: Outgoing) -> Answer:
    response = api.handle(request(outgoing.url.removeprefix(LOCAL)))
    return Answer(response.status, dict(response.headers), json.loads(response.body))


def insights(results: Any, *statuses: str) -> Answers:
    return Answers(
        {
            START_QUERY: {"queryId": "q-1"},
            GET_RESULTS: [*({"status": status} for status in statuses), {"status": "Complete", "results": results}],
        }
    )


def row(**cells: str) -> list[list[dict[str, str]]]:
    return [[{"field": field, "value": value} for field, value in cells.items()]]


class TestTheDeployedStage:
    @pytest.fixture
    def credentials(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")

    @pytest.mark.usefixtures("credentials")
    def test_the_records_naming_the_item_are_counted_by_logs_insights_signed_for_logs(self) -> None:
        # Given Logs Insights counting 3 records of the window, 2 of them naming the item, the last at 10:00 UTC
        transport = insights(row(records="3", named="2", last_seen="2026-12-01 10:00:00.000"))
        client = FlagsClient(DEPLOYED, transport=transport)
        # When the check asks it over the readers' log groups, for V1 over 30 days
        seen = readers_seen(V1, 30, source_for(client, ["/aws/lambda/read", "/aws/lambda/write"], transport))
        # Then one query in the logs JSON protocol, in the API's region, signed for logs, over the window
        start = next(sent for sent in transport.sent if sent.headers.get("X-Amz-Target") == START_QUERY)
        assert start.url == "https://logs.eu-west-1.amazonaws.com/"
        assert "/eu-west-1/logs/aws4_request" in start.headers["Authorization"]
        asked = json.loads(start.body or b"")
        assert asked["logGroupNames"] == ["/aws/lambda/read", "/aws/lambda/write"]
        assert asked["endTime"] - asked["startTime"] == pytest.approx(30 * DAY_SECONDS, abs=5)
        assert asked["queryString"] == insights_query(V1)
        assert 'filter ispresent(ServedVersion) and (item = "FLAGS#V1" or not ispresent(item))' in asked["queryString"]
        # And the readers are seen: every record counted, the one naming no item among them, the last one's time
        assert (seen.seen, seen.records, seen.unnamed) == (True, 3, 1)
        assert seen.last_seen == calendar.timegm((2026, 12, 1, 10, 0, 0, 0, 0, 0))
        assert "the last at 2026-12-01T10:00:00Z" in seen.words()

    def test_no_record_in_the_window_is_not_seen_after_the_query_completes(self) -> None:
        # Given a query still running twice, then complete with no row (a stats over no record)
        transport = insights([], "Scheduled", "Running")
        slept: list[float] = []
        source = logs_insights_source(
            logs_insights("eu-west-1", ["/aws/lambda/read"], lambda o: o, transport, sleep=slept.append), 1
        )
        seen = readers_seen(V1, 7, source)
        assert (seen.seen, seen.unknown, seen.blocks, seen.records, seen.last_seen) == (False, False, False, 0, None)
        assert len(slept) == 2

    def test_a_count_of_zero_is_not_seen_and_epoch_milliseconds_are_read_as_a_time(self) -> None:
        zero = logs_insights_source(
            logs_insights("eu-west-1", ["g"], lambda o: o, insights(row(records="0", named="0"))), 1
        )
        assert readers_seen(V1, 7, zero).seen is False
        millis = insights(row(records="1", named="1", last_seen="1764583200000"))
        seen = readers_seen(V1, 7, logs_insights_source(logs_insights("eu-west-1", ["g"], lambda o: o, millis), 1))
        assert (seen.seen, seen.last_seen) == (True, 1764583200.0)

    def test_a_query_that_fails_raises_nothing_is_known(self) -> None:
        transport = Answers({START_QUERY: {"queryId": "q-1"}, GET_RESULTS: {"status": "Failed"}})
        source = logs_insights_source(logs_insights("eu-west-1", ["g"], lambda o: o, transport), 1)
        with pytest.raises(FlagctlError, match="ended 'Failed': nothing is known"):
            readers_seen(V1, 7, source)

    def test_without_log_groups_it_is_unknown_and_blocks(self) -> None:
        # Given a deployed stage and no log group to ask
        client = FlagsClient(DEPLOYED, transport=Answers({}))
        seen = readers_seen(V1, 7, source_for(client, []))
        # Then nothing can be told: unknown, which blocks as seen does, and the answer says what is missing
        assert (seen.seen, seen.unknown, seen.blocks) == (False, True, True)
        assert "--log-group" in seen.words() and "logs:StartQuery" in seen.words()


@pytest.mark.parametrize(
    ("item", "days"),
    [('FLAGS#V1" or item = "x', 7), ("AUDIT#1", 7), ("FLAGS#V0", 7), (V1, 0), (V1, 366), (V1, True)],
)
def test_a_bad_item_or_window_is_refused_before_anything_is_asked(item: Any, days: Any) -> None:
    transport = Answers({})
    with pytest.raises(FlagctlError) as refused:
        readers_seen(item, days, runner_source(FlagsClient(LOCAL, transport=transport)))
    assert refused.value.exit_code == BAD_INPUT
    assert transport.sent == []
