"""Write function: PATCH /flags, GET /flags/history, POST /flags/revert (IAM-authorised admin routes).

Thin routes over ``singleton_flags.store``; errors map to HTTP in one place (``handle_flags_error``), and a
request pydantic rejects is re-checked by the domain validation so the client hears which flag and rule.
"""

import gc

gc.disable()  # init builds 100k+ long-lived objects, little garbage: no collection until it ends (decisions.md)

import binascii
import os
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from singleton_flags.api_models import build_models
from singleton_flags.audit import decode_cursor
from singleton_flags.aws import WRITE_CLIENT_CONFIG, dynamodb_client, worst_call_seconds
from singleton_flags.codec import iso_time
from singleton_flags.declarations import load_declarations
from singleton_flags.errors import FlagsError, InvalidRequest, StoreFault, UnsupportedMediaType, WriteConflict
from singleton_flags.http import (
    WILDCARD,
    Versions,
    acceptable_versions,
    error_response,
    format_etag,
    header_values,
    json_response,
    no_route_response,
    parse_entity_tags,
)
from singleton_flags.idempotency import Idempotency, parse_key
from singleton_flags.observability import (
    CHANGES_APPLIED,
    DIMENSION_CODE,
    REFUSALS,
    WRITE_CONFLICTS,
    WRITE_RETRIES,
    emit_count,
    logger,
    metrics,
    tracer,
)
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import STATIC, FlagReader
from singleton_flags.requests import (
    JSON_MEDIA_TYPE,
    is_json_media_type,
    media_type,
    parse_json_body,
    query_integer,
    single_query_value,
    validate_reason,
    validate_version,
)
from singleton_flags.settings import Settings
from singleton_flags.store import DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT, ChangeResult, FlagStore
from singleton_flags.windows import windows_from_env

SETTINGS = Settings.from_env(os.environ)
DECLARATIONS = load_declarations()
CLIENT = dynamodb_client(WRITE_CLIENT_CONFIG)
STORE = FlagStore(
    CLIENT,
    SETTINGS.table_name,
    DECLARATIONS,
    sort_key=SETTINGS.item_sort_key,
    audit_retention_days=SETTINGS.audit_retention_days,
    # every write keeps room in the item for the longest window's bookkeeping, so a window start always fits
    reserve_owner=max(windows_from_env(os.environ), key=len, default=""),
    call_seconds=worst_call_seconds(WRITE_CLIENT_CONFIG),
    on_retry=lambda attempt: metrics.add_metric(name=WRITE_RETRIES, unit=MetricUnit.Count, value=1),
)
# Time kept back from the Lambda context's remaining time, to answer before the function times out.
DEADLINE_MARGIN_SECONDS = 1.0
# The writing environment's own cache, primed with every write it makes (read-your-writes).
READER = FlagReader(
    SingletonProvider(client=CLIENT, table_name=SETTINGS.table_name, declarations=DECLARATIONS),
    DECLARATIONS,
    sort_key=SETTINGS.item_sort_key,
    max_age=SETTINGS.max_age_seconds,
    max_stale=SETTINGS.max_stale_seconds,
)
MODELS = build_models(DECLARATIONS)
PatchRequest = MODELS["PatchRequest"]
RevertRequest = MODELS["RevertRequest"]
FlagsState = MODELS["FlagsState"]
History = MODELS["History"]


def _json_body(text: str) -> dict[str, Any]:
    """The body deserializer Powertools' validation calls: the write API's JSON rules (singleton_flags.requests)."""
    if not _body_is_json():  # application/jsonx and the like, which Powertools takes for JSON
        raise _not_json()
    return parse_json_body(text)


app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=_json_body)

# A list: a client may send If-Match more than once (RFC 9110 lists); the raw event's fields decide (_expected_version).
IfMatch = Annotated[
    list[str] | None,
    Header(
        alias="If-Match",
        description='Write only if the flags are at one of these versions, e.g. "7" (strong comparison; * for any); '
        "else 412.",
    ),
]


def _actor() -> str:
    if SETTINGS.local_actor:
        return SETTINGS.local_actor
    identity = app.current_event.request_context.identity
    return identity.user_arn or identity.caller or "unknown-iam-identity"


def _expected_version() -> int | Versions | None:
    """What the store must find, from every If-Match field of the request (RFC 9110): None without one or
    for ``*``; else the versions the listed tags accept (a single one as an int)."""
    tags = parse_entity_tags(header_values(app.current_event.raw_event, "If-Match"))
    if tags is None or tags == WILDCARD:
        return None
    versions = acceptable_versions(tags)
    return next(iter(versions)) if len(versions) == 1 and len(tags) == 1 else versions


def _history_query() -> tuple[int, str | None]:
    """limit and cursor from the raw query: each at most once, limit ASCII digits only (sign, superscripts and
    over-long numbers refused before any int())."""
    event = app.current_event.raw_event
    limit = single_query_value(event, "limit", rule="limit")
    cursor = single_query_value(event, "cursor", rule="cursor")
    if limit is None:
        return DEFAULT_HISTORY_LIMIT, cursor
    return query_integer(limit, "limit", 1, MAX_HISTORY_LIMIT, rule="limit"), cursor


def _time_budget() -> float:
    """Seconds the store may spend: the invocation's remaining time less a margin to answer before the timeout."""
    return app.lambda_context.get_remaining_time_in_millis() / 1000 - DEADLINE_MARGIN_SECONDS


def _idempotency(actor: str, request: dict[str, Any], expected: int | Versions | None) -> Idempotency | None:
    """The request's ``Idempotency-Key`` (1-255 visible ASCII characters), scoped to the caller; the request it
    names is its method, path, validated body and the versions its If-Match accepts."""
    key = parse_key(app.current_event.headers.get("idempotency-key"))
    if key is None:
        return None
    event = app.current_event
    if_match = sorted(expected) if isinstance(expected, frozenset) else expected
    return Idempotency.of(
        actor, key, {"method": event.http_method, "path": event.path, "body": request, "if_match": if_match}
    )


def _state_response(result: ChangeResult) -> Response:
    snapshot = result.snapshot
    if result.applied or result.restored:
        READER.prime(snapshot)
    if result.applied and not result.replayed:
        metrics.add_metric(name=CHANGES_APPLIED, unit=MetricUnit.Count, value=1)
    body = {
        "flags": dict(result.values),
        "version": snapshot.version,
        "reason": STATIC,
        "fetched_at": iso_time(snapshot.fetched_at),
        "applied": result.applied,
        "changed": dict(result.changed),
    }
    if result.restored:
        body["restored"] = True
    headers = {"ETag": format_etag(snapshot.version or 0), "Cache-Control": "no-store"}
    if result.replayed:
        headers["Idempotent-Replayed"] = "true"
    return json_response(HTTPStatus.OK, body, headers)


@app.patch(
    "/flags", responses={200: {"description": "The new state", "content": {"application/json": {"model": FlagsState}}}}
)
def patch_flags(body: Annotated[PatchRequest, Body()], if_match: IfMatch = None):
    changes = DECLARATIONS.validate_changes(body.flags.model_dump(exclude_unset=True))
    reason = validate_reason(body.reason)
    expected, actor = _expected_version(), _actor()
    idempotency = _idempotency(actor, {"flags": changes, "reason": reason}, expected)
    result = STORE.change(
        changes,
        actor=actor,
        reason=reason,
        expected_version=expected,
        idempotency=idempotency,
        time_budget=_time_budget(),
    )
    return _state_response(result)


@app.post(
    "/flags/revert",
    responses={200: {"description": "The new state", "content": {"application/json": {"model": FlagsState}}}},
)
def revert_flags(body: Annotated[RevertRequest, Body()], if_match: IfMatch = None):
    reason = validate_reason(body.reason)
    expected, actor = _expected_version(), _actor()
    idempotency = _idempotency(actor, {"version": body.version, "reason": reason}, expected)
    result = STORE.revert(
        body.version,
        actor=actor,
        reason=reason,
        expected_version=expected,
        idempotency=idempotency,
        time_budget=_time_budget(),
    )
    return _state_response(result)


@app.get(
    "/flags/history",
    responses={200: {"description": "Audit records", "content": {"application/json": {"model": History}}}},
)
def get_history(
    limit: Annotated[
        int, Query(ge=1, le=MAX_HISTORY_LIMIT, description=f"Records per page (1-{MAX_HISTORY_LIMIT}).")
    ] = DEFAULT_HISTORY_LIMIT,
    cursor: Annotated[str | None, Query(max_length=200, description="next_cursor of the previous page.")] = None,
):
    limit, cursor = _history_query()  # the raw query decides: pydantic's int() takes "+5" and a repeat's first
    if cursor is not None:
        decode_cursor(cursor)
    records, next_cursor = STORE.history(limit=limit, cursor=cursor)
    return json_response(HTTPStatus.OK, {"records": records, "next_cursor": next_cursor})


def _domain_check() -> None:
    """Re-run the domain validation on the raw request; raises the precise FlagsError if there is one."""
    event = app.current_event
    if event.http_method == "GET":
        _, cursor = _history_query()
        if cursor is not None:
            decode_cursor(cursor)
        return
    _expected_version()
    payload = parse_json_body(_decoded_body())
    expected = {"flags", "reason"} if event.http_method == "PATCH" else {"version", "reason"}
    unknown = set(payload) - expected
    if unknown:
        raise InvalidRequest(f"unknown field(s) {sorted(unknown)}; expected {sorted(expected)}", rule="fields")
    if event.http_method == "PATCH":
        DECLARATIONS.validate_changes(payload.get("flags"))
    else:
        validate_version(payload.get("version"))
    validate_reason(payload.get("reason"))


def _decoded_body() -> str:
    """The body as text; a base64 body (``isBase64Encoded``) that is not base64 of UTF-8 is refused."""
    try:
        return app.current_event.decoded_body or ""
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidRequest("the base64 body is not base64 of UTF-8 text", rule="encoding") from exc


def _content_type() -> str:
    return media_type(app.current_event.headers.get("content-type"))


def _body_is_json() -> bool:
    """No Content-Type or application/json (any case, parameters aside): the only bodies the write API reads."""
    return is_json_media_type(app.current_event.headers.get("content-type"))


def _not_json() -> UnsupportedMediaType:
    return UnsupportedMediaType(
        f"the body must be JSON (Content-Type: application/json), not {_content_type()!r}", rule="content_type"
    )


@app.exception_handler(RequestUnsupportedContentType)
def handle_unsupported_content_type(_: RequestUnsupportedContentType) -> Response:
    return handle_flags_error(_not_json())


@app.exception_handler(ValueError)
def handle_unparseable_body(error: ValueError) -> Response:
    """Powertools raises ValueError for a form body it cannot parse (multipart without a boundary), and for a
    base64 body that does not decode."""
    if isinstance(error, (binascii.Error, UnicodeDecodeError)):
        return handle_flags_error(InvalidRequest("the base64 body is not base64 of UTF-8 text", rule="encoding"))
    if _body_is_json():
        raise error  # not a body-format problem: a bug, let it surface
    return handle_flags_error(_not_json())


@app.exception_handler(RequestValidationError)
def handle_invalid_request(error: RequestValidationError) -> Response:
    if not _body_is_json():  # a form body Powertools parsed into fields: still not what this API reads
        return handle_flags_error(_not_json())
    try:
        _domain_check()
    except FlagsError as precise:
        return handle_flags_error(precise)
    first = error.errors()[0] if error.errors() else {}
    where = ".".join(str(part) for part in first.get("loc", ()))
    return handle_flags_error(InvalidRequest(f"{where}: {first.get('msg', 'invalid request')}", rule="schema"))


@app.exception_handler(FlagsError)
def handle_flags_error(error: FlagsError) -> Response:
    emit_count(REFUSALS, 1, {DIMENSION_CODE: error.code})
    if isinstance(error, WriteConflict):
        metrics.add_metric(name=WRITE_CONFLICTS, unit=MetricUnit.Count, value=1)
    log = logger.error if isinstance(error, StoreFault) else logger.info  # a 500 is our bug: it pages
    log("request refused", code=error.code, status=int(error.status), detail=error.message)
    return error_response(error)


@app.not_found
def handle_no_route(_: NotFoundError) -> Response:
    return no_route_response(app.current_event.http_method, app.current_event.path)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@metrics.log_metrics
@tracer().capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(_with_lowercase_json_media_type(event), context)


def _with_lowercase_json_media_type(event: dict[str, Any]) -> dict[str, Any]:
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


gc.freeze()  # what init built moves to the permanent generation: warm collections never rescan it
gc.enable()
