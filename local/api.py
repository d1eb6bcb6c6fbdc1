"""What the local runner answers: the deployed routes (through the functions) plus local-only routes.

- every route of ``singleton_flags_service.api.routes.ROUTES``: a REST proxy event to the function the stack maps it to;
  the caller is the runner's local admin, or the ARN an ``X-Local-Actor`` header names (the runner's own header,
  never forwarded to a function);
- ``POST /_scheduler/{window}/{start|end}``: the payload that window's EventBridge schedule sends
  (``singleton_flags_infra.config.schedule_payload``, with now as its scheduled time), delivered to the maintenance
  function; never deployed;
- ``GET /_events``: the ``Flags Changed`` events the deployed publisher made from the table's stream (every
  audit record the writes committed), oldest first (``local.events``); never deployed;
- ``POST /_scheduler/changes/{id}``: what a scheduled change's one-time schedule sends (``{"scheduled_change":
  id}``), delivered to the maintenance function now (its local schedule, if still held, is taken as fired);
  due schedules are also delivered on their own, by the runner's tick (``local.scheduler``); never deployed;
- ``POST /_alarms/{name}`` with ``{"state": "ALARM"|"OK"|"INSUFFICIENT_DATA"}`` (default ALARM): sets a state in
  the local alarm registry (local/alarms.py), creating the alarm; a change to ALARM of an alarm the stack's
  guard rule hears is delivered to the guard function as EventBridge would; ``GET /_alarms`` lists the registry;
- ``POST /_guards/{version}/close``: the guard's close payload (what its one-time schedule sends at the bake's
  end), delivered to the guard function now (its local schedule, if still held, is taken as fired);
  never deployed;
- ``POST /_throttle`` with ``{"requests": N, "retry_after": S}``: the next N requests to deployed routes answer
  what API Gateway's throttling answers (429 ``THROTTLED``, ``Retry-After: S``), to watch a client back off;
  never deployed;
- ``GET /_served``: what each of the runner's readers (the read function) served at its last read, when, and the
  item it is configured for (``{"readers": [{"function", "item", "reason", "version", "last_read_at"}]}``; version
  -1 for the declared fallbacks; an empty list before the first read): what ``flagctl set --wait`` and the "readers
  seen" check (``flagctl.readers_seen``) read locally; never deployed (a deployed stage is watched through
  CloudWatch's ServedVersion);
- ``GET /_reads``: the reads per flag the runner counted since it started, as the read function counts them
  (``GET /flags/{name}`` and ``POST /ofrep/v1/evaluate/flags/{key}`` one for the name, ``GET /flags`` and the
  bulk OFREP evaluation one for ``*``; answered reads only): ``{"since", "flags": {name: {"reads",
  "last_read_at"}}}``; what ``flagctl report`` reads locally; never deployed (a deployed stage's reads are its
  readers' ``ServedVersion`` records, ``flag_reads``);
- ``GET /_console/report?days=N``: the console's Lifecycle view (``flagctl.console_report``): ``flagctl report``
  computed in process, from the runner's declarations, history and ``GET /_reads``; never deployed (``flagctl
  console`` answers it itself);
- ``POST /_dynamodb``: DynamoDB's ``GetItem`` on the flags item, for a handler in another process reading the flags
  through the embedded client (``local.backend.TableReads``); never deployed;
- ``GET /openapi.json``; the console (``/``, ``/console/<file>``) and Swagger UI (``/docs``) as static files
  (``local.web``).

A path no route knows answers 404; a known path under another method 405 with ``Allow`` (the same answers
and codes as ``singleton_flags_service.api.http.no_route_response``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import traceback
import uuid
from http import HTTPStatus
from typing import Any, TypeGuard
from urllib.parse import unquote, urlsplit

from aws_lambda_powertools.event_handler import Response

from flagctl.client import Answer, FlagsClient, Outgoing, answer_body
from flagctl.console_report import REPORT_PATH, report_answer
from flagctl.report import runner_reads
from local.alarms import LocalAlarms, alarm_state_change, rule_matches
from local.backend import DYNAMODB_PATH, TableReads
from local.events import StreamEvents, StreamUnavailable
from local.functions import Functions
from local.gateway import Caller, HttpResponse, Request, http_response, proxy_event
from local.scheduler import LocalScheduler
from local.web import static_file
from singleton_flags_infra.config import ACTIONS, FlagsConfig, schedule_payload
from singleton_flags_service.api.http import error_body, json_response, no_route_response
from singleton_flags_service.api.routes import ROUTES, Route, RouteMatch, match_route
from singleton_flags_service.contract import GUARD_FUNCTION, HANDLERS, MAINTENANCE_FUNCTION, READ_FUNCTION
from singleton_flags_service.guards.alarms import ALARM, STATES
from singleton_flags_service.guards.writes import close_payload, close_schedule_name
from singleton_flags_service.schedules.changes import PAYLOAD_KEY, schedule_name

OPENAPI = "openapi"
SCHEDULER = "scheduler"
THROTTLE = "throttle"
EVENTS = "events"
EVENTS_PATH = "/_events"
SCHEDULED_CHANGE = "scheduled-change"
ALARMS = "alarms"
ALARM_STATE = "alarm-state"
GUARD_CLOSE = "guard-close"
SERVED = "served"
SERVED_PATH = "/_served"
READS = "reads"
READS_PATH = "/_reads"
ALL_FLAGS = "*"  # a read of every flag (singleton_flags.vocabulary.ALL_FLAGS)
SCHEDULER_PATH = "/_scheduler/{window}/{action}"
SCHEDULED_CHANGE_PATH = "/_scheduler/changes/{id}"  # static "changes" wins over {window} (routes._specificity)
THROTTLE_PATH = "/_throttle"
CONSOLE_REPORT = "console-report"
IN_PROCESS_URL = "http://127.0.0.1"  # the base of the console report's own calls, answered by handle()
LOCAL_ROUTES: tuple[Route, ...] = (
    Route("GET", "/openapi.json", OPENAPI),
    Route("POST", SCHEDULER_PATH, SCHEDULER),
    Route("POST", SCHEDULED_CHANGE_PATH, SCHEDULED_CHANGE),
    Route("POST", THROTTLE_PATH, THROTTLE),
    Route("GET", EVENTS_PATH, EVENTS),
    Route("GET", "/_alarms", ALARMS),
    Route("POST", "/_alarms/{name}", ALARM_STATE),
    Route("POST", "/_guards/{version}/close", GUARD_CLOSE),
    Route("GET", SERVED_PATH, SERVED),
    Route("GET", READS_PATH, READS),
    Route("GET", REPORT_PATH, CONSOLE_REPORT),
)
MAX_THROTTLED_REQUESTS = 1000
# The runner's header naming the caller (an IAM principal's ARN), so a test can act as another identity: set as
# the event's requestContext.identity.userArn, where API Gateway puts the SigV4 signer. Only the runner reads it:
# flagctl console's proxy drops it, and a deployed function reads the caller from the request context alone.
LOCAL_ACTOR_HEADER = "X-Local-Actor"
_LOCAL_ACTOR = re.compile(r"arn:aws[a-z-]*:(iam|sts)::[0-9]{12}:[A-Za-z0-9+=,.@_/-]{1,512}")
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


def _local_payload(body: bytes) -> Any:
    """A local-only route's JSON body (an empty one is ``{}``), or None when it is not JSON: malformed, or nested
    beyond what the parser can recurse into (RecursionError), either way the route's own 400."""
    try:
        return json.loads(body or b"{}")
    except (ValueError, RecursionError):
        return None


class LocalApi:
    def __init__(
        self,
        functions: Functions,
        config: FlagsConfig,
        openapi_document: dict[str, Any],
        *,
        caller: Caller | None = None,
        alarms: LocalAlarms | None = None,
        events: StreamEvents | None = None,
        scheduler: LocalScheduler | None = None,
        table_reads: TableReads | None = None,
    ) -> None:
        self._functions = functions
        self._table_reads = table_reads
        self._alarms = alarms or LocalAlarms()
        self._events = events
        self._scheduler = scheduler
        self._config = config
        self._openapi = json.dumps(openapi_document, indent=2).encode("utf-8")
        self._caller = caller or Caller()
        self._throttle_lock = threading.Lock()
        self._throttled_left = 0
        self._retry_after = 1
        self._last_read_at: float | None = None  # when the read function was last invoked
        self._reads_lock = threading.Lock()
        self._reads_since = time.time()
        self._reads: dict[str, dict[str, Any]] = {}  # flag (or "*") -> {"reads", "last_read_at"}

    def handle(self, request: Request) -> HttpResponse:
        """The answer to ``request``; every answer carries ``x-amzn-RequestId``, as API Gateway's do."""
        response = self._answer(request)
        if any(name.lower() == "x-amzn-requestid" for name, _ in response.headers):
            return response
        return HttpResponse(
            response.status, [*response.headers, ("x-amzn-RequestId", str(uuid.uuid4()))], response.body
        )

    def _answer(self, request: Request) -> HttpResponse:
        if self._table_reads is not None and request.raw_path.rstrip("/") == DYNAMODB_PATH and request.method == "POST":
            return HttpResponse(*self._table_reads.answer(request.headers, request.body))
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
        if found.route.function == SCHEDULED_CHANGE:
            return self._deliver_change(found.path_parameters["id"])
        if found.route.function == THROTTLE:
            return self._set_throttle(request.body)
        if found.route.function == EVENTS:
            return self._change_events()
        if found.route.function == ALARMS:
            return _json(200, {"alarms": self._alarms.all()})
        if found.route.function == ALARM_STATE:
            return self._set_alarm(unquote(found.path_parameters["name"]), request.body)
        if found.route.function == GUARD_CLOSE:
            return self._close_guard(found.path_parameters["version"])
        if found.route.function == SERVED:
            return _json(200, {"readers": self._served()})
        if found.route.function == READS:
            with self._reads_lock:
                flags = {name: dict(tally) for name, tally in self._reads.items()}
            return _json(200, {"since": self._reads_since, "flags": flags})
        if found.route.function == CONSOLE_REPORT:
            client = FlagsClient(IN_PROCESS_URL, transport=self._in_process)
            return report_answer(request.query, client, runner_reads(client), "the runner counted no reads")
        throttled = self._throttled()
        if throttled is not None:
            return throttled
        return self._proxy(request, found)

    def _in_process(self, outgoing: Outgoing) -> Answer:
        """One of the console report's calls, answered by this runner as if it had come over HTTP."""
        parts = urlsplit(outgoing.url)
        request = Request(
            outgoing.method, parts.path, parts.query, list(outgoing.headers.items()), outgoing.body or b""
        )
        response = self.handle(request)
        return Answer(
            response.status, dict(response.headers), answer_body(response.status, response.body, outgoing.url)
        )

    def _set_throttle(self, body: bytes) -> HttpResponse:
        payload = _local_payload(body)
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

    def _change_events(self) -> HttpResponse:
        if self._events is None:
            return _error(HTTPStatus.SERVICE_UNAVAILABLE, "EVENTS_UNAVAILABLE", "this runner reads no table stream")
        try:
            published = self._events.events()
        except StreamUnavailable as exc:
            return _error(HTTPStatus.SERVICE_UNAVAILABLE, "EVENTS_UNAVAILABLE", str(exc))
        return _json(200, {"events": published, "errors": list(self._events.errors)})

    def _throttled(self) -> HttpResponse | None:
        """API Gateway's THROTTLED answer (singleton_flags_infra.api's gateway response) while requests are left to
        refuse."""
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

    def _served(self) -> list[dict[str, Any]]:
        """What the read function's reader served at its last read (its counter's ``serving``) and the item it is
        configured for (its counter's ``item``, what its ServedVersion records name), if it has read."""
        module = sys.modules.get(HANDLERS[READ_FUNCTION].rpartition(".")[0])
        counter = getattr(module, "COUNTER", None)
        serving = getattr(counter, "serving", None)
        if serving is None or self._last_read_at is None:
            return []
        reason, version = serving
        reader = {"function": READ_FUNCTION, "item": getattr(counter, "item", None), "reason": reason}
        return [{**reader, "version": version, "last_read_at": self._last_read_at}]

    def _proxy(self, request: Request, match: RouteMatch) -> HttpResponse:
        request_id = str(uuid.uuid4())
        if match.route.function == READ_FUNCTION:
            self._last_read_at = time.time()
        acting = [value for name, value in request.headers if name.lower() == LOCAL_ACTOR_HEADER.lower()]
        caller = Caller(self._caller.name, request.client_ip)
        if acting:
            if len(acting) > 1 or not _LOCAL_ACTOR.fullmatch(acting[0]):
                message = f"{LOCAL_ACTOR_HEADER} must be given once, as an IAM principal's ARN (arn:aws:iam::...)"
                return _error(HTTPStatus.BAD_REQUEST, "INVALID_REQUEST", message)
            caller = Caller(acting[0].rsplit("/", 1)[-1], request.client_ip, acting[0])
        event = proxy_event(
            method=request.method,
            raw_path=request.raw_path,
            query=request.query,
            # the runner's own header: it names the caller API Gateway would report, and never reaches a function
            headers=[(name, value) for name, value in request.headers if name.lower() != LOCAL_ACTOR_HEADER.lower()],
            body=request.body,
            match=match,
            stage=self._config.stage,
            caller=caller,
            request_id=request_id,
        )
        try:
            response = http_response(self._functions.invoke(match.route.function, event, request_id))
        except Exception as exc:  # noqa: BLE001 - a Lambda error (or a malformed proxy answer) is API Gateway's 502
            return self._function_error(match.route.function, exc)
        if match.route.function == READ_FUNCTION and response.status in (200, 304):
            self._count_read(match)
        return HttpResponse(response.status, [*response.headers, ("x-amzn-RequestId", request_id)], response.body)

    def _count_read(self, match: RouteMatch) -> None:
        """One answered read: one for the flag it names, or one for ``*`` (every flag)."""
        params = match.path_parameters
        name = unquote(params.get("name") or params.get("key") or ALL_FLAGS)
        with self._reads_lock:
            tally = self._reads.setdefault(name, {"reads": 0, "last_read_at": None})
            tally["reads"] += 1
            tally["last_read_at"] = time.time()

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

    def _set_alarm(self, name: str, body: bytes) -> HttpResponse:
        payload = _local_payload(body)
        state = payload.get("state", ALARM) if isinstance(payload, dict) else None
        if state not in STATES or not 1 <= len(name) <= 255:
            return _error(
                HTTPStatus.BAD_REQUEST,
                "INVALID_REQUEST",
                f'send {{"state": one of {list(STATES)}}} (default ALARM) to /_alarms/<name of 1-255 characters>',
            )
        previous = self._alarms.set(name, state)
        answer: dict[str, Any] = {"alarm": name, "state": state, "previous": previous, "delivered": None}
        if rule_matches(name, state, previous, self._config.guard_prefix):
            event = alarm_state_change(name, state, previous, self._region)
            try:
                answer["result"] = self._functions.invoke(GUARD_FUNCTION, event)
            except Exception as exc:  # noqa: BLE001 - Lambda would retry, then the on-failure queue; we report it
                return self._function_error(GUARD_FUNCTION, exc)
            answer["delivered"] = event
        return _json(200, answer)

    def _close_guard(self, version: str) -> HttpResponse:
        if not version.isascii() or not version.isdigit() or len(version) > 12 or int(version) < 1:
            return _error(HTTPStatus.NOT_FOUND, "GUARD_NOT_FOUND", f"no guard {version!r}: a guarded version is >= 1")
        if self._scheduler is not None:
            self._scheduler.take(close_schedule_name(int(version)))  # fired: Scheduler deletes it after completion
        payload = close_payload(int(version))
        try:
            result = self._functions.invoke(GUARD_FUNCTION, payload)
        except Exception as exc:  # noqa: BLE001 - Lambda would retry, then the on-failure queue; we report it
            return self._function_error(GUARD_FUNCTION, exc)
        return _json(200, {"delivered": payload, "result": result})

    @property
    def _region(self) -> str:
        return os.environ.get("AWS_REGION", "us-east-1")

    def _deliver_change(self, schedule_id: str) -> HttpResponse:
        if self._scheduler is not None:
            self._scheduler.take(schedule_name(schedule_id))  # fired: Scheduler deletes it after completion
        payload = {PAYLOAD_KEY: schedule_id}
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
