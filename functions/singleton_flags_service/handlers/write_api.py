"""Write function: PATCH /flags, GET /flags/history, POST /flags/revert, POST /flags/restore, GET /flags/guards,
the console's reads (GET /flags/declarations, GET /flags/windows) and the scheduled changes (POST and GET
/flags/schedules, DELETE /flags/schedules/{id}) (IAM, admin); the change requests' and the migration's routes are
routers of their own. A PATCH or revert may carry a ``guard`` (singleton_flags_service.guards.writes).

Thin routes over ``singleton_flags_service.writes.store``. A request is validated once, by its model (whose first
validator
runs the domain rules: ``singleton_flags_service.api.models``); every refusal, whoever raised it, reaches the error
contract through one exception handler (``handle_refusal``).
"""

import gc

gc.disable()  # init builds 100k+ long-lived objects, little garbage: no collection until it ends (decisions.md)

import binascii
import os
from collections.abc import Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from singleton_flags.aws import WRITE_CLIENT_CONFIG, dynamodb_client
from singleton_flags.codec import iso_time
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags_service.api.approval_routes import PAGE_QUERY, approval_routes
from singleton_flags_service.api.console_routes import console_routes
from singleton_flags_service.api.guard_routes import guard_routes, guards_query
from singleton_flags_service.api.http import (
    Versions,
    acceptable_versions,
    error_response,
    format_etag,
    header_values,
    json_response,
    no_route_response,
    parse_entity_tags,
)
from singleton_flags_service.api.migration_routes import migration_routes
from singleton_flags_service.api.models import build_models
from singleton_flags_service.api.requests import (
    is_json_media_type,
    media_type,
    page_query,
    parse_json_body,
    with_lowercase_json_media_type,
)
from singleton_flags_service.api.route_params import Cursor, limit_param
from singleton_flags_service.api.routes import (
    GET_GUARDS,
    GET_HISTORY,
    LIST_SCHEDULES,
    PATCH_FLAGS,
    RESTORE_FLAGS,
    REVERT_FLAGS,
    Views,
)
from singleton_flags_service.api.schedule_routes import schedule_routes, schedules_query
from singleton_flags_service.approvals.protection import history_page
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.contract import WRITE_FUNCTION, WriteConfiguration, load_service_declarations
from singleton_flags_service.errors import FlagsError, InvalidRequest, StoreFault, UnsupportedMediaType, WriteConflict
from singleton_flags_service.guards.writes import GuardedWrites, guarded_request, store_options
from singleton_flags_service.maintenance.windows import window_schedules
from singleton_flags_service.observability import ReadCounter, count_write_retry, emit_count, logger, metrics, tracer
from singleton_flags_service.schedules.changes import ScheduledChanges, ScheduleItems
from singleton_flags_service.schedules.one_time import OneTimeSchedules, scheduler_client
from singleton_flags_service.stores import function_store
from singleton_flags_service.vocabulary import (
    CHANGES_APPLIED,
    DIMENSION_CODE,
    KIND_SCHEDULED,
    REFUSALS,
    STATIC,
    WRITE_CONFLICTS,
)
from singleton_flags_service.writes.audit import decode_cursor
from singleton_flags_service.writes.idempotency import REPLAYED_HEADER, Idempotency, parse_key
from singleton_flags_service.writes.store import DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT, ChangeResult

CONFIG = WriteConfiguration.from_env(os.environ)  # the environment and the deployment document, checked once
SETTINGS = CONFIG.settings
DECLARATIONS = load_service_declarations()
CLIENT = dynamodb_client(WRITE_CLIENT_CONFIG)
STORE = function_store(
    CLIENT,
    SETTINGS,
    DECLARATIONS,
    # every write keeps room in the item for the longest window's bookkeeping, so a window start always fits
    reserve_owner=CONFIG.longest_window_name,
    on_retry=count_write_retry,
)
_NO_STORE = {"Cache-Control": "no-store"}

SCHEDULER = scheduler_client()  # one client for the scheduled changes' and the guards' one-time schedules


def landing(changes: Mapping[str, Any], actor: str) -> None:
    """A scheduled change's flags checked against where its write will land (on the store the module holds)."""
    STORE.check_landing(changes, kind=KIND_SCHEDULED, actor=actor)


SCHEDULED = ScheduledChanges(
    ScheduleItems(CLIENT, SETTINGS.table_name, retention_seconds=SETTINGS.audit_retention_days * 86400),
    OneTimeSchedules(SCHEDULER, CONFIG.scheduled_changes),
    landing=landing,
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
    counter=ReadCounter(item=SETTINGS.item_sort_key),
)
# a request with a time is scheduled by its last approval, in the scheduled changes' schedule group
CHANGE_REQUESTS = ChangeRequests.for_function(
    CLIENT, SETTINGS, STORE, OneTimeSchedules(SCHEDULER, CONFIG.scheduled_changes)
)
GUARDS = GuardedWrites.for_function(CLIENT, SCHEDULER, SETTINGS, CONFIG.guard_closes)
MODELS = build_models(DECLARATIONS, SETTINGS.guard_alarm_prefix)
if TYPE_CHECKING:  # the request models' shape for the type checker (declared in models.py: this module compiles
    # before its collector pause, so it stays small); at run time they come from the declarations
    from singleton_flags_service.api.models import PatchRequest, RestoreRequest, RevertRequest
else:
    PatchRequest = MODELS["PatchRequest"]
    RevertRequest = MODELS["RevertRequest"]
    RestoreRequest = MODELS["RestoreRequest"]
FlagsState = MODELS["FlagsState"]
History = MODELS["History"]
# What GET /flags/declarations answers, built once: the declarations never change in a running function.
DECLARATION_LIST = {"declarations": DECLARATIONS.as_documents()}
# The windows' schedules as deployed (cdk.json, through the stack), evaluated per GET /flags/windows.
WINDOW_SCHEDULES = window_schedules(CONFIG.windows)


def _json_body(text: str) -> dict[str, Any]:
    """The body deserializer Powertools' validation calls: the write API's JSON rules
    (singleton_flags_service.api.requests)."""
    if not _body_is_json():  # application/jsonx and the like, which Powertools takes for JSON
        raise _not_json()
    return parse_json_body(text)


app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=_json_body)
views = Views(app, WRITE_FUNCTION)

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
    if tags is None or isinstance(tags, str):  # absent, or WILDCARD (the only text parse_entity_tags returns)
        return None
    versions = acceptable_versions(tags)
    return next(iter(versions)) if len(versions) == 1 and len(tags) == 1 else versions


def _history_query() -> tuple[int, str | None]:
    return page_query(app.current_event.raw_event, decode_cursor, DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT)


def _time_budget() -> float:
    """Seconds the store may spend, an unconditional write's retries included: the invocation's remaining time
    (the Lambda context's ``get_remaining_time_in_millis``) less a margin to answer before the timeout."""
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


def _state_response(result: ChangeResult, guard: dict[str, Any] | None = None) -> Response[str]:
    snapshot = result.snapshot
    if result.wrote:
        READER.prime(snapshot)
    if result.wrote and not result.replayed:
        metrics.add_metric(name=CHANGES_APPLIED, unit=MetricUnit.Count, value=1)
    served = snapshot.state(STATIC, snapshot.fetched_at)  # labelled as a reader of the item would be served it
    body: dict[str, Any] = {
        "flags": dict(result.values),
        "version": snapshot.version,
        "reason": served.reason,  # DEFAULT: a superseded item, whose readers serve their fallbacks
        "fetched_at": iso_time(snapshot.fetched_at),
        "applied": result.wrote,  # a version was written: the change, or the restore of a missing item
        "changed": dict(result.changed),
    }
    if served.fallen_back:  # served as their fallbacks though the item was read (e.g. removed by a migration)
        body["fallen_back"] = sorted(served.fallen_back)
    if result.restored:
        body["restored"] = True
    if guard is not None:
        body["guard"] = guard
    headers = {"ETag": format_etag(snapshot.version or 0), "Cache-Control": "no-store"}
    if result.replayed:
        headers[REPLAYED_HEADER] = "true"
    return json_response(HTTPStatus.OK, body, headers)


# The routes carry no return annotation on purpose: with enable_validation, Powertools would validate and
# re-serialize every response against it. Their bodies are built by json_response, as the error contract's are.
@views(PATCH_FLAGS, answer=FlagsState, described="The new state")
def patch_flags(body: Annotated[PatchRequest, Body()], if_match: IfMatch = None):  # type: ignore[no-untyped-def]  # on purpose, see above
    changes, reason = body.flags.model_dump(exclude_unset=True), body.reason  # validated by the model, once
    expected, actor = _expected_version(), _actor()
    guard = GUARDS.new(body.guard, actor)
    idempotency = _idempotency(actor, guarded_request({"flags": changes, "reason": reason}, guard), expected)
    result = STORE.change(
        changes,
        actor=actor,
        reason=reason,
        expected_version=expected,
        idempotency=idempotency,
        time_budget=_time_budget(),
        **store_options(guard),
    )
    return _state_response(result, GUARDS.answer(result, guard))


@views(REVERT_FLAGS, answer=FlagsState, described="The new state")
def revert_flags(body: Annotated[RevertRequest, Body()], if_match: IfMatch = None):  # type: ignore[no-untyped-def]  # on purpose, see above
    expected, actor = _expected_version(), _actor()
    guard = GUARDS.new(body.guard, actor)
    idempotency = _idempotency(
        actor, guarded_request({"version": body.version, "reason": body.reason}, guard), expected
    )
    result = STORE.revert(
        body.version,
        actor=actor,
        reason=body.reason,
        expected_version=expected,
        idempotency=idempotency,
        time_budget=_time_budget(),
        **store_options(guard),
    )
    return _state_response(result, GUARDS.answer(result, guard))


@views(RESTORE_FLAGS, answer=FlagsState, described="The flags item as it is now")
def restore_flags(body: Annotated[RestoreRequest, Body()]):  # type: ignore[no-untyped-def]  # on purpose, see above
    """A missing flags item back now (from its newest audit record, as a new version); an existing one untouched."""
    actor = _actor()
    idempotency = _idempotency(actor, {"reason": body.reason}, None)
    result = STORE.restore(actor=actor, reason=body.reason, idempotency=idempotency, time_budget=_time_budget())
    return _state_response(result)


@views(GET_HISTORY, answer=History, described="Audit records")
def get_history(  # type: ignore[no-untyped-def]  # on purpose, see above
    limit: Annotated[str | None, limit_param("Records", DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT)] = None,
    cursor: Cursor = None,
):
    limit_value, cursor = _history_query()
    records, next_cursor = history_page(STORE, limit_value, cursor)
    return json_response(HTTPStatus.OK, {"records": records, "next_cursor": next_cursor})


def _content_type() -> str:
    return media_type(app.current_event.headers.get("content-type"))


def _body_is_json() -> bool:
    """No Content-Type or application/json (any case, parameters aside): the only bodies the write API reads."""
    return is_json_media_type(app.current_event.headers.get("content-type"))


def _not_json() -> UnsupportedMediaType:
    return UnsupportedMediaType(
        f"the body must be JSON (Content-Type: application/json), not {_content_type()!r}", rule="content_type"
    )


def _as_refusal(error: Exception) -> FlagsError:
    """Any refusal as a domain error: ours as it is; Powertools' and pydantic's mapped to the error contract."""
    event = app.current_event
    if event.http_method != "GET" and not _body_is_json():  # a form or multipart body: not what this API reads
        return _not_json()
    if isinstance(error, FlagsError):
        return error
    if isinstance(error, (binascii.Error, UnicodeDecodeError)):  # a base64 body that does not decode
        return InvalidRequest("the base64 body is not base64 of UTF-8 text", rule="encoding")
    if isinstance(error, RequestValidationError):
        first = error.errors()[0] if error.errors() else {}
        if event.http_method == "GET":  # the raw query's rules name the parameter the schema refused
            try:
                PAGE_QUERIES.get(event.resource, lambda raw: _history_query())(event.raw_event)
            except FlagsError as precise:
                return precise
        elif first.get("type") == "missing" and tuple(first.get("loc", ())) == ("body",):
            return InvalidRequest("the body is empty: send a JSON object", rule="json")
        where = ".".join(str(part) for part in first.get("loc", ()))
        return InvalidRequest(f"{where}: {first.get('msg', 'invalid request')}", rule="schema")
    raise error  # a ValueError on a JSON request is not a body-format problem: a bug, let it surface


@app.exception_handler(  # type: ignore[untyped-decorator]  # Powertools' exception_handler is unannotated
    [FlagsError, RequestValidationError, RequestUnsupportedContentType, ValueError]
)
def handle_refusal(error: Exception) -> Response[str]:
    refusal = _as_refusal(error)
    emit_count(REFUSALS, 1, {DIMENSION_CODE: refusal.code})
    if isinstance(refusal, WriteConflict):
        metrics.add_metric(name=WRITE_CONFLICTS, unit=MetricUnit.Count, value=1)
    log = logger.error if isinstance(refusal, StoreFault) else logger.info  # a 500 is our bug: it pages
    log("request refused", code=refusal.code, status=int(refusal.status), detail=refusal.message)
    return error_response(refusal)


@app.not_found
def handle_no_route(_: NotFoundError) -> Response[str]:
    return no_route_response(app.current_event.http_method, app.current_event.path)


app.include_router(
    schedule_routes(lambda: SCHEDULED, _actor, MODELS, lambda actor, request: _idempotency(actor, request, None))
)
app.include_router(guard_routes(lambda: GUARDS, MODELS))
app.include_router(
    approval_routes(lambda: CHANGE_REQUESTS, MODELS, lambda actor, body: _idempotency(actor, body, None))
)
app.include_router(console_routes(lambda: DECLARATION_LIST, lambda: WINDOW_SCHEDULES, MODELS))
app.include_router(migration_routes(globals(), SETTINGS, _actor, _time_budget, MODELS))
# The paginated GETs' own query rules, which name the parameter their schema refused (_as_refusal)
PAGE_QUERIES = {LIST_SCHEDULES.path: schedules_query, GET_GUARDS.path: guards_query, **PAGE_QUERY}


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@metrics.log_metrics
@tracer().capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(with_lowercase_json_media_type(event), context)


gc.freeze()  # what init built moves to the permanent generation: warm collections never rescan it
gc.enable()
