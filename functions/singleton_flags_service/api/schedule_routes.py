"""The write API's scheduled-change routes: POST and GET /flags/schedules, DELETE /flags/schedules/{id}.

A Powertools ``Router`` the write function includes (its validation, exception handler and OpenAPI document
cover these routes as they cover the others). Built by ``schedule_routes`` from the function's own service,
caller identity and request models, so the routes hold no state of their own. No ``from __future__ import
annotations`` here: Powertools reads the routes' parameter annotations at run time.
"""

from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel

from singleton_flags_service.api.http import json_response
from singleton_flags_service.api.requests import page_query
from singleton_flags_service.api.route_params import Cursor, limit_param
from singleton_flags_service.api.routes import CANCEL_SCHEDULE, CREATE_SCHEDULE, LIST_SCHEDULES, Views
from singleton_flags_service.contract import WRITE_FUNCTION
from singleton_flags_service.schedules.changes import (
    DEFAULT_LIST_LIMIT,
    MAX_LIST_LIMIT,
    ScheduledChanges,
    decode_cursor,
)
from singleton_flags_service.schedules.timing import parse_schedule_time
from singleton_flags_service.writes.idempotency import REPLAYED_HEADER, Idempotency

NO_STORE = {"Cache-Control": "no-store"}


def schedules_query(event: Mapping[str, Any]) -> tuple[int, str | None]:
    """``limit`` and ``cursor`` of GET /flags/schedules, from the raw query (a repeat refused, ASCII digits)."""
    return page_query(event, decode_cursor, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)


def schedule_routes(
    scheduled: Callable[[], ScheduledChanges],
    actor: Callable[[], str],
    models: Mapping[str, type[BaseModel]],
    idempotency: Callable[[str, dict[str, Any]], Idempotency | None],
) -> Router:
    """``scheduled`` gives the function's service at each request (its module attribute, which tests replace);
    ``idempotency`` the request's Idempotency-Key for a caller and the request it names (None without one)."""
    router = Router()  # type: ignore[no-untyped-call]  # Powertools' Router.__init__ is unannotated
    views = Views(router, WRITE_FUNCTION)
    schedule_request = models["ScheduleRequest"]

    # The routes carry no return annotation on purpose (as the write function's: their bodies are json_response's).
    @views(CREATE_SCHEDULE, answer=models["Schedule"], described="Pending")
    def create_schedule(body: Annotated[schedule_request, Body()]):  # type: ignore[no-untyped-def,valid-type]
        """A change applied once at ``at``: its item (pending) first, then its one-time Scheduler schedule."""
        request: Any = body
        when = parse_schedule_time(request.at, request.timezone)  # validated by the model; parsed for its instant
        changes = request.flags.model_dump(exclude_unset=True)
        caller = actor()
        named = {
            "flags": changes,
            "reason": request.reason,
            "at": when.iso,
            "timezone": when.timezone,
            "if_version": request.if_version,
        }
        change, replayed = scheduled().create(
            changes, request.reason, when, request.if_version, caller, idempotency(caller, named)
        )
        headers = {**NO_STORE, REPLAYED_HEADER: "true"} if replayed else NO_STORE
        return json_response(HTTPStatus.CREATED, change.as_json(), headers)

    @views(LIST_SCHEDULES, answer=models["Schedules"], described="Newest first")
    def list_schedules(  # type: ignore[no-untyped-def]
        # Documented here, read from the raw query (schedules_query).
        limit: Annotated[str | None, limit_param("Scheduled changes", DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)] = None,
        cursor: Cursor = None,
    ):
        limit_value, cursor = schedules_query(router.current_event.raw_event)
        changes, next_cursor = scheduled().list(limit=limit_value, cursor=cursor)
        body = {"schedules": [change.as_json() for change in changes], "next_cursor": next_cursor}
        return json_response(HTTPStatus.OK, body, NO_STORE)

    @views(CANCEL_SCHEDULE, answer=models["Cancellation"], described="Cancelled")
    def cancel_schedule(id: str):  # type: ignore[no-untyped-def]  # noqa: A002 - the route's path parameter
        change, deleted = scheduled().cancel(id, actor())
        return json_response(HTTPStatus.OK, {"schedule": change.as_json(), "schedule_deleted": deleted}, NO_STORE)

    return router
