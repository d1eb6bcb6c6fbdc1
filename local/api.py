"""What the local runner answers: the deployed routes (through the functions) plus three local-only routes.

- every route of ``singleton_flags.routes.ROUTES``: a REST proxy event to the function the stack maps it to;
- ``POST /_scheduler/{window}/{start|end}``: the payload that window's EventBridge schedule sends
  (``infra.config.schedule_payload``, with now as its scheduled time), delivered to the maintenance
  function; never deployed;
- ``POST /_throttle`` with ``{"requests": N, "retry_after": S}``: the next N requests to deployed routes answer
  what API Gateway's throttling answers (429 ``THROTTLED``, ``Retry-After: S``), to watch a client back off;
  never deployed;
- ``GET /openapi.json``; the console (``/``, ``/console/<file>``) and Swagger UI (``/docs``) as static files
  (``local.web``).

A path no route knows answers 404; a known path under another method 405 with ``Allow`` (the same answers
and codes as ``singleton_flags.http.no_route_response``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
import uuid
from http import HTTPStatus
from typing import Any, TypeGuard

from aws_lambda_powertools.event_handler import Response

from infra.config import ACTIONS, FlagsConfig, schedule_payload
from local.functions import Functions
from local.gateway import Caller, HttpResponse, Request, http_response, proxy_event
from local.web import static_file
from singleton_flags.http import error_body, json_response, no_route_response
from singleton_flags.routes import MAINTENANCE_FUNCTION, ROUTES, Route, RouteMatch, match_route

OPENAPI = "openapi"
SCHEDULER = "scheduler"
THROTTLE = "throttle"
SCHEDULER_PATH = "/_scheduler/{window}/{action}"
THROTTLE_PATH = "/_throttle"
LOCAL_ROUTES: tuple[Route, ...] = (
    Route("GET", "/openapi.json", OPENAPI),
    Route("POST", SCHEDULER_PATH, SCHEDULER),
    Route("POST", THROTTLE_PATH, THROTTLE),
)
MAX_THROTTLED_REQUESTS = 1000
MAX_RETRY_AFTER_SECONDS = 3600
THROTTLED_MESSAGE = "Too Many Requests"  # API Gateway's message for its THROTTLED response


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> HttpResponse:
    payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8")
    return HttpResponse(status, [("Content-Type", "application/json"), *(headers or {}).items()], payload)


def _from_powertools(response: Response[Any]) -> HttpResponse:
    headers: list[tuple[str, str]] = []
    for name, value in response.headers.items():
        headers.extend((name, item) for item in (value if isinstance(value, list) else [value]))
    body = response.body if isinstance(response.body, bytes) else str(response.body or "").encode("utf-8")
    return HttpResponse(response.status_code, headers, body)


def _bounded_int(value: Any, limit: int) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def _error(status: HTTPStatus, code: str, message: str, headers: dict[str, str] | None = None) -> HttpResponse:
    return _from_powertools(json_response(status, error_body(code, message), headers))


class LocalApi:
    def __init__(
        self,
        functions: Functions,
        config: FlagsConfig,
        openapi_document: dict[str, Any],
        *,
        caller: Caller | None = None,
    ) -> None:
        self._functions = functions
        self._config = config
        self._openapi = json.dumps(openapi_document, indent=2).encode("utf-8")
        self._caller = caller or Caller()
        self._throttle_lock = threading.Lock()
        self._throttled_left = 0
        self._retry_after = 1

    def handle(self, request: Request) -> HttpResponse:
        """The answer to ``request``; every answer carries ``x-amzn-RequestId``, as API Gateway's do."""
        response = self._answer(request)
        if any(name.lower() == "x-amzn-requestid" for name, _ in response.headers):
            return response
        return HttpResponse(
            response.status, [*response.headers, ("x-amzn-RequestId", str(uuid.uuid4()))], response.body
        )

    def _answer(self, request: Request) -> HttpResponse:
        static = static_file(request.method, request.raw_path)
        if static is not None:
            return static
        found = match_route((*ROUTES, *LOCAL_ROUTES), request.method, request.raw_path)
        if not isinstance(found, RouteMatch):
            return self._no_route(request)
        if found.route.function == OPENAPI:
            return HttpResponse(200, [("Content-Type", "application/json")], self._openapi)
        if found.route.function == SCHEDULER:
            return self._schedule(found.path_parameters["window"], found.path_parameters["action"])
        if found.route.function == THROTTLE:
            return self._set_throttle(request.body)
        throttled = self._throttled()
        if throttled is not None:
            return throttled
        return self._proxy(request, found)

    def _set_throttle(self, body: bytes) -> HttpResponse:
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            payload = None
        settings = payload if isinstance(payload, dict) else {}
        requests, retry_after = settings.get("requests"), settings.get("retry_after", 1)
        if not (_bounded_int(requests, MAX_THROTTLED_REQUESTS) and _bounded_int(retry_after, MAX_RETRY_AFTER_SECONDS)):
            message = (
                f'send {{"requests": 0..{MAX_THROTTLED_REQUESTS}, "retry_after": 0..{MAX_RETRY_AFTER_SECONDS}}} '
                "(integers; retry_after defaults to 1)"
            )
            return _error(HTTPStatus.BAD_REQUEST, "INVALID_REQUEST", message)
        with self._throttle_lock:
            self._throttled_left, self._retry_after = requests, retry_after
        return _json(200, {"throttling": {"requests": requests, "retry_after": retry_after}})

    def _throttled(self) -> HttpResponse | None:
        """API Gateway's THROTTLED answer (infra.api's gateway response) while requests are left to refuse."""
        with self._throttle_lock:
            if self._throttled_left <= 0:
                return None
            self._throttled_left -= 1
            retry_after = self._retry_after
        return _error(HTTPStatus.TOO_MANY_REQUESTS, "THROTTLED", THROTTLED_MESSAGE, {"Retry-After": str(retry_after)})

    @staticmethod
    def _no_route(request: Request) -> HttpResponse:
        local = match_route(LOCAL_ROUTES, request.method, request.raw_path)
        if isinstance(local, list) and local:  # a local-only path under another method
            methods = ", ".join(local)
            message = f"{request.method} is not supported on {request.raw_path}; use {methods}"
            return _error(HTTPStatus.METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED", message, {"Allow": methods})
        return _from_powertools(no_route_response(request.method, request.raw_path))

    def _proxy(self, request: Request, match: RouteMatch) -> HttpResponse:
        request_id = str(uuid.uuid4())
        event = proxy_event(
            method=request.method,
            raw_path=request.raw_path,
            query=request.query,
            headers=request.headers,
            body=request.body,
            match=match,
            stage=self._config.stage,
            caller=Caller(self._caller.name, request.client_ip),
            request_id=request_id,
        )
        try:
            response = http_response(self._functions.invoke(match.route.function, event, request_id))
        except Exception as exc:  # noqa: BLE001 - a Lambda error (or a malformed proxy answer) is API Gateway's 502
            return self._function_error(match.route.function, exc)
        return HttpResponse(response.status, [*response.headers, ("x-amzn-RequestId", request_id)], response.body)

    def _schedule(self, window: str, action: str) -> HttpResponse:
        names = [known.name for known in self._config.maintenance_windows]
        if window not in names or action not in ACTIONS:
            return _error(
                HTTPStatus.NOT_FOUND,
                "WINDOW_NOT_FOUND",
                f"no schedule {window}/{action}: windows in cdk.json are {names or 'none'}, actions {list(ACTIONS)}",
            )
        payload = schedule_payload(window, action, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        try:
            result = self._functions.invoke(MAINTENANCE_FUNCTION, payload)
        except Exception as exc:  # noqa: BLE001 - the scheduler would retry, then dead-letter; we report it
            return self._function_error(MAINTENANCE_FUNCTION, exc)
        return _json(200, {"delivered": payload, "result": result})

    @staticmethod
    def _function_error(function: str, exc: Exception) -> HttpResponse:
        print(f"[{function} function] invocation failed:", file=sys.stderr)
        traceback.print_exception(exc, file=sys.stderr)
        return _error(
            HTTPStatus.BAD_GATEWAY, "FUNCTION_ERROR", f"the {function} function failed: {type(exc).__name__}: {exc}"
        )
