"""Read function: GET /flags, GET /flags/{name} and the two OFREP POSTs. The hot path: no pydantic, no print.

Everything is built once per execution environment (module scope), so the provider's cache lives as
long as the environment is warm and a cached read costs a dict lookup and a JSON dump.
"""

from __future__ import annotations

import gc

gc.disable()  # init builds 100k+ long-lived objects, little garbage: no collection until it ends (decisions.md)

import json
import os
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any, cast

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.logging import correlation_paths

from singleton_flags.aws import dynamodb_client
from singleton_flags.codec import iso_time
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader, FlagState, flag_reason
from singleton_flags_service.api.http import (
    JSON,
    FlagRead,
    FlagsRead,
    Maintenance,
    ReadMetadata,
    error_response,
    format_etag,
    header_values,
    holds_version,
    json_response,
    no_route_response,
)
from singleton_flags_service.api.ofrep import OfrepError, bulk_evaluation, check_key, check_request, evaluation
from singleton_flags_service.api.routes import (
    GET_FLAG,
    GET_FLAGS,
    OFREP_EVALUATE_FLAG,
    OFREP_EVALUATE_FLAGS,
    ROUTES,
    RouteMatch,
    Views,
    match_route,
)
from singleton_flags_service.errors import FlagNotFound, FlagsError
from singleton_flags_service.observability import ReadCounter, logger
from singleton_flags_service.reader_contract import READ_FUNCTION, Settings, load_service_declarations
from singleton_flags_service.vocabulary import ALL_FLAGS, DEFAULT, DEFAULT_SERVICE

SETTINGS = Settings.from_env(os.environ)
DECLARATIONS = load_service_declarations()
PROVIDER = SingletonProvider(client=dynamodb_client(), table_name=SETTINGS.table_name, declarations=DECLARATIONS)
# reads by reason, per flag (``flag_reads``), and the version served with the item configured: EMF, rarely
COUNTER = ReadCounter(item=SETTINGS.item_sort_key)
FLAG_READS = COUNTER.flag_reads
READER = FlagReader(
    PROVIDER,
    DECLARATIONS,
    sort_key=SETTINGS.item_sort_key,
    max_age=SETTINGS.max_age_seconds,
    max_stale=SETTINGS.max_stale_seconds,
    counter=COUNTER,
)

app = APIGatewayRestResolver()
views = Views(app, READ_FUNCTION)

_NO_STORE = {"Cache-Control": "no-store"}


def _if_none_match() -> list[str] | None:
    """Every If-None-Match field value, looked up once in the raw event (Powertools' ``headers`` copies them all)."""
    return header_values(app.current_event.raw_event, "If-None-Match")


def _fetched_at(state: FlagState) -> str | None:
    return iso_time(state.fetched_at) if state.fetched_at is not None else None


def _metadata(state: FlagState) -> ReadMetadata:
    meta: ReadMetadata = {"version": state.version, "reason": state.reason, "fetched_at": _fetched_at(state)}
    if state.maintenance_deadline_passed:
        meta["maintenance_ended_by"] = "deadline"
    return meta


def _all_flags(state: FlagState) -> FlagsRead:
    # the reader's maintenance() is this shape (the fuzz tier holds every answer to the generated document)
    maintenance = cast("Maintenance", state.maintenance())
    read = cast("FlagsRead", {"flags": dict(state.values), **_metadata(state), "maintenance": maintenance})
    if state.fallen_back and state.reason != DEFAULT:
        read["fallen_back"] = sorted(state.fallen_back)
    return read


def _one_flag(state: FlagState, name: str) -> FlagRead:
    return {
        "name": name,
        "value": state.values[name],
        **_metadata(state),
        "reason": flag_reason(state, name),  # DEFAULT for a flag served as its fallback, whatever the others
    }


class _BodyMemo:
    """The last serialized body per route: a cached read serves the bytes it served a moment ago.

    Keyed by everything a body is made of; a new snapshot, reason or deadline outcome makes a new body.
    """

    def __init__(self, build: Callable[..., Mapping[str, Any]]) -> None:
        self._build = build
        self._key: tuple[Any, ...] | None = None
        self._body = ""

    def __call__(self, state: FlagState, *extra: Any) -> str:
        key = (
            id(state.values),
            state.version,
            state.reason,
            state.fetched_at,
            state.maintenance_deadline_passed,
            *extra,
        )
        if key != self._key:
            self._body = json.dumps(self._build(state, *extra), separators=(",", ":"), ensure_ascii=False)
            self._key = key
        return self._body


_all_flags_body = _BodyMemo(_all_flags)
_one_flag_body = _BodyMemo(_one_flag)
# OFREP's flagSetId: the service's name, as the in-process OpenFeature provider gives it by default
FLAG_SET_ID = os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE
_ofrep_flag_body = _BodyMemo(lambda state, key: evaluation(state, key, DECLARATIONS, FLAG_SET_ID))
_ofrep_flags_body = _BodyMemo(lambda state: bulk_evaluation(state, DECLARATIONS, FLAG_SET_ID))


def _respond(state: FlagState, body: Callable[[], str]) -> Response[str]:
    """200 with an ETag, or 304 when the client already holds this version.

    No ETag (and no 304) for values that are not a stored version: fallbacks, or a maintenance window
    ended by its stored deadline (the served value differs from the stored one of that version).
    """
    if state.reason == DEFAULT or state.version is None or state.maintenance_deadline_passed:
        return Response(status_code=200, content_type=JSON, body=body(), headers=_NO_STORE)
    headers = {"ETag": format_etag(state.version), "Cache-Control": "no-cache"}
    if holds_version(_if_none_match(), state.version):
        return Response(status_code=int(HTTPStatus.NOT_MODIFIED), headers=headers)
    return Response(status_code=200, content_type=JSON, body=body(), headers=headers)


@views(GET_FLAGS)
def get_flags() -> Response[str]:
    FLAG_READS[ALL_FLAGS] += 1
    state = READER.read()
    return _respond(state, lambda: _all_flags_body(state))


@views(GET_FLAG)
def get_flag(name: str) -> Response[str]:
    if name not in DECLARATIONS:
        raise FlagNotFound(f"no flag named '{name}' is declared", flag=name)
    FLAG_READS[name] += 1
    state = READER.read()
    return _respond(state, lambda: _one_flag_body(state, name))


def _request_body() -> str | None:
    event = app.current_event
    return event.decoded_body if event.is_base64_encoded else event.body


@views(OFREP_EVALUATE_FLAG)
def ofrep_evaluate_flag(key: str) -> Response[str]:
    check_request(_request_body(), key)
    check_key(key, DECLARATIONS)
    FLAG_READS[key] += 1
    state = READER.read()
    return Response(status_code=200, content_type=JSON, body=_ofrep_flag_body(state, key), headers=_NO_STORE)


@views(OFREP_EVALUATE_FLAGS)
def ofrep_evaluate_flags() -> Response[str]:
    """Every flag; ETag and 304 as GET /flags (OFREP's bulk route is a POST: 304, not RFC 9110's 412)."""
    check_request(_request_body())
    FLAG_READS[ALL_FLAGS] += 1
    state = READER.read()
    return _respond(state, lambda: _ofrep_flags_body(state))


@app.exception_handler(OfrepError)  # type: ignore[untyped-decorator]  # Powertools' exception_handler is unannotated
def handle_ofrep_error(error: OfrepError) -> Response[str]:
    return json_response(error.status, error.body(), _NO_STORE)


@app.exception_handler(FlagsError)  # type: ignore[untyped-decorator]  # Powertools' exception_handler is unannotated
def handle_flags_error(error: FlagsError) -> Response[str]:
    return error_response(error)


@app.not_found
def handle_no_route(_: NotFoundError) -> Response[str]:
    """A path Powertools' pattern refuses (a raw ", \\ or ` in a segment) that a read route of the table takes is
    answered by that route's view, as any undeclared name, in its error shape; any other path by 404 or 405."""
    event = app.current_event
    match = match_route(ROUTES, event.http_method, event.path)
    view = views.view(match) if isinstance(match, RouteMatch) else None
    if view is None:
        return no_route_response(event.http_method, event.path)
    try:
        answer: Response[str] = view()
        return answer
    except OfrepError as error:  # the exception handlers' own answers (their decorator hides their types)
        return json_response(error.status, error.body(), _NO_STORE)
    except FlagsError as error:
        return error_response(error)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)


gc.freeze()  # what init built moves to the permanent generation: warm collections never rescan it
gc.enable()
