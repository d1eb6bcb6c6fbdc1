"""The write API's change-request routes: POST and GET /flags/change-requests, GET /flags/change-requests/{id},
POST /flags/change-requests/{id}/approve, /reject and /withdraw.

A Powertools ``Router`` the write function includes (its validation, exception handler and OpenAPI document cover
these routes as they cover the others). The caller is the normalised principal
(``singleton_flags_service.approvals.principals``) of API Gateway's request context. No ``from __future__ import
annotations`` here: Powertools reads the routes' parameter annotations at run time.
"""

from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from pydantic import BaseModel

from singleton_flags_service.api.http import json_response
from singleton_flags_service.api.requests import page_query, single_query_value
from singleton_flags_service.api.route_params import Cursor, limit_param
from singleton_flags_service.api.routes import (
    APPROVE_CHANGE_REQUEST,
    CREATE_CHANGE_REQUEST,
    GET_CHANGE_REQUEST,
    LIST_CHANGE_REQUESTS,
    REJECT_CHANGE_REQUEST,
    WITHDRAW_CHANGE_REQUEST,
    Views,
)
from singleton_flags_service.approvals.models import STATES
from singleton_flags_service.approvals.principals import normalise
from singleton_flags_service.approvals.store import (
    DEFAULT_LIST_LIMIT,
    MAX_LIST_LIMIT,
    ChangeRequests,
    decode_cursor,
)
from singleton_flags_service.contract import WRITE_FUNCTION
from singleton_flags_service.errors import InvalidRequest
from singleton_flags_service.observability import emit_count, logger
from singleton_flags_service.schedules.timing import parse_schedule_time
from singleton_flags_service.vocabulary import BREAK_GLASS_USED, CHANGE_REQUESTS_APPLIED
from singleton_flags_service.writes.idempotency import REPLAYED_HEADER, Idempotency

NO_STORE = {"Cache-Control": "no-store"}


def change_requests_query(event: Mapping[str, Any]) -> tuple[int, str | None]:
    """``limit`` and ``cursor`` of GET /flags/change-requests, from the raw query (a repeat refused), ``state``
    checked too (the precise refusal for whichever parameter the schema refused)."""
    _state_query(event)
    return page_query(event, decode_cursor, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)


def _state_query(event: Mapping[str, Any]) -> str | None:
    state = single_query_value(event, "state", rule="state")
    if state is not None and state not in STATES:
        raise InvalidRequest(f"'state' must be one of {list(STATES)}", rule="state")
    return state


# The list's own query rules, for the write function's refusal mapping (it names the parameter the schema refused)
PAGE_QUERY = {LIST_CHANGE_REQUESTS.path: change_requests_query}


def approval_routes(
    requests: Callable[[], ChangeRequests],
    models: Mapping[str, type[BaseModel]],
    idempotency: Callable[[str, dict[str, Any]], Idempotency | None],
) -> Router:
    """``requests`` gives the function's change requests at each request (its module attribute, which tests
    replace); ``idempotency`` the request's Idempotency-Key for a caller and the request it names (None without
    one)."""
    router = Router()  # type: ignore[no-untyped-call]  # Powertools' Router.__init__ is unannotated
    views = Views(router, WRITE_FUNCTION)

    def principal() -> str:
        """The caller as the approval rules compare it (an assumed role's session as its role, unless trusted):
        from API Gateway's request context alone (the SigV4 signer), never a header or the runner's name."""
        identity = (router.current_event.raw_event.get("requestContext") or {}).get("identity") or {}
        caller = identity.get("userArn") or identity.get("caller") or "unknown-iam-identity"
        return normalise(caller, requests().declarations.trusted_session_roles)

    def clock() -> float:
        return requests().now()

    create_model = models["ChangeRequestCreate"]
    decision_model = models["ChangeRequestDecision"]
    rejection_model = models["ChangeRequestRejection"]

    def answer(status: HTTPStatus, body: dict[str, Any], replayed: bool = False) -> Any:
        return json_response(status, body, {**NO_STORE, REPLAYED_HEADER: "true"} if replayed else NO_STORE)

    # The routes carry no return annotation on purpose (as the write function's: their bodies are json_response's).
    @views(CREATE_CHANGE_REQUEST, answer=models["ChangeRequestAnswer"], described="Pending (break-glass: applied)")
    def create_change_request(body: Annotated[create_model, Body()]):  # type: ignore[no-untyped-def,valid-type]
        request: Any = body
        caller = principal()
        # validated by the model; parsed for its instant (how far ahead: checked against the clock at creation)
        when = parse_schedule_time(request.at, request.timezone) if request.at is not None else None
        named = {
            "flags": request.flags.model_dump(exclude_unset=True) if request.flags is not None else None,
            "revert_to": request.revert_to,
            "reason": request.reason,
            "if_version": request.if_version,
            "break_glass": request.break_glass,
            "at": when.iso if when is not None else None,
        }
        created = requests().create(
            caller,
            reason=request.reason,
            flags=named["flags"],
            revert_to=request.revert_to,
            if_version=request.if_version,
            break_glass=request.break_glass,
            at=when,
            idempotency=idempotency(caller, named),
        )
        if request.break_glass and not created.replayed:
            emit_count(BREAK_GLASS_USED, 1)
            logger.warning(
                "break-glass: a protected change applied without approvals",
                principal=caller,
                id=created.request.id,
                version=created.request.applied_version,
            )
        return answer(HTTPStatus.CREATED, {"change_request": created.request.as_json(clock())}, created.replayed)

    @views(LIST_CHANGE_REQUESTS, answer=models["ChangeRequestList"], described="Newest first")
    def list_change_requests(  # type: ignore[no-untyped-def]
        # Documented here, read from the raw query (change_requests_query).
        state: Annotated[str | None, Query(description=f"Only requests in this state: one of {list(STATES)}.")] = None,
        limit: Annotated[str | None, limit_param("Change requests", DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)] = None,
        cursor: Cursor = None,
    ):
        event = router.current_event.raw_event
        limit_value, cursor = change_requests_query(event)
        found, next_cursor = requests().page(state=_state_query(event), limit=limit_value, cursor=cursor)
        now = clock()
        body = {"change_requests": [request.as_json(now) for request in found], "next_cursor": next_cursor}
        return answer(HTTPStatus.OK, body)

    @views(GET_CHANGE_REQUEST, answer=models["ChangeRequestAnswer"], described="The change request")
    def get_change_request(id: str):  # type: ignore[no-untyped-def]  # noqa: A002 - the route's path parameter
        return answer(HTTPStatus.OK, {"change_request": requests().get(id).as_json(clock())})

    @views(APPROVE_CHANGE_REQUEST, answer=models["ApprovalAnswer"], described="Approved (applied by the last one)")
    def approve_change_request(id: str, body: Annotated[decision_model, Body()]):  # type: ignore[no-untyped-def,valid-type]  # noqa: A002
        caller = principal()
        reason = body.reason  # type: ignore[attr-defined]
        key = idempotency(caller, {"approve": id, "reason": reason})
        approval = requests().approve(id, caller, reason=reason, idempotency=key)
        if approval.applied and not approval.replayed:
            emit_count(CHANGE_REQUESTS_APPLIED, 1)
        body_out = {
            "change_request": approval.request.as_json(clock()),
            "applied": approval.applied,
            "version": approval.version,
        }
        return answer(HTTPStatus.OK, body_out, approval.replayed)

    @views(REJECT_CHANGE_REQUEST, answer=models["ChangeRequestAnswer"], described="Rejected")
    def reject_change_request(id: str, body: Annotated[rejection_model, Body()]):  # type: ignore[no-untyped-def,valid-type]  # noqa: A002
        request = requests().reject(id, principal(), body.reason)  # type: ignore[attr-defined]
        return answer(HTTPStatus.OK, {"change_request": request.as_json(clock())})

    @views(WITHDRAW_CHANGE_REQUEST, answer=models["ChangeRequestAnswer"], described="Withdrawn")
    def withdraw_change_request(id: str, body: Annotated[decision_model, Body()]):  # type: ignore[no-untyped-def,valid-type]  # noqa: A002
        request = requests().withdraw(id, principal(), body.reason)  # type: ignore[attr-defined]
        return answer(HTTPStatus.OK, {"change_request": request.as_json(clock())})

    return router
