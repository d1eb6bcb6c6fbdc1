"""The console's Lifecycle view reads ``GET /_console/report?days=N``: ``flagctl report`` computed by the server the
page came from (``flagctl.report``'s functions, one decision), never by the page. ``flagctl console`` answers it
under its own rules (the token, GET only) with the reads of its ``--log-group`` log groups, or says what the reads
need; the local runner answers it in process from its ``GET /_reads``. Bad input is a 400 naming it, a failing API
a 502 in the error contract: never a traceback."""

from __future__ import annotations

import io
import json
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from flagctl.client import Outgoing
from flagctl.console import TOKEN_HEADER, ConsoleProxy
from flagctl.errors import FlagctlError
from flagctl.http_server import HttpResponse, Request
from flagctl.insights import logs_insights
from flagctl.report import log_group_reads, logs_insights_reads
from local.api import LocalApi
from singleton_flags_infra.config import load_config
from tests.unit.test_flagctl_report import DECLARED  # the same three flags: a kill switch, a candidate, a read one

DEPLOYED = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod"
TOKEN = "the-token-of-this-start"
REPORT = "/_console/report"
HISTORY = {
    "records": [
        {"version": 3, "at": "2026-11-20T10:00:00Z", "actor": "ops", "kind": "change", "changes": {"checkout_v2": {}}},
        {
            "version": 1,
            "at": "2026-01-01T00:00:00Z",
            "actor": "ops",
            "kind": "change",
            "changes": {"signup_enabled": {}, "search_ranking": {}},
        },
    ],
    "next_cursor": None,
}


def _json(status: int, body: Any) -> HttpResponse:
    return HttpResponse(status, [("Content-Type", "application/json")], json.dumps(body).encode())


class Upstream:
    """The deployed API behind flagctl console (and CloudWatch Logs): answers by path or X-Amz-Target."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.sent: list[Outgoing] = []

    def __call__(self, outgoing: Outgoing) -> HttpResponse:
        self.sent.append(outgoing)
        target = outgoing.headers.get("X-Amz-Target") or urlsplit(outgoing.url).path.removeprefix("/prod")
        answer = self.answers[target]
        if isinstance(answer, list):
            answer = answer.pop(0)
        return answer if isinstance(answer, HttpResponse) else _json(200, answer)

    def logs(self, outgoing: Outgoing) -> Any:
        from flagctl.client import Answer

        response = self(outgoing)
        return Answer(response.status, dict(response.headers), json.loads(response.body))


def signed(outgoing: Outgoing) -> Outgoing:
    return Outgoing(outgoing.method, outgoing.url, {**outgoing.headers, "Authorization": "AWS4 signed"}, outgoing.body)


def ask(answers: Any, query: str = "", method: str = "GET", token: str | None = TOKEN) -> tuple[int, Any]:
    headers = [("Host", "127.0.0.1:8080")] + ([(TOKEN_HEADER, token)] if token is not None else [])
    response = answers.handle(Request(method, REPORT, query, headers, b""))
    return response.status, json.loads(response.body)


def flags_of(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {flag["name"]: flag for flag in body["flags"]}


# ---------------------------------------------------------------- flagctl console


def test_through_flagctl_console_the_reads_come_from_logs_insights_and_mark_the_never_read_flag() -> None:
    # Given a console started with a log group, whose Logs Insights sums show search_ranking read
    row = [{"field": "search_ranking", "value": "12"}, {"field": "checkout_v2", "value": "0"}]
    upstream = Upstream(
        {
            "/flags/declarations": {"declarations": DECLARED},
            "/flags/history": HISTORY,
            "Logs_20140328.StartQuery": {"queryId": "q-1"},
            "Logs_20140328.GetQueryResults": [{"status": "Complete", "results": [row]}],
        }
    )
    query = logs_insights("eu-west-1", ["/aws/lambda/read"], signed, upstream.logs, sleep=lambda _: None)
    reads = logs_insights_reads(query, 1)
    proxy = ConsoleProxy(DEPLOYED, TOKEN, signer=signed, upstream=upstream, reads=reads)
    # When the Lifecycle view asks for 14 days
    status, body = ask(proxy, "days=14")
    # Then the report is flagctl report's: the window asked, its source, lower bounds
    assert status == 200, body
    assert body["days"] == 14 and body["counts_are_lower_bounds"] is True
    assert body["reads_source"] == "CloudWatch Logs Insights (1 log group(s))" and body["reads_unknown"] is None
    flags = flags_of(body)
    # And the never-read temporary flag is the candidate, with why; the read one and the permanent one are not
    assert (flags["checkout_v2"]["stale_candidate"], flags["checkout_v2"]["reads"]) == (True, 0)
    assert "ask payments" in flags["checkout_v2"]["why"]
    assert (flags["search_ranking"]["stale_candidate"], flags["search_ranking"]["reads"]) == (False, 12)
    assert flags["signup_enabled"]["stale_candidate"] is False and flags["signup_enabled"]["permanent"] is True
    # And the last change is the newest record that changed each flag
    assert flags["checkout_v2"]["last_change"]["version"] == 3
    assert flags["search_ranking"]["last_change"]["version"] == 1
    # And the query spans the 14 days asked
    start = json.loads(next(o.body for o in upstream.sent if o.headers.get("X-Amz-Target", "").endswith("StartQuery")))
    assert start["endTime"] - start["startTime"] == pytest.approx(14 * 86400, abs=5)
    # And the API calls were signed, and never carried the console's token
    api_calls = [o for o in upstream.sent if "X-Amz-Target" not in o.headers]
    assert api_calls and all(o.headers.get("Authorization") == "AWS4 signed" for o in api_calls)
    assert all(TOKEN_HEADER.lower() not in {name.lower() for name in o.headers} for o in upstream.sent)


def test_through_flagctl_console_without_a_log_group_the_view_says_what_the_reads_need_and_marks_nothing() -> None:
    # Given a console in front of a deployed stage, started without --log-group
    upstream = Upstream({"/flags/declarations": {"declarations": DECLARED}, "/flags/history": HISTORY})
    proxy = ConsoleProxy(DEPLOYED, TOKEN, signer=signed, upstream=upstream)
    # When the view asks with the default window
    status, body = ask(proxy)
    # Then it says what the reads need, counts nothing and marks no candidate
    assert status == 200, body
    assert body["days"] == 30
    assert "--log-group" in body["reads_unknown"] and "logs:StartQuery" in body["reads_unknown"]
    assert all(flag["reads"] is None and flag["stale_candidate"] is False for flag in body["flags"])


def test_through_flagctl_console_the_report_without_the_token_is_401_and_nothing_is_sent() -> None:
    upstream = Upstream({"/flags/declarations": {"declarations": DECLARED}, "/flags/history": HISTORY})
    proxy = ConsoleProxy(DEPLOYED, TOKEN, signer=signed, upstream=upstream)
    for token in (None, "another-token"):
        status, body = ask(proxy, "days=7", token=token)
        assert (status, body["error"]["code"]) == (401, "CONSOLE_TOKEN_REQUIRED")
    assert upstream.sent == []


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("days=0", "'0'"),
        ("days=366", "'366'"),
        ("days=1000", "'1000'"),
        ("days=-1", "'-1'"),
        ("days=seven", "'seven'"),
        ("days=", "''"),
        ("days=%D9%A3", "'\u0663'"),  # an Arabic-Indic three: a digit to int(), not to the rule
        ("days=7&days=8", "given 2 times"),
        ("days=7&limit=3", "'limit'"),
        ("weeks=2", "'weeks'"),
        ("days", "days=N"),
    ],
)
def test_a_window_out_of_range_or_an_unknown_parameter_is_400_naming_it_and_nothing_is_read(query, named) -> None:
    upstream = Upstream({"/flags/declarations": {"declarations": DECLARED}, "/flags/history": HISTORY})
    proxy = ConsoleProxy(DEPLOYED, TOKEN, signer=signed, upstream=upstream)
    status, body = ask(proxy, query)
    assert (status, body["error"]["code"]) == (400, "INVALID_REQUEST"), body
    assert named in body["error"]["message"]
    assert upstream.sent == []


def test_the_report_is_get_only_and_a_failing_api_is_a_502_in_the_error_contract() -> None:
    # Given an API refusing its history
    refusal = _json(500, {"error": {"code": "INTERNAL", "message": "boom"}})
    upstream = Upstream({"/flags/declarations": {"declarations": DECLARED}, "/flags/history": refusal})
    proxy = ConsoleProxy(DEPLOYED, TOKEN, signer=signed, upstream=upstream)
    # Then another method is 405 naming GET
    status, body = ask(proxy, "days=7", method="POST")
    assert (status, body["error"]["code"]) == (405, "METHOD_NOT_ALLOWED")
    # And the report is 502 naming the call that failed, never half a report
    status, body = ask(proxy, "days=7")
    assert (status, body["error"]["code"]) == (502, "REPORT_UNAVAILABLE")
    assert "GET /flags/history answered HTTP 500" in body["error"]["message"]


def test_console_reads_come_from_the_log_groups_given_and_never_for_the_local_runner() -> None:
    assert log_group_reads(DEPLOYED, []) is None
    assert log_group_reads("http://127.0.0.1:3000", ["/aws/lambda/read"]) is None  # the runner's GET /_reads
    with pytest.raises(FlagctlError, match="at most 50 --log-group"):
        log_group_reads(DEPLOYED, [f"/aws/lambda/f{n}" for n in range(51)])


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")


@pytest.mark.usefixtures("credentials")
def test_flagctl_console_log_groups_are_queried_in_the_apis_region_signed_for_logs() -> None:
    # Given the reads of a console started with two log groups in front of a stage in eu-west-1
    row = [{"field": "checkout_v2", "value": "3"}]
    logs = Upstream(
        {
            "Logs_20140328.StartQuery": {"queryId": "q-1"},
            "Logs_20140328.GetQueryResults": [{"status": "Complete", "results": [row]}],
        }
    )
    reads = log_group_reads(DEPLOYED, ["/aws/lambda/read", "/aws/lambda/app"], logs.logs)
    assert reads is not None
    # When the view's report asks them
    from flagctl.refs import DeclaredFlag

    counted = reads([DeclaredFlag("checkout_v2")], time.time() - 86400)
    # Then one query over both log groups, at CloudWatch Logs in the API's region, signed for logs
    start = logs.sent[0]
    assert start.url == "https://logs.eu-west-1.amazonaws.com/"
    assert "/eu-west-1/logs/aws4_request" in start.headers["Authorization"]
    assert json.loads(start.body or b"")["logGroupNames"] == ["/aws/lambda/read", "/aws/lambda/app"]
    assert counted.by_flag == {"checkout_v2": 3}


@pytest.mark.usefixtures("credentials")
def test_flagctl_console_refuses_more_log_groups_than_a_query_takes_before_it_listens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flagctl import http_server
    from flagctl.cli import main

    listened: list[int] = []

    class Server:
        """A console that started: recorded, then stopped at once (as by Ctrl-C)."""

        port = 0

        def __init__(self, port: int, *_: Any) -> None:
            listened.append(port)

        def serve_forever(self, poll_interval: float = 0.5) -> None:
            raise KeyboardInterrupt

        def server_close(self) -> None:
            pass

    monkeypatch.setattr(http_server, "LocalServer", Server)
    out, err = io.StringIO(), io.StringIO()
    groups = [arg for n in range(51) for arg in ("--log-group", f"/aws/lambda/f{n}")]
    code = main(["--url", DEPLOYED, "console", "--port", "0", *groups], out=out, err=err)
    assert code == 2
    assert "at most 50 --log-group" in err.getvalue()
    assert listened == [] and out.getvalue() == ""  # nothing listens, no console URL printed


# ---------------------------------------------------------------- the local runner


class RunnerFunctions:
    """The runner's functions: the declarations and history by path, every read answered."""

    def invoke(self, function: str, event: Any, request_id: str | None = None) -> Any:
        body = {"/flags/declarations": {"declarations": DECLARED}, "/flags/history": HISTORY}.get(event["path"], {})
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}


def test_on_the_runner_the_reads_are_its_own_counts_in_process() -> None:
    # Given the runner, and search_ranking read by name once, and every flag at once
    api = LocalApi(RunnerFunctions(), load_config(), {})  # type: ignore[arg-type]
    for path in ("/flags/search_ranking", "/flags"):
        api.handle(Request("GET", path, "", [], b""))
    # When the view asks, without any token (the runner has none)
    status, body = ask(api, "days=7", token=None)
    # Then the reads are the runner's, since it started
    assert status == 200, body
    assert body["reads_source"] == "the local runner's read function (GET /_reads)"
    assert body["reads_of_every_flag"] == 1
    assert body["window_start"] <= time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    flags = flags_of(body)
    # And the flag read by name is no candidate, the never-read temporary one is, the permanent one never
    assert (flags["search_ranking"]["reads"], flags["search_ranking"]["stale_candidate"]) == (1, False)
    assert (flags["checkout_v2"]["reads"], flags["checkout_v2"]["stale_candidate"]) == (0, True)
    assert (flags["signup_enabled"]["reads"], flags["signup_enabled"]["stale_candidate"]) == (0, False)


@pytest.mark.parametrize("query", ["days=0", "days=366", "days=x", "days=1&days=2", "limit=3"])
def test_on_the_runner_bad_input_is_400_and_another_method_405(query) -> None:
    api = LocalApi(RunnerFunctions(), load_config(), {})  # type: ignore[arg-type]
    status, body = ask(api, query, token=None)
    assert (status, body["error"]["code"]) == (400, "INVALID_REQUEST")
    response = api.handle(Request("POST", REPORT, "days=7", [], b""))
    assert response.status == 405 and ("Allow", "GET") in response.headers
