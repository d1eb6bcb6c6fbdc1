"""The local runner's API Gateway stand-in: route choice, the proxy event, the proxy answer, local routes.

No socket and no function: ``LocalApi`` is given fake functions that record the events they receive.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from local.api import LocalApi
from local.backend import handler_environment
from local.gateway import (
    Caller,
    MalformedProxyResponse,
    Request,
    http_response,
    proxy_event,
)
from local.runner import StartupError, banner, function_environment, parse_port, write_deployment_document
from singleton_flags_infra.config import load_config, schedule_payload
from singleton_flags_service.api.http import allowed_methods
from singleton_flags_service.api.routes import ROUTES, RouteMatch, match_route
from singleton_flags_service.contract import (
    DEPLOYMENT_FILE_VARIABLE,
    MAINTENANCE_FUNCTION,
    READ_FUNCTION,
    WRITE_FUNCTION,
    read_deployment_document,
)


class RecordingFunctions:
    """Stands in for local.functions.Functions: records (function, event) and answers a canned result."""

    def __init__(self, result: Any = None, error: Exception | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.result = result if result is not None else {"statusCode": 200, "headers": {}, "body": "{}"}
        self.error = error

    def invoke(self, function: str, event: Any, request_id: str | None = None) -> Any:
        self.calls.append((function, event))
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture(scope="module")
def config() -> Any:
    return load_config()


def local_api(config: Any, functions: RecordingFunctions) -> LocalApi:
    return LocalApi(functions, config, {"openapi": "3.1.0", "paths": {}})  # type: ignore[arg-type]


def request(method: str, target: str, body: bytes = b"", headers: list[tuple[str, str]] | None = None) -> Request:
    path, _, query = target.partition("?")
    return Request(method=method, raw_path=path, query=query, headers=headers or [], body=body)


DEEP_JSON = b'{"requests": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"  # beyond the parser's recursion


# -- route choice -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "template", "function", "parameters"),
    [
        ("GET", "/flags", "/flags", READ_FUNCTION, {}),
        ("GET", "/flags/signup_enabled", "/flags/{name}", READ_FUNCTION, {"name": "signup_enabled"}),
        ("GET", "/flags/history", "/flags/history", WRITE_FUNCTION, {}),  # a static segment beats {name}
        ("PATCH", "/flags", "/flags", WRITE_FUNCTION, {}),
        ("POST", "/flags/revert", "/flags/revert", WRITE_FUNCTION, {}),
        ("GET", "/flags/a%20b%2Fc", "/flags/{name}", READ_FUNCTION, {"name": "a%20b%2Fc"}),  # kept encoded
        ("GET", "/flags/%2F", "/flags/{name}", READ_FUNCTION, {"name": "%2F"}),  # a name, not the collection
    ],
)
def test_a_request_goes_to_the_route_api_gateway_would_pick(method, path, template, function, parameters):
    # When
    found = match_route(ROUTES, method, path)
    # Then
    assert isinstance(found, RouteMatch)
    assert (found.route.path, found.route.function, found.path_parameters) == (template, function, parameters)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/flags", ["GET", "PATCH"]),
        ("POST", "/flags/history", ["GET"]),
        ("GET", "/flags/revert", ["POST"]),  # the static resource wins, then the method: not a flag name
        ("PUT", "/flags/revert", ["POST"]),
        ("GET", "/nope", []),
        ("GET", "/flags/a/b", []),
        ("DELETE", "/flags/", ["GET", "PATCH"]),  # a trailing slash names the same resource
    ],
)
def test_no_route_says_which_methods_the_path_allows(method, path, allowed):
    assert match_route(ROUTES, method, path) == allowed
    assert allowed_methods(path) == allowed  # the functions' own 404/405 agree with the runner's


def test_every_route_of_the_table_is_reachable():
    for route in ROUTES:
        concrete = route.path.replace("{name}", "signup_enabled")
        found = match_route(ROUTES, route.method, concrete)
        assert isinstance(found, RouteMatch) and found.route == route


# -- the proxy event ----------------------------------------------------------------------------------


def test_the_event_is_an_api_gateway_rest_proxy_event():
    # Given
    match = match_route(ROUTES, "GET", "/flags/signup%5Fenabled")
    headers = [("Host", "127.0.0.1:3000"), ("Accept", "a"), ("Accept", "b"), ("User-Agent", "curl/8")]
    # When
    event = proxy_event(
        method="GET",
        raw_path="/flags/signup%5Fenabled",
        query="x=1&x=2&y=",
        headers=headers,
        body=b"",
        match=match,
        stage="prod",
        caller=Caller("local-admin", "127.0.0.9"),
        request_id="req-1",
        now=1_700_000_000.0,
    )
    # Then
    assert event["httpMethod"] == "GET"
    assert event["path"] == "/flags/signup%5Fenabled"  # path and path parameters arrive percent-encoded
    assert event["resource"] == event["requestContext"]["resourcePath"] == "/flags/{name}"
    assert event["pathParameters"] == {"name": "signup%5Fenabled"}
    assert event["headers"]["Accept"] == "b"  # the last value, as API Gateway does
    assert event["multiValueHeaders"]["Accept"] == ["a", "b"]
    assert event["queryStringParameters"] == {"x": "2", "y": ""}
    assert event["multiValueQueryStringParameters"] == {"x": ["1", "2"], "y": [""]}
    assert event["body"] is None and event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert (context["requestId"], context["stage"], context["httpMethod"]) == ("req-1", "prod", "GET")
    assert context["path"] == "/prod/flags/signup%5Fenabled"
    assert context["requestTimeEpoch"] == 1_700_000_000_000
    assert context["identity"]["userArn"] == "arn:aws:iam::000000000000:user/local-admin"
    assert context["identity"]["sourceIp"] == "127.0.0.9"
    assert context["identity"]["userAgent"] == "curl/8"


def test_a_request_without_query_or_parameters_has_nulls_where_api_gateway_puts_nulls():
    event = proxy_event(
        method="PATCH",
        raw_path="/flags",
        query="",
        headers=[],
        body='{"reason": "é"}'.encode(),
        match=match_route(ROUTES, "PATCH", "/flags"),
        stage="prod",
        caller=Caller(),
    )
    assert event["queryStringParameters"] is None and event["multiValueQueryStringParameters"] is None
    assert event["pathParameters"] is None and event["headers"] is None
    assert event["body"] == '{"reason": "é"}'
    assert len(event["requestContext"]["requestId"]) == 36


# -- the proxy answer ---------------------------------------------------------------------------------


def test_the_answer_carries_multi_value_headers_then_the_single_ones_not_named_there():
    # When
    response = http_response(
        {
            "statusCode": 200,
            "headers": {"ETag": '"3"', "X-One": "1"},
            "multiValueHeaders": {"etag": ['"3"'], "Set-Cookie": ["a=1", "b=2"]},
            "body": "{}",
            "isBase64Encoded": False,
        }
    )
    # Then
    assert response.status == 200
    assert response.headers == [("etag", '"3"'), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"), ("X-One", "1")]
    assert response.body == b"{}"


def test_a_base64_answer_is_decoded_and_a_missing_body_is_empty():
    encoded = http_response(
        {"statusCode": 200, "body": base64.b64encode(b"\x00\x01").decode(), "isBase64Encoded": True}
    )
    empty = http_response({"statusCode": 304, "multiValueHeaders": {"ETag": ['"1"']}})
    assert encoded.body == b"\x00\x01"
    assert (empty.status, empty.body) == (304, b"")


@pytest.mark.parametrize("result", [None, "text", {"body": "{}"}, {"statusCode": "x"}, {"statusCode": True}])
def test_an_answer_api_gateway_would_reject_is_malformed(result):
    with pytest.raises(MalformedProxyResponse):
        http_response(result)


# -- LocalApi -----------------------------------------------------------------------------------------


def test_an_api_route_invokes_the_function_the_route_table_names(config):
    # Given
    functions = RecordingFunctions({"statusCode": 201, "multiValueHeaders": {"ETag": ['"4"']}, "body": "{}"})
    # When
    response = local_api(config, functions).handle(request("GET", "/flags/history?limit=2"))
    # Then
    ((function, event),) = functions.calls
    assert function == WRITE_FUNCTION
    assert event["resource"] == "/flags/history" and event["queryStringParameters"] == {"limit": "2"}
    assert response.status == 201
    assert ("ETag", '"4"') in response.headers
    assert ("x-amzn-RequestId", event["requestContext"]["requestId"]) in response.headers


def test_an_unknown_path_is_404_and_a_wrong_method_405_with_allow(config):
    functions = RecordingFunctions()
    api = local_api(config, functions)
    unknown = api.handle(request("GET", "/nowhere"))
    wrong = api.handle(request("DELETE", "/flags"))
    wrong_local = api.handle(request("GET", "/_scheduler/weekly-patching/start"))
    assert functions.calls == []
    assert unknown.status == 404 and json.loads(unknown.body)["error"]["code"] == "NOT_FOUND"
    assert wrong.status == 405 and ("Allow", "GET, PATCH") in wrong.headers
    assert json.loads(wrong.body)["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert wrong_local.status == 405 and ("Allow", "POST") in wrong_local.headers


def test_the_scheduler_route_delivers_the_payload_the_deployed_schedule_sends(config):
    # Given
    window = config.maintenance_windows[0].name
    functions = RecordingFunctions({"status": "started"})
    # When
    response = local_api(config, functions).handle(request("POST", f"/_scheduler/{window}/start"))
    # Then the deployed schedule's payload, with now as the scheduled time Scheduler would substitute
    [(function, delivered)] = functions.calls
    assert function == MAINTENANCE_FUNCTION
    scheduled = datetime.strptime(delivered["scheduled_time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - scheduled).total_seconds()) < 5
    assert delivered == schedule_payload(window, "start", delivered["scheduled_time"])
    assert response.status == 200
    assert json.loads(response.body) == {"delivered": delivered, "result": {"status": "started"}}


@pytest.mark.parametrize("path", ["/_scheduler/no-such-window/start", "/_scheduler/weekly-patching/pause"])
def test_the_scheduler_route_knows_only_the_windows_and_actions_of_cdk_json(config, path):
    functions = RecordingFunctions()
    response = local_api(config, functions).handle(request("POST", path))
    assert response.status == 404 and functions.calls == []
    assert json.loads(response.body)["error"]["code"] == "WINDOW_NOT_FOUND"


def test_a_function_that_raises_is_a_502_as_api_gateway_answers(config, capsys):
    functions = RecordingFunctions(error=RuntimeError("boom"))
    response = local_api(config, functions).handle(request("GET", "/flags"))
    assert response.status == 502
    assert json.loads(response.body)["error"]["code"] == "FUNCTION_ERROR"
    assert "RuntimeError: boom" in capsys.readouterr().err


def test_the_documents_are_served_without_invoking_a_function(config):
    functions = RecordingFunctions()
    api = local_api(config, functions)
    document = api.handle(request("GET", "/openapi.json"))
    page = api.handle(request("GET", "/docs"))
    init = api.handle(request("GET", "/docs/init.js"))
    assert json.loads(document.body)["openapi"] == "3.1.0"
    assert b"/vendor/swagger-ui/swagger-ui-bundle.js" in page.body and b"/docs/init.js" in page.body
    assert b'url: "/openapi.json"' in init.body
    assert functions.calls == []


# -- start-up pieces ----------------------------------------------------------------------------------


def test_the_functions_environment_comes_from_cdk_json_and_the_users_values_win(config, tmp_path):
    # Given the deployment document the stack would ship, written by the runner
    document = write_deployment_document(config, tmp_path)
    # When the functions' environment is built, with the user's own table and a document of their own
    env = function_environment(config, {"TABLE_NAME": "mine", DEPLOYMENT_FILE_VARIABLE: "/elsewhere.json"}, document)
    # Then
    assert env["TABLE_NAME"] == "mine"
    assert env["FLAGS_LOCAL_ACTOR"] == "local-admin"
    assert env["POWERTOOLS_PARAMETERS_MAX_AGE"] == str(config.cache_max_age_seconds)
    assert env["FLAGS_MAX_STALE_SECONDS"] == str(config.max_stale_seconds)
    # the windows always come from cdk.json, through the document the functions read as deployed
    assert env[DEPLOYMENT_FILE_VARIABLE] == str(document)
    assert read_deployment_document(env) == tuple(window.definition for window in config.maintenance_windows)
    assert env["POWERTOOLS_TRACE_DISABLED"] == "1"
    assert env["AWS_REGION"] == env["AWS_DEFAULT_REGION"]
    assert function_environment(config, {}, document)["TABLE_NAME"] == "singleton-flags-local"


@pytest.mark.parametrize(("raw", "port"), [(None, 3000), ("", 3000), ("8080", 8080), ("0", 0)])
def test_port_comes_from_env(raw, port):
    assert parse_port(raw) == port


@pytest.mark.parametrize("raw", ["abc", "-1", "70000", "80.5", "²", "٣٠٠٠", "+80", "8_0", "9" * 5000])
def test_a_bad_port_is_one_clear_error(raw):
    with pytest.raises(StartupError, match="PORT must be a port number"):
        parse_port(raw)


def test_the_banner_gives_the_addresses_and_three_curl_commands(config, declarations):
    text = banner("http://127.0.0.1:3000", config, declarations, "embedded", "t")
    for expected in ("http://127.0.0.1:3000/docs", "http://127.0.0.1:3000/openapi.json", "/_scheduler/"):
        assert expected in text
    curls = [line.strip() for line in text.splitlines() if line.strip().startswith("curl")]
    assert curls[0] == "curl -i http://127.0.0.1:3000/flags"
    # a window's schedule routes are written out with its real name: no braces around what is not a placeholder
    assert "POST http://127.0.0.1:3000/_scheduler/weekly-patching/start  (or /end)" in text
    assert "{weekly-patching}" not in text and "{start|end}" not in text
    assert "-X PATCH" in curls[1] and '"reason"' in curls[1]
    assert curls[2].endswith("/flags/history")


def test_query_strings_arrive_decoded_and_path_parameters_encoded():
    # Given a request with percent-encoding in its path and in its query
    match = match_route(ROUTES, "GET", "/flags/caf%C3%A9")
    # When it becomes a proxy event
    event = proxy_event(
        method="GET",
        raw_path="/flags/caf%C3%A9",
        query="limit=%C2%B2&c=a%2Bb+c",
        headers=[],
        body=b"",
        match=match,
        stage="prod",
        caller=Caller(),
    )
    # Then the path keeps its encoding and the query is decoded, as a REST API delivers them
    assert (event["path"], event["pathParameters"]) == ("/flags/caf%C3%A9", {"name": "caf%C3%A9"})
    assert event["queryStringParameters"] == {"limit": "\u00b2", "c": "a+b c"}


# -- the local throttle switch ----------------------------------------------------------------------------


def test_the_throttle_switch_answers_the_next_requests_as_api_gateway_throttles(config):
    # Given the switch set for the next 2 requests, 3 seconds
    functions = RecordingFunctions()
    api = local_api(config, functions)
    switched = api.handle(request("POST", "/_throttle", b'{"requests": 2, "retry_after": 3}'))
    assert switched.status == 200
    # When 3 requests to deployed routes arrive
    answers = [api.handle(request("POST", "/ofrep/v1/evaluate/flags/signup_enabled", b"{}")) for _ in range(3)]
    # Then the first 2 are API Gateway's THROTTLED answer with Retry-After in seconds, not invoking a function
    for answer in answers[:2]:
        assert answer.status == 429
        assert ("Retry-After", "3") in answer.headers
        assert json.loads(answer.body)["error"]["code"] == "THROTTLED"
    assert answers[2].status == 200
    assert len(functions.calls) == 1


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"nope",
        b"[]",
        b'{"requests": -1}',
        b'{"requests": true}',
        b'{"requests": 1, "retry_after": 1e9}',
        DEEP_JSON,
    ],
)
def test_a_bad_throttle_switch_is_400_and_changes_nothing(config, body):
    functions = RecordingFunctions()
    api = local_api(config, functions)
    answer = api.handle(request("POST", "/_throttle", body))
    assert answer.status == 400 and json.loads(answer.body)["error"]["code"] == "INVALID_REQUEST"
    assert api.handle(request("GET", "/flags")).status == 200


@pytest.mark.parametrize(
    "body", [b"nope", b"[]", b'{"state": "alarm"}', b'{"state": 1}', b'{"state": "ALARM", "x": ' + DEEP_JSON + b"}"]
)
def test_a_bad_alarm_state_is_400_and_changes_nothing(config, body):
    # Given an alarm of the guards' prefix in OK
    functions = RecordingFunctions({"status": "ignored"})
    api = local_api(config, functions)
    name = f"{config.guard_prefix}errors"
    assert api.handle(request("POST", f"/_alarms/{name}", b'{"state": "OK"}')).status == 200
    # When a body that is no state arrives
    answer = api.handle(request("POST", f"/_alarms/{name}", body))
    # Then 400 in the error contract, the alarm still OK and no guard function invoked
    assert answer.status == 400 and json.loads(answer.body)["error"]["code"] == "INVALID_REQUEST"
    assert json.loads(api.handle(request("GET", "/_alarms")).body) == {"alarms": {name: "OK"}}
    assert functions.calls == []


def test_the_banner_prints_what_a_handler_needs_with_the_runners_fake_credentials(config, declarations):
    # Given the runner's handler environment (table, endpoint, region, its fake credentials)
    env = handler_environment("http://127.0.0.1:3000", "singleton-flags-local", "us-east-1", "FLAGS#V1")
    # When the banner is printed
    text = banner("http://127.0.0.1:3000", config, declarations, "embedded", "t", env)
    # Then one line holds it, ready to paste before a command
    line = next(line.strip() for line in text.splitlines() if "SINGLETON_FLAGS_TABLE=" in line)
    assert line == (
        "SINGLETON_FLAGS_TABLE=singleton-flags-local AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:3000/_dynamodb "
        "AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local"
    )
