"""What a client sends to the write API, checked before anything else looks at it.

- ``parse_json_body``: the body as a JSON object, within bounds (64 KiB, depth 32, numbers DynamoDB can hold),
  strict JSON (no NaN/Infinity, no duplicate keys) and valid Unicode (no U+FFFD, no lone surrogates);
- ``validate_reason``: the audited reason, trimmed, with a visible character and no control characters;
- ``query_integer``: a query parameter given at most once, ASCII digits only, counted before any ``int()``;
- ``is_json_media_type``: ``application/json`` compared as RFC 9110 says (case-insensitive, parameters aside).

Every refusal is a ``FlagsError`` naming its rule, so a hostile request is a 4xx, never a Lambda error.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping
from typing import Any

from singleton_flags.declarations import Declarations, UnstorableNumber, parse_declarations
from singleton_flags.errors import DeclarationError
from singleton_flags.keys import AUDIT_VERSION_DIGITS
from singleton_flags.migration import Mapping as MigrationMapping, MappingError, parse_mapping
from singleton_flags_service.approvals.rules import refuse_direct_write
from singleton_flags_service.errors import InvalidRequest, PayloadTooLarge
from singleton_flags_service.guards.items import validate_guard
from singleton_flags_service.schedules.timing import parse_schedule_time
from singleton_flags_service.vocabulary import KIND_CHANGE
from singleton_flags_service.writes.audit import validate_version

MAX_VERSION = 10**AUDIT_VERSION_DIGITS - 1  # the largest version an audit record's key can name
MAX_REASON_LENGTH = 500  # characters of the trimmed reason (what the audit trail keeps)

MAX_BODY_BYTES = 64 * 1024
MAX_JSON_DEPTH = 32
MAX_INT_DIGITS = 126  # DynamoDB's largest number is below 1E+126: a longer integer can never be stored
JSON_MEDIA_TYPE = "application/json"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_BAD_TEXT = re.compile("[\ud800-\udfff\ufffd]")
_DIGITS = re.compile(r"[0-9]+")
_NONZERO_DIGIT = re.compile(r"[1-9]")
# Bidirectional embeddings, overrides and isolates reorder what the next operator sees: refused like controls.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ALLOWED_CONTROLS = frozenset("\n\t")


def _reject_constant(name: str) -> Any:
    raise InvalidRequest(f"the body is not valid JSON: {name} is not a JSON number", rule="json")


def _parse_int(text: str) -> int | UnstorableNumber:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return UnstorableNumber(text)  # counted before int(): no conversion of a huge literal
    return int(text)


def _parse_float(text: str) -> float | UnstorableNumber:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return UnstorableNumber(text)
    if value == 0.0 and _NONZERO_DIGIT.search(text.partition("e")[0].partition("E")[0]):
        return UnstorableNumber(text)  # a non-zero number that underflowed: not the value the client sent
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidRequest(f"the body names {key!r} twice; give each key once", rule="duplicate_key", key=key)
        result[key] = value
    return result


def _depth(text: str) -> int:
    deepest = depth = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _check_strings(value: Any) -> None:
    """No decoded string (key or value) holds U+FFFD or a lone surrogate (a \\ud800 escape decodes to one)."""
    if isinstance(value, str):
        if _BAD_TEXT.search(value):
            raise InvalidRequest(
                "the body holds text that is not valid UTF-8 (U+FFFD or a lone surrogate)", rule="encoding"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key)
            _check_strings(item)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)


def parse_json_body(text: str | bytes | None) -> dict[str, Any]:
    """The body as a JSON object, or the FlagsError that says what is wrong with it."""
    if isinstance(text, (bytes, bytearray)):
        raw = bytes(text)
        text = raw.decode("utf-8", errors="replace")
    else:
        text = text or ""
        raw = text.encode("utf-8", errors="surrogatepass")
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge(
            f"the body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES}",
            size=len(raw),
            limit=MAX_BODY_BYTES,
            rule="body_size",
        )
    if _BAD_TEXT.search(text):
        raise InvalidRequest("the body is not valid UTF-8 (U+FFFD or a lone surrogate in it)", rule="encoding")
    if _depth(text) > MAX_JSON_DEPTH:
        raise InvalidRequest(f"the body nests deeper than {MAX_JSON_DEPTH} levels", rule="depth", limit=MAX_JSON_DEPTH)
    try:
        payload = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
            parse_constant=_reject_constant,
            object_pairs_hook=_object,
        )
    except ValueError as exc:
        raise InvalidRequest(f"the body is not valid JSON: {exc}", rule="json") from exc
    if not isinstance(payload, dict):
        raise InvalidRequest("the body must be a JSON object", rule="json")
    _check_strings(payload)
    return payload


def validate_reason(reason: Any) -> str:
    """The reason as the audit trail keeps it (trimmed), or InvalidRequest naming the rule it breaks."""
    if not isinstance(reason, str):
        raise InvalidRequest("'reason' is required: say why, it goes into the audit trail", rule="reason")
    trimmed = reason.strip()
    if not any(unicodedata.category(char)[0] in "LNPS" for char in trimmed):
        raise InvalidRequest(
            "'reason' is required and needs a visible character: say why, it goes into the audit trail", rule="reason"
        )
    for char in trimmed:
        if (unicodedata.category(char) == "Cc" and char not in _ALLOWED_CONTROLS) or char in _BIDI_CONTROLS:
            raise InvalidRequest(
                f"'reason' holds the control character U+{ord(char):04X}; only newline and tab are allowed",
                rule="reason_characters",
            )
    if len(trimmed) > MAX_REASON_LENGTH:
        raise InvalidRequest(f"'reason' must be at most {MAX_REASON_LENGTH} characters", rule="reason_length")
    return trimmed


def known_fields(payload: Any, fields: Collection[str]) -> Mapping[str, Any]:
    """``payload`` as a request body: a JSON object naming only ``fields`` (a request model's, its one
    statement: ``singleton_flags_service.api.models``), or InvalidRequest naming the unknown ones."""
    if not isinstance(payload, dict):
        raise InvalidRequest("the body must be a JSON object", rule="json")
    unknown = set(payload) - set(fields)
    if unknown:
        raise InvalidRequest(f"unknown field(s) {sorted(unknown)}; expected {sorted(fields)}", rule="fields")
    return payload


def validate_patch(body: Mapping[str, Any], declarations: Declarations, guard_prefix: str = "") -> dict[str, Any]:
    """A PATCH /flags body of known fields, every rule checked once: each flag against its declaration, the
    reason, the optional guard; a protected flag is refused (it changes through a change request). Returns the
    body with the values normalized and the reason trimmed."""
    checked = {"flags": declarations.validate_changes(body.get("flags")), "reason": validate_reason(body.get("reason"))}
    refuse_direct_write(declarations, KIND_CHANGE, checked["flags"])
    return _with_guard(checked, body, guard_prefix)


def validate_revert(body: Mapping[str, Any], guard_prefix: str = "") -> dict[str, Any]:
    """A POST /flags/revert body of known fields, every rule checked once: the version, the reason, the optional
    guard."""
    checked = {"version": validate_version(body.get("version")), "reason": validate_reason(body.get("reason"))}
    return _with_guard(checked, body, guard_prefix)


def _with_guard(checked: dict[str, Any], body: Mapping[str, Any], guard_prefix: str) -> dict[str, Any]:
    if "guard" in body:
        checked["guard"] = validate_guard(body["guard"], guard_prefix).as_json()
    return checked


def validate_restore(body: Mapping[str, Any]) -> dict[str, Any]:
    """A POST /flags/restore body of known fields: the reason."""
    return {"reason": validate_reason(body.get("reason"))}


def migration_inputs(body: Mapping[str, Any]) -> tuple[Declarations, MigrationMapping]:
    """A POST /flags/migration body's new declarations (as a declarations file is checked) and its mapping (checked
    alone; against both declarations by the store), or InvalidRequest naming the field and what is wrong."""
    try:
        declarations = parse_declarations(body.get("declarations"))
    except DeclarationError as exc:
        raise InvalidRequest(f"declarations: {exc}", rule="declarations", field="declarations") from exc
    try:
        mapping = parse_mapping(body.get("mapping"))
    except MappingError as exc:
        raise InvalidRequest(f"mapping: {exc}", rule="mapping", field="mapping") from exc
    return declarations, mapping


def refuse_dry_run(payload: Any) -> None:
    """A migration's dry run is flagctl's (it reads, and writes nothing): the API refuses the field by name, before
    the unknown-field rule would."""
    if isinstance(payload, dict) and "dry_run" in payload:
        raise InvalidRequest(
            "'dry_run' is not a field of POST /flags/migration: `flagctl migrate --dry-run` plans a migration from "
            "GET /flags/declarations and GET /flags, writing nothing",
            rule="dry_run",
            field="dry_run",
        )


def validate_migration(body: Mapping[str, Any]) -> dict[str, Any]:
    """A POST /flags/migration body of known fields: the new declarations and the mapping (``migration_inputs``),
    the reason. Returns the body with the reason trimmed."""
    migration_inputs(body)
    return {
        "declarations": body.get("declarations"),
        "mapping": body.get("mapping"),
        "reason": validate_reason(body.get("reason")),
    }


def validate_if_version(value: Any) -> int | None:
    """A scheduled change's optional ``if_version``: the version the flags must still be at when it is due."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_VERSION:
        raise InvalidRequest(
            f"'if_version' must be an integer 0-{MAX_VERSION}: the version the flags must still be at when the "
            "change is due",
            rule="if_version",
            field="if_version",
        )
    return value


def validate_schedule(body: Mapping[str, Any], declarations: Declarations) -> dict[str, Any]:
    """A POST /flags/schedules body of known fields: ``flags`` and ``reason`` as PATCH checks them, ``at`` and
    ``timezone`` as one instant (singleton_flags_service.schedules.timing; how far ahead is checked against the
    clock when it is created), ``if_version``. Returns the body normalized."""
    patch = validate_patch({"flags": body.get("flags"), "reason": body.get("reason")}, declarations)
    parse_schedule_time(body.get("at"), body.get("timezone"))
    return {
        **patch,
        "at": body["at"],
        "timezone": body.get("timezone"),
        "if_version": validate_if_version(body.get("if_version")),
    }


def validate_change_request(body: Mapping[str, Any], declarations: Declarations) -> dict[str, Any]:
    """A POST /flags/change-requests body of known fields: exactly one of ``flags`` (checked as PATCH checks them,
    protected flags welcome) and ``revert_to`` (a version), a reason, ``if_version``, ``break_glass``, and ``at``
    (with ``timezone``) as POST /flags/schedules checks them (not with break-glass, which applies now)."""
    if ("flags" in body) == ("revert_to" in body):
        raise InvalidRequest("give exactly one of 'flags' (a change) and 'revert_to' (a version)", rule="change")
    checked: dict[str, Any] = {"reason": validate_reason(body.get("reason"))}
    if "flags" in body:
        checked["flags"] = declarations.validate_changes(body["flags"])
    else:
        checked["revert_to"] = validate_version(body["revert_to"])
    checked["if_version"] = validate_if_version(body.get("if_version"))
    break_glass = body.get("break_glass", False)
    if not isinstance(break_glass, bool):
        raise InvalidRequest("'break_glass' must be true or false", rule="break_glass")
    checked["break_glass"] = break_glass
    if body.get("at") is not None or body.get("timezone") is not None:
        parse_schedule_time(body.get("at"), body.get("timezone"))
        if break_glass:
            raise InvalidRequest(
                "break-glass applies the change now: give 'at' or 'break_glass', not both", rule="at", field="at"
            )
        checked.update({"at": body.get("at"), "timezone": body.get("timezone")})
    return checked


def validate_decision(body: Mapping[str, Any], *, reason_required: bool) -> dict[str, Any]:
    """An approve, reject or withdraw body: an optional reason (required to reject)."""
    if body.get("reason") is None and not reason_required:
        return {"reason": None}
    return {"reason": validate_reason(body.get("reason"))}


def query_values(event: Mapping[str, Any], name: str) -> list[str]:
    """Every value of query parameter ``name`` (REST proxy events carry repeats in the multi-value map)."""
    multi = event.get("multiValueQueryStringParameters") or {}
    if name in multi:
        return list(multi[name] or [])
    single = event.get("queryStringParameters") or {}
    return [single[name]] if name in single else []


def single_query_value(event: Mapping[str, Any], name: str, rule: str) -> str | None:
    values = query_values(event, name)
    if len(values) > 1:
        raise InvalidRequest(f"'{name}' is given {len(values)} times; give it once", rule=rule)
    return values[0] if values else None


def query_integer(text: str, name: str, low: int, high: int, rule: str) -> int:
    """``text`` as an integer in [low, high]: ASCII digits only (no sign, no superscripts; leading zeros are
    digits too), its significant length checked before any int()."""
    significant = text.lstrip("0") or "0"
    if not _DIGITS.fullmatch(text) or len(significant) > len(str(high)) or not low <= int(significant) <= high:
        raise InvalidRequest(f"'{name}' must be an integer between {low} and {high} (digits only)", rule=rule)
    return int(significant)


def page_query(
    event: Mapping[str, Any], decode: Callable[[str], object], default: int, maximum: int
) -> tuple[int, str | None]:
    """limit and cursor of a paginated GET from the raw query: each at most once, limit ASCII digits only (sign,
    superscripts and over-long numbers refused before any int()), the cursor one ``decode`` accepts."""
    limit = single_query_value(event, "limit", rule="limit")
    cursor = single_query_value(event, "cursor", rule="cursor")
    if cursor is not None:
        decode(cursor)  # one this API gave out, or the precise refusal
    if limit is None:
        return default, cursor
    return query_integer(limit, "limit", 1, maximum, rule="limit"), cursor


def media_type(content_type: str | None) -> str:
    """The media type of a Content-Type value, lowercased, parameters aside ('' when absent)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_json_media_type(content_type: str | None) -> bool:
    return media_type(content_type) in ("", JSON_MEDIA_TYPE)


def with_lowercase_json_media_type(event: dict[str, Any]) -> dict[str, Any]:
    """Media types compare case-insensitively (RFC 9110 section 8.3.1), Powertools' validation does not: an
    ``APPLICATION/JSON`` body is handed on as ``application/json`` (parameters kept), the event otherwise as is."""
    headers = event.get("headers") or {}
    name = next((key for key in headers if key.lower() == "content-type"), None)
    value = headers.get(name) if name is not None else None
    if not isinstance(value, str) or media_type(value) != JSON_MEDIA_TYPE or value.startswith(JSON_MEDIA_TYPE):
        return event
    _, separator, parameters = value.partition(";")
    lowered = JSON_MEDIA_TYPE + separator + parameters
    copy = {**event, "headers": {**headers, name: lowered}}
    multi = event.get("multiValueHeaders") or {}
    copy["multiValueHeaders"] = {
        key: ([lowered] if key.lower() == "content-type" else values) for key, values in multi.items()
    } or None
    return copy
