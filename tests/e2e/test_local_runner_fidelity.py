"""The local runner answers malformed HTTP as the deployed API would: JSON errors, never the standard library's
HTML pages, percent-encoded names kept encoded, and ``x-amzn-RequestId`` on every answer."""

from __future__ import annotations

import http.client
import json
import socket
import uuid
from urllib.parse import urlsplit

import pytest

from tests.support.runner import Runner


def raw_exchange(runner: Runner, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as bytes and read one HTTP answer (http.client would refuse to send malformed ones)."""
    address = urlsplit(runner.url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as connection:
        connection.sendall(request)
        answer = http.client.HTTPResponse(connection)
        answer.begin()
        return answer.status, {name.lower(): value for name, value in answer.getheaders()}, answer.read()


def assert_json_error(status: int, headers: dict[str, str], body: bytes, expected_status: int) -> dict:
    assert status == expected_status, body
    assert headers["content-type"] == "application/json"
    assert headers.get("x-amzn-requestid")
    error = json.loads(body)["error"]
    assert error["code"] and error["message"]
    return error


@pytest.mark.parametrize("length", [b"abc", b"-1", b"1e3", b"\xc2\xb2", b"5, 6"])
def test_a_malformed_content_length_is_400_not_413(runner: Runner, length: bytes) -> None:
    request = b"PATCH /flags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + length
    status, headers, body = raw_exchange(runner, request + b"\r\n\r\n{}")
    assert assert_json_error(status, headers, body, 400)["code"] == "BAD_REQUEST"


def test_more_than_100_headers_is_a_json_431(runner: Runner) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % number for number in range(150))
    status, answer_headers, body = raw_exchange(runner, b"GET /flags HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    assert assert_json_error(status, answer_headers, body, 431)["code"] == "REQUEST_HEADER_FIELDS_TOO_LARGE"


def test_a_malformed_request_line_is_a_json_400(runner: Runner) -> None:
    status, headers, body = raw_exchange(runner, b"GET\r\n\r\n")
    assert_json_error(status, headers, body, 400)


@pytest.mark.parametrize(
    ("method", "path", "status"), [("GET", "/nowhere", 404), ("DELETE", "/flags", 405), ("GET", "/_scheduler/x/y", 405)]
)
def test_router_answers_carry_a_request_id(runner: Runner, method: str, path: str, status: int) -> None:
    answer = runner.send(method, path)
    assert answer.status == status
    assert answer.header("x-amzn-RequestId")


@pytest.mark.parametrize("path", ["/flags/%2F", "/flags/signup%5Fenabled", "/flags/%73ignup_enabled"])
def test_a_percent_encoded_name_is_not_decoded_into_another_route_or_flag(runner: Runner, path: str) -> None:
    # Given the flag signup_enabled / When its name (or a slash) is sent percent-encoded
    answer = runner.get(path)
    # Then it names no declared flag: 404 on the one-flag route, never the collection or the flag
    assert answer.status == 404
    assert answer.body["error"]["code"] == "FLAG_NOT_FOUND"
    assert answer.header("x-amzn-RequestId")


def test_an_encoded_static_route_is_a_flag_name_not_the_route(runner: Runner) -> None:
    answer = runner.get("/flags/%68istory")  # "history", encoded: the one-flag route, an unknown flag
    assert (answer.status, answer.body["error"]["code"]) == (404, "FLAG_NOT_FOUND")


def test_a_percent_encoded_flag_name_in_a_write_is_an_unknown_flag(runner: Runner) -> None:
    answer = runner.send("PATCH", "/flags", {"flags": {"signup%5Fenabled": False}, "reason": "encoded"})
    assert answer.status == 400
    assert (answer.body["error"]["code"], answer.body["error"]["flag"]) == ("UNKNOWN_FLAG", "signup%5Fenabled")


@pytest.mark.parametrize(
    ("method", "target"),
    [("GET", "flags"), ("GET", "http://127.0.0.1:{port}/flags"), ("OPTIONS", "*"), ("CONNECT", "127.0.0.1:{port}")],
)
def test_a_target_that_is_not_a_path_is_400_and_the_connection_answers_the_next_request(
    runner: Runner, method: str, target: str
) -> None:
    # Given a request whose target is not a path (http.client sends it as given)
    address = urlsplit(runner.url)
    logged = len(runner.output())
    connection = http.client.HTTPConnection("127.0.0.1", address.port, timeout=10)
    connection.putrequest(method, target.format(port=address.port), skip_accept_encoding=True)
    connection.endheaders()
    # When the runner answers
    refused = connection.getresponse()
    headers, body = {name.lower(): value for name, value in refused.getheaders()}, refused.read()
    kept = connection.sock
    # Then a 400 in the error contract, and the same connection answers the next request
    error = assert_json_error(refused.status, headers, body, 400)
    assert error["code"] == "BAD_REQUEST" and "origin-form" in error["message"]
    assert kept is not None
    connection.request("GET", "/flags")
    assert connection.sock is kept
    answered = connection.getresponse()
    answered.read()
    connection.close()
    assert answered.status == 200
    assert "Traceback" not in runner.output()[logged:]


def test_an_idempotency_key_is_read_without_the_spaces_around_it(runner: Runner) -> None:
    # Given a write sent with an Idempotency-Key followed by spaces (RFC 9110 5.5: not part of the value)
    key = f"spaced-{uuid.uuid4()}"
    limit = runner.get("/flags").body["flags"]["api_rate_limit_per_minute"]
    body = {"flags": {"api_rate_limit_per_minute": limit + 1}, "reason": "an idempotency key with spaces"}
    first = runner.send("PATCH", "/flags", body, {"Idempotency-Key": f"{key}  "})
    assert first.status == 200, first.body
    # When the same write is sent again with the key alone
    again = runner.send("PATCH", "/flags", body, {"Idempotency-Key": key})
    # Then it is the first one's replay: one key
    assert again.status == 200, again.body
    assert again.header("Idempotent-Replayed") == "true"
    assert again.body["version"] == first.body["version"]
