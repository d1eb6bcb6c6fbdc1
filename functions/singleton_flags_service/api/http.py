"""HTTP shapes shared by the API functions: ETags, JSON bodies, the ONE error -> response mapping, and what the
read routes answer (typed dicts: the read function builds them, the API document is generated from them).

Errors are ``{"error": {"code": CODE, "message": TEXT, ...details}}``. Only the Powertools response type
is imported here, so the read function stays lean.
"""

import json
import re
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, Literal, NamedTuple

from aws_lambda_powertools.event_handler import Response

# pydantic reads typing's TypedDict only from Python 3.12 on (the Lambda runtime's; not the oldest supported)
from typing_extensions import NotRequired, TypedDict  # noqa: UP035

from singleton_flags_service.api.routes import ROUTES, resource_routes
from singleton_flags_service.errors import (
    AlarmsUnavailable,
    FlagsError,
    InvalidRequest,
    OutcomeUnknown,
    PreconditionFailed,
    SchedulerUnavailable,
    StoreUnavailable,
    WriteConflict,
)
from singleton_flags_service.vocabulary import READ_REASONS

JSON = "application/json"
# RFC 9110 section 8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text. obs-text
# (bytes over 0x7F) is refused: a header reaches the function as text decoded by the gateway, so such a tag
# cannot be compared byte for byte, and this API's tags are ASCII digits.
_ENTITY_TAG = re.compile(r'(W/)?"([\x21\x23-\x7e]*)"')
_OWS = " \t"
_VERSION_TAG = re.compile(r"0|[1-9][0-9]{0,17}")  # a version as format_etag writes it: ASCII digits, no leading 0
WILDCARD = "*"

FlagValue = bool | int | float | str


class Maintenance(TypedDict):
    """Who holds maintenance_mode now (its effective value, as in flags)."""

    on: bool
    """The same as flags.maintenance_mode."""
    held_by: Literal["window", "manual", None]
    """window: a window holds it until its deadline; manual: on otherwise; null: off."""
    window: str | None
    """The holding window's name."""
    deadline: str | None
    """When the holding window's hold ends (RFC 3339, UTC)."""


class ReadMetadata(TypedDict):
    """What a read says of the values it serves."""

    version: int | None
    """The stored version; null for fallbacks."""
    reason: Literal[READ_REASONS]  # type: ignore[valid-type]  # the reasons' one definition, as a Literal
    """Where the values came from (OpenFeature)."""
    fetched_at: str | None
    """When the values were read from the table."""
    maintenance_ended_by: NotRequired[Literal["deadline"]]
    """Present when a maintenance window's stored deadline, not its end event, ended it."""


class FlagsRead(ReadMetadata):
    """GET /flags: every flag, with the version and where the values came from."""

    flags: dict[str, FlagValue]
    """Every declared flag's value, by name."""
    maintenance: Maintenance
    fallen_back: NotRequired[list[str]]
    """Present when the item was read but some flags are served as their declared fallback (missing from it, or
    unusable): their names. Each one's own reason is DEFAULT, whatever ``reason`` says of the others."""


class FlagRead(ReadMetadata):
    """GET /flags/{name}: one flag (``reason`` is DEFAULT for a flag served as its fallback, whatever the others)."""

    name: str
    value: FlagValue


class EntityTag(NamedTuple):
    opaque: str
    weak: bool = False


def format_etag(version: int) -> str:
    return f'"{version}"'


def parse_entity_tags(values: Sequence[str] | None, header: str = "If-Match") -> frozenset[EntityTag] | str | None:
    """The entity-tags of every ``header`` field value (RFC 9110: ``"*" / #entity-tag``), or ``WILDCARD``; None
    when the header is absent. Empty list elements are ignored (``"7",`` is ``"7"``); an empty or blank field,
    a list with no tag, ``*`` beside tags, or anything that is not an entity-tag is InvalidRequest."""
    if values is None:
        return None
    rule = header.lower().replace("-", "_")
    tags: set[EntityTag] = set()
    wildcard = False
    for value in values:
        if not value.strip(_OWS):
            raise InvalidRequest(f'{header} is empty; send a quoted version such as "7", or leave it out', rule=rule)
        for element in _list_elements(value, header, rule):
            if element == WILDCARD:
                wildcard = True
                continue
            match = _ENTITY_TAG.fullmatch(element)
            if match is None:
                raise InvalidRequest(
                    f'{header} holds {element[:40]!r}, not an entity-tag: quote it, e.g. "7"', rule=rule
                )
            tags.add(EntityTag(match.group(2), weak=match.group(1) is not None))
    if wildcard and (tags or len(values) > 1):
        raise InvalidRequest(f"{header}: * stands alone, not beside entity-tags", rule=rule)
    if wildcard:
        return WILDCARD
    if not tags:
        raise InvalidRequest(f"{header} names no entity-tag", rule=rule)
    return frozenset(tags)


def _list_elements(value: str, header: str, rule: str) -> list[str]:
    """The non-empty elements of a comma-separated list whose elements may be quoted (commas inside quotes stay)."""
    elements: list[str] = []
    current: list[str] = []
    quoted = False
    for char in value:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            elements.append("".join(current).strip(_OWS))
            current = []
        else:
            current.append(char)
    if quoted:
        raise InvalidRequest(f"{header} has an unterminated quoted entity-tag", rule=rule)
    elements.append("".join(current).strip(_OWS))
    return [element for element in elements if element]


class Versions(frozenset[int]):
    """The versions an If-Match list accepts (the store's ``expected_version``); empty: none can match."""

    def __str__(self) -> str:
        if not self:
            return "a version If-Match names"
        return " or ".join(str(version) for version in sorted(self))


def acceptable_versions(tags: frozenset[EntityTag]) -> Versions:
    """If-Match compares strongly (RFC 9110 section 13.1.1): a weak tag, or a tag that is not a version as this
    API writes it (``"0007"``, ``"*"``, ``"seven"``), never matches."""
    return Versions(version for tag in tags if not tag.weak and (version := tag_version(tag)) is not None)


def holds_version(if_none_match: Sequence[str] | None, version: int) -> bool:
    """Whether If-None-Match names ``version`` (weak comparison, RFC 9110 section 13.1.2). A malformed header
    is no validator: the full answer is always a correct answer to a GET."""
    try:
        held = parse_entity_tags(if_none_match, header="If-None-Match")
    except InvalidRequest:
        return False
    if held is None:
        return False
    if isinstance(held, str):  # WILDCARD, the only text parse_entity_tags returns
        return True
    return any(tag.opaque == str(version) for tag in held)


def header_values(event: Mapping[str, Any], name: str) -> list[str] | None:
    """Every value of header ``name`` (case-insensitive) in a REST proxy event: ``multiValueHeaders`` holds each
    field the client sent, ``headers`` only the last. None when the header is absent."""
    wanted = name.lower()
    multi: Mapping[str, Sequence[str]] = event.get("multiValueHeaders") or {}
    found = [value for key, values in multi.items() if key.lower() == wanted for value in (values or [])]
    if found:
        return found
    single: Mapping[str, str] = event.get("headers") or {}
    found = [value for key, value in single.items() if key.lower() == wanted and value is not None]
    return found or None


def tag_version(tag: EntityTag) -> int | None:
    """The version a tag of this API stands for (``"7"`` -> 7), or None: another tag never matches a version."""
    if _VERSION_TAG.fullmatch(tag.opaque) is None:
        return None
    return int(tag.opaque)


def json_text(body: Any) -> str:
    """JSON text that always encodes as UTF-8: text with a lone surrogate (which only a hostile request can
    bring in) is written with \\u escapes instead, never an unencodable answer."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":"))
    return text


def json_response(status: HTTPStatus, body: Any, headers: dict[str, str] | None = None) -> Response[str]:
    return Response(status_code=int(status), content_type=JSON, body=json_text(body), headers=headers or {})


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def error_headers(error: FlagsError) -> dict[str, str]:
    """What an error's answer tells a client beyond its body: the current version of a 412 (none while the item
    is missing), when to retry a 409 or 503."""
    if isinstance(error, PreconditionFailed):
        return {"ETag": format_etag(error.current_version)} if error.current_version is not None else {}
    if isinstance(error, (WriteConflict, StoreUnavailable, OutcomeUnknown, SchedulerUnavailable, AlarmsUnavailable)):
        return {"Retry-After": str(error.retry_after)}
    return {}


def error_response(error: FlagsError) -> Response[str]:
    return json_response(error.status, error_body(error.code, error.message, **error.details), error_headers(error))


def allowed_methods(path: str) -> list[str]:
    """Methods the API serves on ``path`` (any function): those of the resource API Gateway picks for it."""
    return sorted({match.route.method for match in resource_routes(ROUTES, path)})


def no_route_response(method: str, path: str) -> Response[str]:
    """405 (with Allow) when the path exists under another method, else 404."""
    allowed = allowed_methods(path)
    if allowed and method not in allowed:
        return json_response(
            HTTPStatus.METHOD_NOT_ALLOWED,
            error_body("METHOD_NOT_ALLOWED", f"{method} is not supported on {path}; use {', '.join(allowed)}"),
            {"Allow": ", ".join(allowed)},
        )
    return json_response(HTTPStatus.NOT_FOUND, error_body("NOT_FOUND", f"no route for {method} {path}"))
