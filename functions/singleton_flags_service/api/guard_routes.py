"""The write API's guard route: GET /flags/guards.

A Powertools ``Router`` the write function includes, as it includes the scheduled changes' routes
(``singleton_flags_service.api.schedule_routes``): its validation, exception handler and OpenAPI document cover it. No
``from __future__ import annotations`` here: Powertools reads the route's parameter annotations at run time.
"""

from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel

from singleton_flags_service.api.http import json_response
from singleton_flags_service.api.requests import page_query
from singleton_flags_service.api.route_params import Cursor, limit_param
from singleton_flags_service.api.routes import GET_GUARDS, Views
from singleton_flags_service.contract import WRITE_FUNCTION
from singleton_flags_service.guards.items import DEFAULT_GUARDS_LIMIT, MAX_GUARDS_LIMIT, guards_page_json
from singleton_flags_service.guards.writes import GuardedWrites
from singleton_flags_service.writes.audit import decode_cursor


def guards_query(event: Mapping[str, Any]) -> tuple[int, str | None]:
    """``limit`` and ``cursor`` of GET /flags/guards, from the raw query (a repeat refused, ASCII digits)."""
    return page_query(event, decode_cursor, DEFAULT_GUARDS_LIMIT, MAX_GUARDS_LIMIT)


def guard_routes(guards: Callable[[], GuardedWrites], models: Mapping[str, type[BaseModel]]) -> Router:
    """``guards`` gives the function's guarded writes at each request (its module attribute, which tests and the
    local runner replace or adjust)."""
    router = Router()  # type: ignore[no-untyped-call]  # Powertools' Router.__init__ is unannotated
    views = Views(router, WRITE_FUNCTION)

    # No return annotation on purpose (as the write function's routes: the body is json_response's).
    @views(GET_GUARDS, answer=models["Guards"], described="Guards")
    def get_guards(  # type: ignore[no-untyped-def]
        # Documented here, read from the raw query (guards_query).
        limit: Annotated[str | None, limit_param("Guards", DEFAULT_GUARDS_LIMIT, MAX_GUARDS_LIMIT)] = None,
        cursor: Cursor = None,
    ):
        """Guards newest first, from their items (state, alarms, bake end, guarded version, outcome)."""
        limit_value, cursor = guards_query(router.current_event.raw_event)
        service = guards()
        found, next_cursor = service.book.page(limit=limit_value, cursor=cursor)
        return json_response(HTTPStatus.OK, guards_page_json(found, next_cursor, service.clock()))

    return router
