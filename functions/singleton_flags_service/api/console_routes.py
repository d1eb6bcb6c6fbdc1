"""The write API's console reads: GET /flags/declarations and GET /flags/windows (docs/api.md, "What a console
reads"). Neither reads the table.

A Powertools ``Router`` the write function includes, as it includes the scheduled changes' and the guards'
routes: its validation, exception handler and OpenAPI document cover them. No ``from __future__ import
annotations`` here: Powertools reads the routes' parameter annotations at run time.
"""

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel

from singleton_flags_service.api.http import json_response
from singleton_flags_service.api.routes import GET_DECLARATIONS, GET_WINDOWS, Views
from singleton_flags_service.contract import WRITE_FUNCTION
from singleton_flags_service.maintenance.windows import WindowSchedule

NO_STORE = {"Cache-Control": "no-store"}


def console_routes(
    declarations: Callable[[], Mapping[str, Any]],
    schedules: Callable[[], Sequence[WindowSchedule]],
    models: Mapping[str, type[BaseModel]],
) -> Router:
    """``declarations`` gives GET /flags/declarations' answer (built once at cold start: the declarations never
    change in a running function), ``schedules`` the windows' schedules as deployed, evaluated per request (both
    the function's module attributes, which tests replace)."""
    router = Router()  # type: ignore[no-untyped-call]  # Powertools' Router.__init__ is unannotated
    views = Views(router, WRITE_FUNCTION)

    # No return annotations on purpose (as the write function's routes: the bodies are json_response's).
    @views(GET_DECLARATIONS, answer=models["DeclarationList"], described="The declarations")
    def get_declarations():  # type: ignore[no-untyped-def]
        return json_response(HTTPStatus.OK, dict(declarations()), NO_STORE)

    @views(GET_WINDOWS, answer=models["WindowList"], described="The windows")
    def get_windows():  # type: ignore[no-untyped-def]
        now = datetime.now(UTC)
        return json_response(HTTPStatus.OK, {"windows": [schedule.upcoming(now) for schedule in schedules()]}, NO_STORE)

    return router
