"""What a hostile client may send the API, and what the API must answer: one case table for every tier.

Each case is one REST proxy event for the write or the read function, with the answer it must get. For every
case: no 5xx, the error contract (``{"error": {"code", "message", ...}}``, the rule where there is one, a body
that encodes as UTF-8), and the stored state: a refusal changes neither the item nor the audit trail; an applied
write adds exactly one audit record, the next version, with the reason as trimmed. The trail is read through
``FlagStore.history()`` only. ``tests/unit/test_hostile_input.py`` runs the table on moto,
``tests/integration/test_hostile_input_local.py`` on DynamoDB Local.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from singleton_flags.keys import VERSION_ATTR
from singleton_flags_service.api.routes import ROUTES, RouteMatch, match_route
from singleton_flags_service.contract import READ_FUNCTION
from singleton_flags_service.writes.store import FlagStore
from tests.support.events import rest_event
from tests.support.tables import read_singleton

WRITE, READ = "write", "read"
REASON = "hostile input"
VALID_CHANGE = {"flags": {"signup_enabled": False}, "reason": REASON}
VALID_BODY = json.dumps(VALID_CHANGE)
CALLER = "arn:aws:iam::123456789012:user/hostile"


@dataclass(frozen=True)
class Case:
    id: str
    method: str
    path: str
    body: str | None = None
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)
    query: tuple[tuple[str, str], ...] = ()
    base64_body: bool = False
    status: int = 400
    code: str | None = "INVALID_REQUEST"
    rule: str | None = None
    flag: str | None = None
    reason: str = REASON  # the reason an applied write must have recorded
    path_parameters: dict[str, str] | None = field(default=None, hash=False)
    to: str | None = None  # the function; by default the one the route table names (the write one if none)

    @property
    def function(self) -> str:
        if self.to is not None:
            return self.to
        found = match_route(ROUTES, self.method, self.path)
        return READ if isinstance(found, RouteMatch) and found.route.function == READ_FUNCTION else WRITE

    @property
    def applied(self) -> bool:
        return self.status == 200 and self.method in ("PATCH", "POST")


def patch(case_id: str, body: Any, **expect: Any) -> Case:
    text = body if isinstance(body, str) else json.dumps(body)
    return Case(case_id, "PATCH", "/flags", text, **expect)


def revert(case_id: str, body: Any, **expect: Any) -> Case:
    text = body if isinstance(body, str) else json.dumps(body)
    return Case(case_id, "POST", "/flags/revert", text, **expect)


def with_if_match(case_id: str, *values: str, **expect: Any) -> Case:
    headers = (("Content-Type", "application/json"), *(("If-Match", value) for value in values))
    return Case(case_id, "PATCH", "/flags", VALID_BODY, headers=headers, **expect)


def request(case_id: str, body: Any, **expect: Any) -> Case:
    text = body if isinstance(body, str) else json.dumps(body)
    return Case(case_id, "POST", "/flags/change-requests", text, **expect)


def decide(case_id: str, request_id: str, action: str, body: Any, **expect: Any) -> Case:
    text = body if isinstance(body, str) else json.dumps(body)
    return Case(case_id, "POST", f"/flags/change-requests/{request_id}/{action}", text, **expect)


def history(case_id: str, *query: tuple[str, str], **expect: Any) -> Case:
    return Case(case_id, "GET", "/flags/history", None, headers=(), query=tuple(query), **expect)


def read(case_id: str, path: str, *headers: tuple[str, str], **expect: Any) -> Case:
    return Case(case_id, "GET", path, None, headers=tuple(headers), **expect)


def nested(depth: int) -> str:
    """A PATCH body whose flag value nests ``depth`` levels in all (the body object is level 1)."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return '{"flags": {"signup_enabled": ' + inner + '}, "reason": "deep"}'


def _with_flags(flags_json: str, reason: str = REASON) -> str:
    return '{"flags": {' + flags_json + '}, "reason": ' + json.dumps(reason) + "}"


HUGE_INT = "9" * 5000  # beyond Python's 4,300-digit int-string limit
APPLIED = {"status": 200, "code": None}
PRECONDITION = {"status": 412, "code": "PRECONDITION_FAILED"}

CASES: tuple[Case, ...] = (
    # -- valid writes: each one applied, exactly one audit record --------------------------------------
    patch("valid-patch", VALID_CHANGE, **APPLIED),
    patch(
        "valid-reason-with-newline-and-tab",
        {**VALID_CHANGE, "reason": "line one\n\tline two"},
        reason="line one\n\tline two",
        **APPLIED,
    ),
    patch(
        "valid-reason-trimmed-to-500", {**VALID_CHANGE, "reason": "  " + "r" * 500 + "  "}, reason="r" * 500, **APPLIED
    ),
    patch("valid-float-zero", {"flags": {"trace_sample_rate": 0}, "reason": REASON}, **APPLIED),
    patch(
        "valid-body-just-under-64-kib",
        '{"flags": {"signup_enabled": false},' + " " * 65000 + '"reason": "hostile input"}',
        **APPLIED,
    ),
    Case(
        "valid-content-type-uppercase",
        "PATCH",
        "/flags",
        VALID_BODY,
        headers=(("Content-Type", "APPLICATION/JSON"),),
        **APPLIED,
    ),
    Case(
        "valid-content-type-mixed-case-with-charset",
        "PATCH",
        "/flags",
        VALID_BODY,
        headers=(("content-type", "Application/Json; charset=utf-8"),),
        **APPLIED,
    ),
    Case(
        "valid-base64-body",
        "PATCH",
        "/flags",
        base64.b64encode(VALID_BODY.encode()).decode(),
        base64_body=True,
        **APPLIED,
    ),
    with_if_match("valid-if-match-trailing-comma", '"0",', **APPLIED),
    with_if_match("valid-if-match-list", '"7", W/"0", "0"', **APPLIED),
    with_if_match("valid-if-match-two-fields", '"9"', '"0"', **APPLIED),
    with_if_match("valid-if-match-wildcard", "*", **APPLIED),
    Case(
        "valid-patch-with-a-16-kib-header",
        "PATCH",
        "/flags",
        VALID_BODY,
        headers=(("Content-Type", "application/json"), ("X-Padding", "p" * 16384)),
        **APPLIED,
    ),
    # -- A: what used to be a 5xx ------------------------------------------------------------------------
    with_if_match("if-match-superscript-digit", '"²"', rule="if_match"),
    history("limit-superscript-digit", ("limit", "²"), rule="limit"),
    history("limit-over-4300-digits", ("limit", HUGE_INT), rule="limit"),
    history("limit-arabic-indic-digits", ("limit", "\u0665"), rule="limit"),  # ARABIC-INDIC DIGIT FIVE
    patch(
        "int-over-4300-digits",
        _with_flags(f'"api_rate_limit_per_minute": {HUGE_INT}'),
        code="INVALID_VALUE",
        rule="range",
        flag="api_rate_limit_per_minute",
    ),
    patch(
        "int-over-4300-digits-for-a-float",
        _with_flags(f'"trace_sample_rate": {HUGE_INT}'),
        code="INVALID_VALUE",
        rule="range",
        flag="trace_sample_rate",
    ),
    patch(
        "int-over-4300-digits-for-a-bool",
        _with_flags(f'"signup_enabled": {HUGE_INT}'),
        code="INVALID_VALUE",
        rule="type",
        flag="signup_enabled",
    ),
    patch(
        "int-over-4300-digits-as-reason",
        '{"flags": {"signup_enabled": false}, "reason": ' + HUGE_INT + "}",
        rule="reason",
    ),
    revert("int-over-4300-digits-as-version", '{"version": ' + HUGE_INT + ', "reason": "x"}', rule="version"),
    patch("nested-965-levels-in-2-kb", '{"flags": ' + "[" * 965 + "]" * 965 + ', "reason": "x"}', rule="depth"),
    patch("nested-33-levels", nested(33), rule="depth"),
    patch(
        "nested-32-levels-is-read-then-refused-by-type",
        nested(32),
        code="INVALID_VALUE",
        rule="type",
        flag="signup_enabled",
    ),
    patch("lone-surrogate-flag-name", '{"flags": {"\\ud800": true}, "reason": "x"}', rule="encoding"),
    patch("lone-surrogate-reason", '{"flags": {"signup_enabled": false}, "reason": "x\\udfff"}', rule="encoding"),
    patch("raw-lone-surrogate", '{"flags": {"signup_enabled": false}, "reason": "x\ud800"}', rule="encoding"),
    patch(
        "body-over-64-kib",
        '{"flags": {"signup_enabled": false}, "reason": "' + "r" * 66000 + '"}',
        status=413,
        code="PAYLOAD_TOO_LARGE",
        rule="body_size",
    ),
    # -- B: numbers DynamoDB refuses ---------------------------------------------------------------------
    patch(
        "float-below-dynamodb-smallest",
        {"flags": {"trace_sample_rate": 1e-200}, "reason": REASON},
        code="INVALID_VALUE",
        rule="range",
        flag="trace_sample_rate",
    ),
    patch(
        "float-that-underflows-to-zero",
        _with_flags('"trace_sample_rate": 1e-400'),
        code="INVALID_VALUE",
        rule="range",
        flag="trace_sample_rate",
    ),
    patch(
        "float-that-overflows",
        _with_flags('"trace_sample_rate": 1e400'),
        code="INVALID_VALUE",
        rule="range",
        flag="trace_sample_rate",
    ),
    patch(
        "int-with-39-significant-digits",
        _with_flags('"api_rate_limit_per_minute": ' + "1" * 39),
        code="INVALID_VALUE",
        rule="range",
        flag="api_rate_limit_per_minute",
    ),
    patch(
        "int-of-127-digits",
        _with_flags('"api_rate_limit_per_minute": 1' + "0" * 126),
        code="INVALID_VALUE",
        rule="range",
        flag="api_rate_limit_per_minute",
    ),
    patch("nan", _with_flags('"trace_sample_rate": NaN'), rule="json"),
    patch("infinity", _with_flags('"trace_sample_rate": Infinity'), rule="json"),
    patch("minus-infinity", _with_flags('"trace_sample_rate": -Infinity'), rule="json"),
    # -- C: request shape --------------------------------------------------------------------------------
    patch("body-an-array", [VALID_CHANGE], rule="json"),
    revert("revert-body-an-array", [{"version": 1, "reason": REASON}], rule="json"),
    patch("body-a-string", '"x"', rule="json"),
    patch("body-a-number", "12", rule="json"),
    patch("body-null", "null", rule="json"),
    patch("body-true", "true", rule="json"),
    patch("non-string-json-key", '{"flags": {1: true}, "reason": "x"}', rule="json"),
    patch(
        "duplicate-top-level-key",
        '{"flags": {"signup_enabled": false}, "reason": "a", "reason": "b"}',
        rule="duplicate_key",
    ),
    patch("duplicate-flag", _with_flags('"signup_enabled": false, "signup_enabled": true'), rule="duplicate_key"),
    Case(
        "content-type-jsonx",
        "PATCH",
        "/flags",
        VALID_BODY,
        headers=(("Content-Type", "application/jsonx"),),
        status=415,
        code="UNSUPPORTED_MEDIA_TYPE",
        rule="content_type",
    ),
    Case(
        "content-type-json-patch",
        "PATCH",
        "/flags",
        VALID_BODY,
        headers=(("Content-Type", "application/json-patch+json"),),
        status=415,
        code="UNSUPPORTED_MEDIA_TYPE",
        rule="content_type",
    ),
    Case(
        "content-type-text-json",
        "POST",
        "/flags/revert",
        '{"version": 0, "reason": "x"}',
        headers=(("Content-Type", "text/json"),),
        status=415,
        code="UNSUPPORTED_MEDIA_TYPE",
        rule="content_type",
    ),
    with_if_match("if-match-empty", "", rule="if_match"),
    with_if_match("if-match-blank", "   ", rule="if_match"),
    with_if_match("if-match-only-commas", " , ,", rule="if_match"),
    with_if_match("if-match-garbage-before-a-tag", 'xx "0"', rule="if_match"),
    with_if_match("if-match-unquoted", "0", rule="if_match"),
    with_if_match("if-match-unterminated", '"0', rule="if_match"),
    with_if_match("if-match-wildcard-beside-a-tag", '*, "0"', rule="if_match"),
    with_if_match("if-match-wildcard-and-a-second-field", "*", '"0"', rule="if_match"),
    with_if_match("if-match-empty-second-field", '"0"', "", rule="if_match"),
    with_if_match("if-match-weak-tag", 'W/"0"', **PRECONDITION),
    with_if_match("if-match-leading-zeros", '"0000"', **PRECONDITION),
    with_if_match("if-match-quoted-star", '"*"', **PRECONDITION),
    with_if_match("if-match-not-a-version", '"seven"', **PRECONDITION),
    with_if_match("if-match-version-too-long", '"' + "9" * 40 + '"', **PRECONDITION),
    with_if_match("if-match-huge-list", ", ".join(f'"{n}"' for n in range(1, 2000)), **PRECONDITION),
    Case(
        "body-with-replacement-character",
        "PATCH",
        "/flags",
        '{"flags": {"signup_enabled": false}, "reason": "caf\ufffd"}',
        rule="encoding",
    ),
    patch(
        "escaped-replacement-character", '{"flags": {"signup_enabled": false}, "reason": "caf\\ufffd"}', rule="encoding"
    ),
    Case("base64-not-base64", "PATCH", "/flags", "%%%not base64%%%", base64_body=True, rule="encoding"),
    Case(
        "base64-of-invalid-utf-8",
        "PATCH",
        "/flags",
        base64.b64encode(b'{"reason": "\xff\xfe"}').decode(),
        base64_body=True,
        rule="encoding",
    ),
    patch("reason-zero-width-space", {**VALID_CHANGE, "reason": "\u200b"}, rule="reason"),
    patch("reason-nul", {**VALID_CHANGE, "reason": "\u0000"}, rule="reason"),
    patch(
        "reason-only-whitespace-and-format-characters",
        {**VALID_CHANGE, "reason": " \u2060\ufeff\u00a0 "},
        rule="reason",
    ),
    patch("reason-with-ansi-escape", {**VALID_CHANGE, "reason": "ok \u001b[2J\u001b[31mred"}, rule="reason_characters"),
    patch("reason-with-carriage-return", {**VALID_CHANGE, "reason": "ok\rforged line"}, rule="reason_characters"),
    patch("reason-with-nul-inside", {**VALID_CHANGE, "reason": "ok\u0000ok"}, rule="reason_characters"),
    patch("reason-with-bidi-override", {**VALID_CHANGE, "reason": "ok \u202eevil"}, rule="reason_characters"),
    patch("reason-501-characters-after-trimming", {**VALID_CHANGE, "reason": "r" * 501}, rule="reason_length"),
    revert("revert-reason-zero-width-space", {"version": 1, "reason": "\u200b"}, rule="reason"),
    revert("revert-version-negative", {"version": -1, "reason": REASON}, rule="version"),
    revert("revert-version-float", {"version": 1.0, "reason": REASON}, rule="version"),
    history("limit-repeated", ("limit", "5"), ("limit", "6"), rule="limit"),
    history("limit-with-plus-sign", ("limit", "+5"), rule="limit"),
    history("limit-with-spaces", ("limit", " 5 "), rule="limit"),
    history("limit-with-underscore", ("limit", "1_0"), rule="limit"),
    history("limit-leading-zeros", ("limit", "00005"), status=200, code=None),  # ASCII digits, as api.md asks
    history("cursor-repeated", ("cursor", "eyJ2IjogMX0"), ("cursor", "eyJ2IjogMX0"), rule="cursor"),
    history("cursor-lone-surrogate", ("cursor", "\ud800"), rule="cursor"),
    history("valid-history", ("limit", "5"), status=200, code=None),
    history("valid-history-with-unknown-parameter", ("limit", "5"), ("x", "\u0000"), status=200, code=None),
    # -- unknown methods and paths -----------------------------------------------------------------------
    Case("unknown-method-on-flags", "PUT", "/flags", VALID_BODY, status=405, code="METHOD_NOT_ALLOWED"),
    Case("made-up-method", "BREW", "/flags/history", None, headers=(), status=405, code="METHOD_NOT_ALLOWED"),
    Case("unknown-path", "POST", "/flags/revert/more", VALID_BODY, status=404, code="NOT_FOUND"),
    # -- the read function ---------------------------------------------------------------------------------
    read(
        "read-encoded-slash-is-a-name-not-the-collection",
        "/flags/%2F",
        status=404,
        code="FLAG_NOT_FOUND",
        path_parameters={"name": "%2F"},
    ),
    read(
        "read-encoded-underscore-is-another-name",
        "/flags/signup%5Fenabled",
        status=404,
        code="FLAG_NOT_FOUND",
        path_parameters={"name": "signup%5Fenabled"},
    ),
    # any name on /flags/{name} is that route's: an undeclared one, whatever its characters
    read(
        "read-lone-surrogate-name",
        "/flags/\ud800",
        status=404,
        code="FLAG_NOT_FOUND",
        path_parameters={"name": "\ud800"},
    ),
    read(
        "read-percent-encoded-non-ascii-name",
        "/flags/caf%C3%A9",
        status=404,
        code="FLAG_NOT_FOUND",
        path_parameters={"name": "caf%C3%A9"},
    ),
    read(
        "read-very-long-name",
        "/flags/" + "n" * 5000,
        status=404,
        code="FLAG_NOT_FOUND",
        path_parameters={"name": "n" * 5000},
    ),
    read("read-if-none-match-superscript", "/flags", ("If-None-Match", '"²"'), status=200, code=None),
    read("read-if-none-match-garbage", "/flags", ("If-None-Match", 'xx "0" ,,, W/'), status=200, code=None),
    read("read-if-none-match-empty", "/flags", ("If-None-Match", ""), status=200, code=None),
    read("read-if-none-match-huge", "/flags", ("If-None-Match", '"1", ' * 3000 + '"2"'), status=200, code=None),
    read("read-if-none-match-weak-current", "/flags", ("If-None-Match", 'W/"0"'), status=304, code=None),
    read(
        "read-if-none-match-in-a-second-field",
        "/flags",
        ("If-None-Match", '"5"'),
        ("If-None-Match", '"0"'),
        status=304,
        code=None,
    ),
    read(
        "read-encoded-static-segment-is-a-flag-name",
        "/flags/%68istory",
        status=404,
        code="FLAG_NOT_FOUND",
        path_parameters={"name": "%68istory"},
    ),
    Case(
        "write-encoded-history-path",
        "GET",
        "/flags/%68istory",
        None,
        headers=(),
        status=404,
        code="NOT_FOUND",
        to=WRITE,
    ),
    Case(
        "write-encoded-slash-path", "PATCH", "/flags/%2F", VALID_BODY, status=405, code="METHOD_NOT_ALLOWED", to=WRITE
    ),
    Case(
        "read-unknown-method",
        "DELETE",
        "/flags/signup_enabled",
        None,
        headers=(),
        status=405,
        code="METHOD_NOT_ALLOWED",
        to=READ,
    ),
    # -- change requests (none of these flags is protected here: a request of them is refused as unprotected) -----
    request("request-of-unprotected-flags", VALID_CHANGE, rule="unprotected"),
    request("request-flags-and-revert", {**VALID_CHANGE, "revert_to": 0}, rule="change"),
    request("request-neither-flags-nor-revert", {"reason": REASON}, rule="change"),
    request("request-unknown-field", {**VALID_CHANGE, "approvals": 0}, rule="fields"),
    request("request-break-glass-not-bool", {**VALID_CHANGE, "break_glass": "yes"}, rule="break_glass"),
    request("request-revert-negative", {"revert_to": -1, "reason": REASON}, rule="version"),
    request("request-revert-bool", {"revert_to": True, "reason": REASON}, rule="version"),
    request("request-no-reason", {"flags": {"signup_enabled": False}}, rule="reason"),
    request("request-unknown-flag", {"flags": {"nope": 1}, "reason": REASON}, code="UNKNOWN_FLAG"),
    request("request-body-array", "[]", rule="json"),
    request("request-if-version-string", {**VALID_CHANGE, "if_version": "3"}, rule="if_version"),
    request("request-at-not-a-time", {**VALID_CHANGE, "at": "tomorrow"}, rule="at"),
    request("request-at-number", {**VALID_CHANGE, "at": 5}, rule="at"),
    request("request-timezone-without-at", {**VALID_CHANGE, "timezone": "Europe/Paris"}, rule="at"),
    request(
        "request-at-unknown-zone",
        {**VALID_CHANGE, "at": "2030-01-01T09:00:00", "timezone": "Mars/Base"},
        rule="timezone",
    ),
    request(
        "request-at-with-break-glass", {**VALID_CHANGE, "at": "2030-01-01T09:00:00Z", "break_glass": True}, rule="at"
    ),
    decide("approve-unknown-id", "0" * 32, "approve", {}, status=404, code="CHANGE_REQUEST_NOT_FOUND"),
    decide("approve-not-an-id", "..", "approve", {}, status=404, code="CHANGE_REQUEST_NOT_FOUND"),
    decide("approve-long-id", "f" * 5000, "approve", {}, status=404, code="CHANGE_REQUEST_NOT_FOUND"),
    decide("approve-encoded-slash-id", "%2F", "approve", {}, status=404, code="CHANGE_REQUEST_NOT_FOUND"),
    decide("approve-unknown-field", "0" * 32, "approve", {"approvals": 2}, rule="fields"),
    decide("approve-body-not-object", "0" * 32, "approve", "true", rule="json"),
    decide("reject-without-reason", "0" * 32, "reject", {}, rule="reason"),
    decide("withdraw-reason-control-char", "0" * 32, "withdraw", {"reason": "a\u0007"}, rule="reason_characters"),
    Case(
        "list-requests-bad-state",
        "GET",
        "/flags/change-requests",
        None,
        headers=(),
        query=(("state", "x"),),
        rule="state",
    ),
    Case(
        "list-requests-two-states",
        "GET",
        "/flags/change-requests",
        None,
        headers=(),
        query=(("state", "pending"), ("state", "applied")),
        rule="state",
    ),
    Case(
        "list-requests-bad-limit",
        "GET",
        "/flags/change-requests",
        None,
        headers=(),
        query=(("limit", "0"),),
        rule="limit",
    ),
    Case(
        "list-requests-bad-cursor",
        "GET",
        "/flags/change-requests",
        None,
        headers=(),
        query=(("cursor", "not-a-cursor"),),
        rule="cursor",
    ),
    Case(
        "edit-a-request",
        "PATCH",
        "/flags/change-requests/" + "0" * 32,
        VALID_BODY,
        status=405,
        code="METHOD_NOT_ALLOWED",
    ),
)


def proxy_event(case: Case) -> dict[str, Any]:
    """The REST API proxy event API Gateway sends for ``case``: path and path parameters as the client encoded
    them, every header and query value in the multi-value maps (the single-value maps keep the last)."""
    return rest_event(
        case.method,
        case.path,
        headers=case.headers,
        query=case.query,
        body=case.body,
        base64_body=case.base64_body,
        path_parameters=case.path_parameters,
        caller_arn=CALLER,
    )


def full_trail(store: FlagStore) -> list[dict[str, Any]]:
    """Every audit record, newest first, through the store's own history pages."""
    records, cursor = store.history(limit=100)
    while cursor is not None:
        page, cursor = store.history(limit=100, cursor=cursor)
        records += page
    return records


def stored_state(client: Any, table: str, store: FlagStore) -> tuple[Any, list[dict[str, Any]]]:
    return read_singleton(client, table), full_trail(store)


def check_case(
    case: Case,
    invoke: Callable[[str, dict[str, Any]], dict[str, Any]],
    state: Callable[[], tuple[Any, list[dict[str, Any]]]],
) -> None:
    """Given the stored state, when ``case`` is sent to its function, then the answer and the state are as the
    product's rules say (see the module docstring)."""
    item_before, trail_before = state()
    response = invoke(case.function, proxy_event(case))
    status = response["statusCode"]
    assert status < 500, f"{case.id}: a client's request got {status}: {response.get('body')!r:.300}"
    body_text = response.get("body") or ""
    body_text.encode("utf-8")  # an answer that cannot be encoded is a Lambda error once deployed
    error = json.loads(body_text).get("error") if body_text else None
    assert status == case.status, f"{case.id}: expected {case.status}, got {status}: {body_text[:300]}"
    if case.code is not None:
        assert isinstance(error, dict), f"{case.id}: no error object in {body_text[:300]}"
        assert (error.get("code"), bool(error.get("message"))) == (case.code, True), error
        if case.rule is not None:
            assert error.get("rule") == case.rule, f"{case.id}: {error}"
        if case.flag is not None:
            assert error.get("flag") == case.flag, f"{case.id}: {error}"
    item_after, trail_after = state()
    if not case.applied:
        assert (item_after, trail_after) == (item_before, trail_before), f"{case.id}: a refusal changed the state"
        return
    new_records = trail_after[: len(trail_after) - len(trail_before)]
    assert trail_after[len(new_records) :] == trail_before, f"{case.id}: older audit records changed"
    assert len(new_records) == 1, f"{case.id}: {len(new_records)} audit records for one applied write"
    version_before = int(item_before[VERSION_ATTR]["N"])
    assert new_records[0]["version"] == version_before + 1 == json.loads(body_text)["version"]
    assert new_records[0]["reason"] == case.reason
    assert item_after[VERSION_ATTR] == {"N": str(version_before + 1)}
