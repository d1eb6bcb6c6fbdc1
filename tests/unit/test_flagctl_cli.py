"""flagctl without a network: argument parsing, values, exit codes, output, targets and SigV4 signing.

A fake transport records the request flagctl would send and answers a canned response.
"""

from __future__ import annotations

import datetime
import io
import json
import os
import uuid
from pathlib import Path
from typing import Any

import botocore.auth
import pytest
from botocore.credentials import Credentials

from flagctl.cli import (
    AUTH,
    BAD_INPUT,
    CONFLICT,
    FALLBACKS,
    OK,
    SERVER,
    exit_code,
    main,
    parse_assignments,
    parse_value,
)
from flagctl.client import (
    STACK_OUTPUT_API_URL,
    Answer,
    FlagctlError,
    FlagsClient,
    Outgoing,
    region_for,
    sign,
    url_from_stack_outputs,
)

FLAGS_BODY = {
    "flags": {"signup_enabled": True, "search_ranking": "classic", "api_rate_limit_per_minute": 600},
    "version": 7,
    "reason": "CACHED",
    "fetched_at": "2026-01-01T00:00:00.000+00:00",
}


class FakeTransport:
    def __init__(self, status: int = 200, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.sent: list[Outgoing] = []
        self.answer = Answer(status, headers or {}, FLAGS_BODY if body is None else body)

    def __call__(self, outgoing: Outgoing) -> Answer:
        self.sent.append(outgoing)
        return self.answer


def run(argv: list[str], transport: FakeTransport) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, transport=transport, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def frozen_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: datetime.datetime(2015, 8, 30, 12, 36, 0))


# -- values and arguments --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("false", False),
        ("12", 12),
        ("0.5", 0.5),
        ('"x"', "x"),
        ('"12"', "12"),
        ("null", None),
        ("semantic", "semantic"),
        ("", ""),
        ("two words", "two words"),
    ],
)
def test_a_value_is_json_when_it_parses_as_json_else_text(text, value):
    assert parse_value(text) == value and type(parse_value(text)) is type(value)


def test_assignments_split_at_the_first_equals_sign():
    assert parse_assignments(["a=1", "b=x=y", "c= true"]) == {"a": 1, "b": "x=y", "c": True}


@pytest.mark.parametrize("items", [["novalue"], ["=1"], ["a=1", "a=2"]])
def test_a_bad_assignment_is_bad_input(items):
    with pytest.raises(FlagctlError) as caught:
        parse_assignments(items)
    assert caught.value.exit_code == BAD_INPUT


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["set", "a=1"],
        ["revert", "3"],
        ["revert", "x", "--reason", "r"],
        ["set", "a=1", "--reason", "r", "--if-match", "v2"],
        ["--url", "http://x", "--stack-output-file", "f", "get"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as caught:
        main(argv, transport=FakeTransport())
    assert caught.value.code == 2


# -- exit codes ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (200, OK),
        (201, OK),
        (301, SERVER),  # never followed: the request is signed for its own URL only
        (302, SERVER),
        (304, SERVER),  # flagctl sends no conditional request: not an answer it asked for
        (307, SERVER),
        (400, BAD_INPUT),
        (404, BAD_INPUT),
        (405, BAD_INPUT),
        (413, BAD_INPUT),
        (415, BAD_INPUT),
        (409, CONFLICT),
        (412, CONFLICT),
        (401, AUTH),
        (403, AUTH),
        (429, SERVER),
        (500, SERVER),
        (502, SERVER),
        (503, SERVER),
    ],
)
def test_http_status_maps_to_an_exit_code_scripts_can_use(status, code):
    assert exit_code(status) == code


def test_a_refusal_prints_the_error_on_stderr_and_exits_with_its_code():
    # Given
    error = {"error": {"code": "PRECONDITION_FAILED", "message": "at version 9", "current_version": 9}}
    # When
    code, out, err = run(["set", "signup_enabled=false", "--reason", "r", "--if-match", "7"], FakeTransport(412, error))
    # Then
    assert code == CONFLICT and out == ""
    assert err.strip() == "flagctl: HTTP 412 PRECONDITION_FAILED: at version 9 (current_version=9)"


def test_with_json_a_refusal_is_the_apis_json_on_stderr():
    error = {"error": {"code": "FLAG_NOT_FOUND", "message": "no flag named 'x'"}}
    code, out, err = run(["--json", "get", "x"], FakeTransport(404, error))
    assert code == BAD_INPUT and out == "" and json.loads(err) == error


def test_a_network_failure_is_exit_5(monkeypatch):
    def unreachable(outgoing: Outgoing) -> Answer:
        raise FlagctlError(f"cannot reach {outgoing.url}: refused", SERVER, "NETWORK_ERROR")

    out, err = io.StringIO(), io.StringIO()
    assert main(["get"], transport=unreachable, out=out, err=err) == SERVER
    assert err.getvalue().startswith("flagctl: cannot reach http://127.0.0.1:3000/flags")


# -- requests and output ---------------------------------------------------------------------------------


def test_set_sends_one_patch_with_typed_values_reason_and_if_match():
    # Given
    transport = FakeTransport(
        200, {"applied": True, "version": 8, "changed": {"signup_enabled": {"old": True, "new": False}}}
    )
    # When
    code, out, _ = run(
        ["set", "signup_enabled=false", "search_ranking=hybrid", "--reason", "why", "--if-match", '"7"'], transport
    )
    # Then
    (sent,) = transport.sent
    assert (sent.method, sent.url) == ("PATCH", "http://127.0.0.1:3000/flags")
    assert json.loads(sent.body) == {"flags": {"signup_enabled": False, "search_ranking": "hybrid"}, "reason": "why"}
    assert sent.headers["If-Match"] == '"7"' and sent.headers["Content-Type"] == "application/json"
    assert "Authorization" not in sent.headers  # loopback: never signed
    assert code == OK
    assert out.splitlines() == ["FLAG            OLD   NEW", "signup_enabled  true  false", "now at version 8"]


def test_get_prints_a_table_for_people_and_the_json_for_scripts():
    code, out, _ = run(["get"], FakeTransport())
    assert code == OK
    assert out.splitlines()[:2] == ["FLAG                       VALUE", "signup_enabled             true"]
    assert "version 7 · CACHED" in out
    code, out, _ = run(["--json", "get"], FakeTransport())
    assert json.loads(out) == {**FLAGS_BODY, "reasons": dict.fromkeys(FLAGS_BODY["flags"], "CACHED")}


def test_get_one_flag_puts_its_name_in_the_path():
    transport = FakeTransport(200, {"name": "a_b", "value": 1, "version": 1, "reason": "STATIC", "fetched_at": None})
    run(["--url", "http://localhost:9000/", "get", "a_b"], transport)
    assert transport.sent[0].url == "http://localhost:9000/flags/a_b"


@pytest.mark.parametrize("name", ["/", "a/b", "Signup", "", "1flag", "signup%5Fenabled", "x" * 64, "caf\u00e9"])
def test_a_name_that_cannot_be_a_flag_is_bad_input_and_nothing_is_sent(name):
    # Given a name the API could never have declared / When flagctl is asked for it
    transport = FakeTransport()
    code, out, err = run(["get", name], transport)
    # Then it says so, exits 2, and sends nothing (no traceback)
    assert (code, out, transport.sent) == (BAD_INPUT, "", [])
    assert err.startswith("flagctl: ") and "not a flag name" in err


def test_set_refuses_a_name_that_cannot_be_a_flag_before_sending():
    transport = FakeTransport()
    code, _, err = run(["set", "a/b=1", "--reason", "r"], transport)
    assert (code, transport.sent) == (BAD_INPUT, []) and "not a flag name" in err


def test_flagctl_and_the_api_agree_on_what_a_flag_name_is():
    from flagctl.client import FLAG_NAME
    from singleton_flags.declarations import NAME_PATTERN

    assert FLAG_NAME.pattern == NAME_PATTERN.pattern


@pytest.mark.parametrize(
    "body",
    [None, "not json", [1, 2], {"flags": 3}, {"flags": {"a": 1}}, {"name": "x"}, {"error": "odd"}],
    ids=["empty", "text", "a-list", "flags-not-an-object", "no-version-line-fields-is-fine", "no-value", "odd"],
)
def test_an_unexpected_answer_is_a_clear_message_never_a_traceback(body):
    # Given an API (or something in front of it) answering 200 with a body flagctl does not expect
    for argv in (["get"], ["get", "signup_enabled"], ["history"], ["set", "a=1", "--reason", "r"]):
        # When / Then: either a rendering, or one line on stderr and exit 5
        code, out, err = run(argv, FakeTransport(200, body if body is not None else {}))
        if code != OK:
            assert (code, out) == (SERVER, "") and err.startswith("flagctl: unexpected answer from the API (HTTP 200)")


def test_an_empty_200_body_is_an_unexpected_answer():
    transport = FakeTransport()
    transport.answer = Answer(200, {}, None)
    code, out, err = run(["get"], transport)
    assert (code, out) == (SERVER, "") and "unexpected answer" in err


def test_history_passes_limit_and_cursor_and_prints_the_next_cursor():
    record = {
        "version": 3,
        "kind": "revert",
        "actor": "arn:aws:iam::1:user/me",
        "reason": "undo",
        "at": "T",
        "changes": {"maintenance_mode": {"old": True, "new": False}},
        "reverted_to": 1,
    }
    transport = FakeTransport(200, {"records": [record], "next_cursor": "abc"})
    code, out, _ = run(["history", "--limit", "1", "--cursor", "xyz"], transport)
    assert transport.sent[0].url == "http://127.0.0.1:3000/flags/history?limit=1&cursor=xyz"
    assert code == OK and "revert to 1" in out and "maintenance_mode true -> false" in out
    assert out.splitlines()[-1] == "older records: --cursor abc"


def test_revert_to_version_zero_the_seeded_state_is_sent():
    transport = FakeTransport(200, {"applied": True, "version": 9, "changed": {"signup_enabled": {"old": 1, "new": 0}}})
    code, _, _ = run(["revert", "0", "--reason", "back to the seed"], transport)
    assert code == OK and json.loads(transport.sent[0].body) == {"version": 0, "reason": "back to the seed"}


@pytest.mark.parametrize("version", ["²", "-1", "+1", "1.0", "٣"])
def test_a_version_is_ascii_digits(version, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["revert", version, "--reason", "r"], transport=FakeTransport())
    assert caught.value.code == BAD_INPUT


@pytest.mark.parametrize("limit", ["0", "101", "+5", "²", "9" * 5000])
def test_a_history_limit_is_1_to_100_in_ascii_digits(limit, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["history", "--limit", limit], transport=FakeTransport())
    assert caught.value.code == BAD_INPUT


def test_writes_carry_a_fresh_idempotency_key_per_command_and_reads_none():
    # Given two set commands, a revert, a restore, a scheduled change and a get
    transport = FakeTransport(200, {"applied": False, "version": 5, "changed": {}})
    run(["set", "signup_enabled=false", "--reason", "r"], transport)
    run(["set", "signup_enabled=false", "--reason", "r"], transport)
    run(["revert", "3", "--reason", "r"], transport)
    run(["restore", "--reason", "r"], transport)
    run(["schedule", "create", "signup_enabled=false", "--at", "2027-03-01T09:00:00Z", "--reason", "r"], transport)
    transport.answer = Answer(200, {}, FLAGS_BODY)
    run(["get"], transport)
    # Then every write carries its own uuid4 Idempotency-Key, the read none
    keys = [sent.headers.get("Idempotency-Key") for sent in transport.sent]
    assert [sent.method for sent in transport.sent] == ["PATCH", "PATCH", "POST", "POST", "POST", "GET"]
    assert keys[5] is None
    assert len(set(keys[:5])) == 5
    assert all(uuid.UUID(key).version == 4 for key in keys[:5])


@pytest.mark.parametrize(
    ("body", "printed"),
    [
        ({"applied": True, "restored": True, "version": 9, "changed": {}}, "restored the missing flags item"),
        ({"applied": False, "version": 9, "changed": {}}, "no change"),
    ],
    ids=["restored", "existing-item"],
)
def test_restore_says_whether_it_wrote(body, printed):
    code, out, _ = run(["restore", "--reason", "r"], FakeTransport(200, body))
    assert code == OK and printed in out and "version 9" in out


def test_history_escapes_control_characters_from_the_trail():
    # Given a record whose reason, actor and kind carry ANSI escapes and newlines
    record = {
        "version": 4,
        "kind": "change\u001b[2J",
        "actor": "arn:aws:iam::1:user/\u001b]0;owned\u0007",
        "reason": "fine\n5  fake row\u001b[31m\u202e",
        "at": "T",
        "changes": {},
    }
    code, out, _ = run(["history"], FakeTransport(200, {"records": [record], "next_cursor": None}))
    # Then the terminal gets no control character but the table's newlines, and the escapes are visible
    assert code == OK
    assert not any(char in out for char in "\u001b\u0007\u202e\r")
    assert len(out.splitlines()) == 2  # the header and one row: no forged row
    assert "\\x1b[2J" in out and "fine\\n5  fake row" in out and "\\u202e" in out


def test_a_change_of_maintenance_ownership_alone_is_shown():
    # Given a record that changed no value, only who holds maintenance
    record = {
        "version": 6,
        "kind": "window-start",
        "actor": "scheduler:weekly",
        "reason": "window",
        "at": "T",
        "changes": {},
        "maintenance_owner": {"old": None, "new": "weekly"},
    }
    code, out, _ = run(["history"], FakeTransport(200, {"records": [record], "next_cursor": None}))
    # Then the row says whose it became
    assert code == OK and "maintenance owner manual -> weekly" in out


def test_revert_posts_the_version_and_reason():
    transport = FakeTransport(200, {"applied": False, "version": 5, "changed": {}})
    code, out, _ = run(["revert", "3", "--reason", "back"], transport)
    assert json.loads(transport.sent[0].body) == {"version": 3, "reason": "back"}
    assert code == OK and out.startswith("no change")


# -- targets ---------------------------------------------------------------------------------------------


def test_the_stack_output_names_the_api_url(tmp_path):
    # Given: what `cdk deploy --outputs-file` writes
    outputs = tmp_path / "cdk-outputs.json"
    outputs.write_text(
        json.dumps(
            {
                "singleton-flags-prod": {
                    STACK_OUTPUT_API_URL: "https://a1.execute-api.eu-west-1.amazonaws.com/prod/",
                    "TableName": "t",
                }
            }
        )
    )
    # Then
    assert url_from_stack_outputs(outputs) == "https://a1.execute-api.eu-west-1.amazonaws.com/prod/"


@pytest.mark.parametrize("document", ["{}", "not json", json.dumps({"a": {"ApiUrl": "u1"}, "b": {"ApiUrl": "u2"}})])
def test_stack_outputs_without_exactly_one_api_url_are_bad_input(tmp_path, document):
    outputs = tmp_path / "cdk-outputs.json"
    outputs.write_text(document)
    with pytest.raises(FlagctlError) as caught:
        url_from_stack_outputs(outputs)
    assert caught.value.exit_code == BAD_INPUT


def test_the_output_name_is_the_stacks():
    from singleton_flags_infra.constants import OUTPUT_API_URL

    assert STACK_OUTPUT_API_URL == OUTPUT_API_URL


@pytest.mark.parametrize(
    ("url", "default", "region"),
    [
        ("https://a1b2c3.execute-api.eu-west-3.amazonaws.com/prod", "us-east-1", "eu-west-3"),
        ("https://a1.execute-api.cn-north-1.amazonaws.com.cn/prod", None, "cn-north-1"),
        ("https://flags.example.com/", "ap-south-1", "ap-south-1"),
    ],
)
def test_the_signing_region_is_the_apis_own_else_the_configured_one(url, default, region):
    assert region_for(url, default) == region


def test_a_custom_domain_without_a_region_is_bad_input():
    with pytest.raises(FlagctlError):
        region_for("https://flags.example.com/", None)


def test_a_url_that_is_not_http_is_bad_input():
    with pytest.raises(FlagctlError):
        FlagsClient("ftp://example.com")


# -- SigV4 -----------------------------------------------------------------------------------------------


def test_signing_matches_aws_sigv4_test_suite_get_vanilla(frozen_time):
    # Given: the request, credentials and time of AWS's published SigV4 test vector "get-vanilla"
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    # When
    signed = sign(
        Outgoing("GET", "https://example.amazonaws.com/", {}, None), credentials, "us-east-1", service="service"
    )
    # Then
    assert signed.headers["X-Amz-Date"] == "20150830T123600Z"
    assert signed.headers["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    )


def test_a_deployed_api_is_called_signed_for_execute_api_with_the_default_credentials(frozen_time, monkeypatch):
    # Given: the default chain finds the environment's credentials (set by aws_env), no instance metadata
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    transport = FakeTransport(200, {"applied": True, "version": 2, "changed": {}})
    url = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod/"
    # When
    code, _, _ = run(["--url", url, "set", "signup_enabled=true", "--reason", "r"], transport)
    # Then
    (sent,) = transport.sent
    assert code == OK and sent.url == "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod/flags"
    authorization = sent.headers["Authorization"]
    assert authorization.startswith(
        "AWS4-HMAC-SHA256 Credential=testing/20150830/eu-west-1/execute-api/aws4_request, "
        "SignedHeaders=accept;content-type;host;idempotency-key;x-amz-date;x-amz-security-token, Signature="
    )
    assert len(authorization.rsplit("Signature=", 1)[1]) == 64
    assert sent.headers["X-Amz-Security-Token"] == "testing" and sent.headers["X-Amz-Date"] == "20150830T123600Z"


def test_without_credentials_a_deployed_call_is_an_auth_failure(monkeypatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    transport = FakeTransport()
    code, _, err = run(["--url", "https://a1.execute-api.eu-west-1.amazonaws.com/prod", "get"], transport)
    assert code == AUTH and transport.sent == []
    assert "no AWS credentials" in err


def test_restore_posts_the_reason_to_the_restore_route() -> None:
    from flagctl.cli import build_parser

    args = build_parser().parse_args(["restore", "--reason", "item deleted by mistake"])
    assert (args.command, args.reason) == ("restore", "item deleted by mistake")


# -- guarded changes -------------------------------------------------------------------------------------

GUARDED_BODY = {
    "flags": FLAGS_BODY["flags"],
    "version": 8,
    "reason": "STATIC",
    "applied": True,
    "changed": {"signup_enabled": {"old": True, "new": False}},
    "guard": {"alarms": ["app-guard-errors"], "bake_ends_at": "2026-01-01T00:30:00.000+00:00", "close_scheduled": True},
}


def test_set_with_a_guard_sends_its_alarms_and_bake_and_prints_it() -> None:
    transport = FakeTransport(body=GUARDED_BODY)
    argv = ["set", "signup_enabled=false", "--reason", "r", "--guard-alarm", "app-guard-errors"]
    argv += ["--guard-alarm", "app-guard-latency", "--bake-minutes", "30"]

    code, out, _ = run(argv, transport)

    assert code == OK
    (sent,) = transport.sent
    assert json.loads(sent.body or b"")["guard"] == {
        "alarms": ["app-guard-errors", "app-guard-latency"],
        "bake_minutes": 30,
    }
    assert "guarded by app-guard-errors until 2026-01-01T00:30:00.000+00:00" in out


def test_revert_with_a_guard_sends_it() -> None:
    transport = FakeTransport(body=GUARDED_BODY)

    code, _, _ = run(["revert", "3", "--reason", "r", "--guard-alarm", "a-guard-x", "--bake-minutes", "5"], transport)

    assert code == OK
    assert json.loads(transport.sent[0].body or b"") == {
        "version": 3,
        "reason": "r",
        "guard": {"alarms": ["a-guard-x"], "bake_minutes": 5},
    }


@pytest.mark.parametrize(
    "extra", [["--guard-alarm", "a"], ["--bake-minutes", "5"]], ids=["alarm-without-bake", "bake-without-alarm"]
)
def test_a_half_given_guard_is_bad_input_and_sends_nothing(extra: list[str]) -> None:
    transport = FakeTransport()

    code, _, _ = run(["set", "signup_enabled=false", "--reason", "r", *extra], transport)

    assert code == BAD_INPUT
    assert transport.sent == []


@pytest.mark.parametrize("minutes", ["0", "1441", "five", "-5"])
def test_a_bake_out_of_range_is_a_usage_error(minutes: str) -> None:
    transport = FakeTransport()

    with pytest.raises(SystemExit) as caught:
        run(
            ["set", "signup_enabled=false", "--reason", "r", "--guard-alarm", "a", "--bake-minutes", minutes], transport
        )

    assert caught.value.code == BAD_INPUT
    assert transport.sent == []


def test_guards_lists_them_as_a_table_with_the_next_cursor() -> None:
    body = {
        "guards": [
            {
                "version": 9,
                "state": "reverted",
                "alarms": ["app-guard-errors"],
                "bake_ends_at": "2026-01-01T00:30:00.000+00:00",
                "outcome": "alarm went into ALARM during the bake",
            }
        ],
        "next_cursor": "abc",
    }
    transport = FakeTransport(body=body)

    code, out, _ = run(["guards", "--limit", "1"], transport)

    assert code == OK
    assert transport.sent[0].url.endswith("/flags/guards?limit=1")
    assert out.splitlines()[0].split() == ["VERSION", "STATE", "ALARMS", "BAKE", "ENDS", "OUTCOME"]
    assert "reverted" in out and "--cursor abc" in out


# -- scheduled changes -----------------------------------------------------------------------------------

SCHEDULE = {
    "id": "20270301T080000Z-3f9a1c2b",
    "status": "pending",
    "flags": {"signup_enabled": True},
    "reason": "launch",
    "at": "2027-03-01T09:00:00Z",
    "local_time": "2027-03-01T10:00:00",
    "timezone": "Europe/Paris",
    "if_version": 7,
    "created_by": "arn:aws:iam::123456789012:user/alice",
    "created_at": "2027-03-01T08:00:00.000+00:00",
}


def test_schedule_create_sends_the_change_its_time_zone_and_if_version() -> None:
    transport = FakeTransport(201, SCHEDULE)
    argv = ["schedule", "create", "signup_enabled=true", "--at", "2027-03-01T10:00:00", "--timezone", "Europe/Paris"]
    code, out, _ = run([*argv, "--reason", "launch", "--if-version", "7"], transport)
    assert code == OK
    (sent,) = transport.sent
    assert (sent.method, sent.url) == ("POST", "http://127.0.0.1:3000/flags/schedules")
    assert json.loads(sent.body or b"") == {
        "flags": {"signup_enabled": True},
        "reason": "launch",
        "at": "2027-03-01T10:00:00",
        "timezone": "Europe/Paris",
        "if_version": 7,
    }
    assert "20270301T080000Z-3f9a1c2b" in out and "2027-03-01T10:00:00 Europe/Paris" in out
    assert "applies at 2027-03-01T09:00:00Z" in out


def test_schedule_list_and_cancel() -> None:
    transport = FakeTransport(200, {"schedules": [SCHEDULE], "next_cursor": "abc"})
    code, out, _ = run(["schedule", "list", "--limit", "5"], transport)
    assert code == OK
    assert transport.sent[0].url == "http://127.0.0.1:3000/flags/schedules?limit=5"
    assert "pending" in out and "older: --cursor abc" in out
    transport = FakeTransport(200, {"schedule": {**SCHEDULE, "status": "cancelled"}, "schedule_deleted": True})
    code, out, _ = run(["schedule", "cancel", SCHEDULE["id"]], transport)
    assert code == OK
    assert (transport.sent[0].method, transport.sent[0].url) == (
        "DELETE",
        f"http://127.0.0.1:3000/flags/schedules/{SCHEDULE['id']}",
    )
    assert out.strip() == f"cancelled {SCHEDULE['id']}"


def test_cancelling_a_change_no_longer_pending_is_a_conflict() -> None:
    error = {"error": {"code": "SCHEDULE_NOT_PENDING", "message": "it is applied", "status": "applied"}}
    code, _, err = run(["schedule", "cancel", SCHEDULE["id"]], FakeTransport(409, error))
    assert code == CONFLICT
    assert "SCHEDULE_NOT_PENDING" in err


# -- the signing region of a custom domain ---------------------------------------------------------------------

CUSTOM_DOMAIN = "https://flags.example.com/prod"


def signed_region(sent: Outgoing) -> str:
    scope = sent.headers["Authorization"].split("Credential=", 1)[1].split(",", 1)[0]
    return scope.split("/")[2]


@pytest.fixture
def no_region(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither region variable set, no profile file (the unit tier points AWS_CONFIG_FILE at a missing file)."""
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.parametrize(
    ("variables", "profile_region", "region"),
    [
        ({"AWS_REGION": "eu-central-1", "AWS_DEFAULT_REGION": "us-west-2"}, None, "eu-central-1"),
        ({"AWS_REGION": "eu-central-1"}, "ap-south-1", "eu-central-1"),
        ({"AWS_DEFAULT_REGION": "us-west-2"}, "ap-south-1", "us-west-2"),
        ({"AWS_REGION": "", "AWS_DEFAULT_REGION": "us-west-2"}, None, "us-west-2"),
        ({}, "ap-south-1", "ap-south-1"),
    ],
    ids=["aws-region-over-default", "aws-region-over-profile", "default-over-profile", "empty-is-unset", "profile"],
)
def test_a_custom_domain_is_signed_for_aws_region_then_aws_default_region_then_the_profiles(
    no_region: None, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], profile_region: str | None, region: str
) -> None:
    # Given the region variables and the default profile's region
    for variable, value in variables.items():
        monkeypatch.setenv(variable, value)
    if profile_region is not None:
        Path(os.environ["AWS_CONFIG_FILE"]).write_text(f"[default]\nregion = {profile_region}\n")
    transport = FakeTransport()
    # When flagctl calls an API on a custom domain (its host names no region)
    code, _, err = run(["--url", CUSTOM_DOMAIN, "get"], transport)
    # Then it signs for the first region found, in the SDKs' order
    assert code == OK, err
    assert signed_region(transport.sent[0]) == region


def test_a_custom_domain_without_any_region_is_bad_input_naming_aws_region(no_region: None) -> None:
    transport = FakeTransport()
    code, _, err = run(["--url", CUSTOM_DOMAIN, "get"], transport)
    assert (code, transport.sent) == (BAD_INPUT, [])
    assert err.startswith(f"flagctl: cannot tell the AWS region of {CUSTOM_DOMAIN}: set AWS_REGION")


def test_a_region_variable_that_is_no_region_name_is_bad_input_shown_escaped(
    no_region: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1\x1b[2J\u202e")
    transport = FakeTransport()
    code, _, err = run(["--url", CUSTOM_DOMAIN, "get"], transport)
    assert (code, transport.sent) == (BAD_INPUT, [])
    assert err == "flagctl: AWS_REGION is not an AWS region name: eu-west-1\\x1b[2J\\u202e\n"


# -- fallbacks served, and output laid out as written -----------------------------------------------------

FALLBACKS_BODY = {
    "flags": {"signup_enabled": False, "maintenance_mode": True},
    "version": None,
    "reason": "DEFAULT",
    "fetched_at": None,
    "maintenance": {"on": True, "held_by": "manual", "window": None, "deadline": None},
}


def test_get_while_the_fallbacks_are_served_says_so_on_stderr_and_exits_6() -> None:
    # Given: the API serves the declared fallbacks (the item is missing)
    transport = FakeTransport(200, FALLBACKS_BODY)
    # When
    code, out, err = run(["get"], transport)
    # Then: the values still shown, the warning loud on stderr, a status of its own
    assert code == FALLBACKS == 6
    assert "maintenance_mode  true" in out
    assert err.startswith("flagctl: WARNING: these are the declared FALLBACKS (reason DEFAULT)")
    assert "flagctl restore" in err


def test_with_json_get_a_flag_the_answer_lists_as_fallen_back_has_reason_default_the_others_the_reads() -> None:
    # Given an answer whose item was read (CACHED) but one flag is served as its declared fallback
    body = {**FLAGS_BODY, "fallen_back": ["signup_enabled"]}
    # When a script asks for every flag as JSON
    code, out, _ = run(["--json", "get"], FakeTransport(200, body))
    # Then that flag's reason is DEFAULT, every other one's is the read's
    reasons = json.loads(out)["reasons"]
    assert reasons.pop("signup_enabled") == "DEFAULT"
    assert set(reasons.values()) == {"CACHED"} and code == OK


def test_get_one_flag_served_as_its_fallback_exits_6() -> None:
    body = {"name": "signup_enabled", "value": False, "version": 4, "reason": "DEFAULT", "fetched_at": None}
    code, out, err = run(["get", "signup_enabled"], FakeTransport(200, body))
    assert code == FALLBACKS
    assert out.startswith("signup_enabled = false")
    assert "FALLBACKS" in err


def test_with_json_get_gives_each_flags_reason_and_the_fallbacks_warning_as_json_on_stderr() -> None:
    code, out, err = run(["--json", "get"], FakeTransport(200, FALLBACKS_BODY))
    assert code == FALLBACKS
    assert json.loads(out)["reasons"] == {"signup_enabled": "DEFAULT", "maintenance_mode": "DEFAULT"}
    assert json.loads(err)["error"]["code"] == "FALLBACKS_SERVED"


def test_a_normal_read_exits_0_with_nothing_on_stderr() -> None:
    code, _, err = run(["get"], FakeTransport())
    assert (code, err) == (OK, "")


def test_a_412_shows_its_details_as_json_never_a_python_repr() -> None:
    # Given: a stale --if-match; the API sends the current flags
    error = {
        "error": {
            "code": "PRECONDITION_FAILED",
            "message": "at version 9",
            "current_version": 9,
            "flags": {"signup_enabled": True, "search_ranking": None},
        }
    }
    # When
    code, _, err = run(["set", "signup_enabled=false", "--reason", "r", "--if-match", "7"], FakeTransport(412, error))
    # Then
    assert code == CONFLICT
    assert 'flags={"signup_enabled": true, "search_ranking": null}' in err
    assert "True" not in err and "None" not in err


def test_a_guarded_change_prints_its_guard_on_a_line_of_its_own() -> None:
    code, out, _ = run(["set", "signup_enabled=false", "--reason", "r"], FakeTransport(body=GUARDED_BODY))
    assert code == OK
    assert "\\n" not in out
    assert out.splitlines()[-1] == "guarded by app-guard-errors until 2026-01-01T00:30:00.000+00:00"


def test_a_scheduled_change_prints_when_it_applies_on_a_line_of_its_own() -> None:
    code, out, _ = run(
        ["schedule", "create", "signup_enabled=true", "--at", "2027-03-01T09:00:00Z", "--reason", "r"],
        FakeTransport(201, SCHEDULE),
    )
    assert code == OK
    assert "\\n" not in out
    assert out.splitlines()[-1] == "applies at 2027-03-01T09:00:00Z"


def test_text_from_the_answer_is_still_escaped_on_those_lines() -> None:
    body = {**GUARDED_BODY, "guard": {**GUARDED_BODY["guard"], "alarms": ["a-guard\nFAKE LINE"]}}
    code, out, _ = run(["set", "signup_enabled=false", "--reason", "r"], FakeTransport(body=body))
    assert code == OK
    assert out.splitlines()[-1].startswith("guarded by a-guard\\nFAKE LINE until")
