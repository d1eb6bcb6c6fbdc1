"""Read function: GET /flags and GET /flags/{name}. The hot path: no pydantic, no tracer, no print.

Everything is built once per execution environment (module scope), so the provider's cache lives as
long as the environment is warm and a cached read costs a dict lookup and a JSON dump.
"""

from __future__ import annotations

import os
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.logging import correlation_paths

from flags.aws import dynamodb_client
from flags.declarations import load_declarations
from flags.errors import FlagNotFound, FlagsError
from flags.http import error_response, format_etag, iso_time, json_response, no_route_response, parse_entity_tags
from flags.observability import logger
from flags.provider import SingletonProvider
from flags.reader import DEFAULT, FlagReader, FlagState
from flags.settings import Settings

SETTINGS = Settings.from_env(os.environ)
DECLARATIONS = load_declarations()
PROVIDER = SingletonProvider(client=dynamodb_client(), table_name=SETTINGS.table_name, declarations=DECLARATIONS)
READER = FlagReader(
    PROVIDER, DECLARATIONS, sort_key=SETTINGS.item_sort_key, max_stale=SETTINGS.max_stale_seconds
)

app = APIGatewayRestResolver()


def _respond(state: FlagState, body: dict[str, Any]) -> Response:
    """200 with an ETag, or 304 when the client already holds this version.

    No ETag (and no 304) for values that are not a stored version: fallbacks, or a maintenance window
    ended by its stored deadline (the served value differs from the stored one of that version).
    """
    if state.reason == DEFAULT or state.version is None or state.maintenance_deadline_passed:
        return json_response(HTTPStatus.OK, body, {"Cache-Control": "no-store"})
    etag = format_etag(state.version)
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    held = parse_entity_tags(app.current_event.headers.get("if-none-match"))
    if held is not None and ("*" in held or str(state.version) in held):
        return Response(status_code=int(HTTPStatus.NOT_MODIFIED), headers=headers)
    return json_response(HTTPStatus.OK, body, headers)


def _metadata(state: FlagState) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "version": state.version,
        "reason": state.reason,
        "fetched_at": iso_time(state.fetched_at) if state.fetched_at is not None else None,
    }
    if state.maintenance_deadline_passed:
        meta["maintenance_ended_by"] = "deadline"
    return meta


@app.get("/flags")
def get_flags() -> Response:
    state = READER.read()
    return _respond(state, {"flags": dict(state.values), **_metadata(state)})


@app.get("/flags/<name>")
def get_flag(name: str) -> Response:
    if name not in DECLARATIONS:
        raise FlagNotFound(f"no flag named '{name}' is declared", flag=name)
    state = READER.read()
    return _respond(state, {"name": name, "value": state.values[name], **_metadata(state)})


@app.exception_handler(FlagsError)
def handle_flags_error(error: FlagsError) -> Response:
    return error_response(error)


@app.not_found
def handle_no_route(_: NotFoundError) -> Response:
    return no_route_response(app.current_event.http_method, app.current_event.path)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
