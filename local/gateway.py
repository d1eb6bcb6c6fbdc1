"""The local stand-in for API Gateway (REST API, Lambda proxy integration): HTTP request <-> proxy event.

Pure functions, no sockets: ``proxy_event`` builds the event Lambda would receive for the route that
``singleton_flags_service.api.routes.match_route`` picked (the one the deployed API picks), and ``http_response`` turns
a proxy result back into status, headers and body. The server (``flagctl.http_server``, whose ``Request`` and
``HttpResponse`` these are) only moves bytes.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from flagctl.http_server import HttpResponse, Request
from singleton_flags_service.api.routes import RouteMatch

__all__ = [
    "LOCAL_ACCOUNT",
    "LOCAL_API_ID",
    "Caller",
    "HttpResponse",
    "LambdaContext",
    "MalformedProxyResponse",
    "Request",
    "http_response",
    "proxy_event",
]

LOCAL_ACCOUNT = "000000000000"
LOCAL_API_ID = "local"


def _multi(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return grouped


@dataclass(frozen=True, slots=True)
class Caller:
    """Who the local runner says is calling: a fixed local admin identity (the deployed API uses IAM).

    ``arn`` names another principal (an assumed role, another account); by default the local IAM user ``name``.
    """

    name: str = "local-admin"
    source_ip: str = "127.0.0.1"
    arn: str | None = None

    @property
    def user_arn(self) -> str:
        return self.arn or f"arn:aws:iam::{LOCAL_ACCOUNT}:user/{self.name}"


def proxy_event(
    *,
    method: str,
    raw_path: str,
    query: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    match: RouteMatch,
    stage: str,
    caller: Caller,
    request_id: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The API Gateway REST proxy event (payload format 1.0) for one request."""
    request_id = request_id or str(uuid.uuid4())
    now = time.time() if now is None else now
    path = raw_path  # a REST API delivers path and pathParameters percent-encoded, query strings decoded
    query_pairs = parse_qsl(query, keep_blank_values=True)
    single_headers = dict(headers)  # the last value wins, as in API Gateway
    user_agent = next((value for name, value in headers if name.lower() == "user-agent"), None)
    host = next((value for name, value in headers if name.lower() == "host"), "127.0.0.1")
    return {
        "resource": match.route.path,
        "path": path,
        "httpMethod": method,
        "headers": single_headers or None,
        "multiValueHeaders": _multi(headers) or None,
        "queryStringParameters": dict(query_pairs) or None,
        "multiValueQueryStringParameters": _multi(query_pairs) or None,
        "pathParameters": match.path_parameters or None,
        "stageVariables": None,
        "requestContext": {
            "resourceId": LOCAL_API_ID,
            "resourcePath": match.route.path,
            "httpMethod": method,
            "extendedRequestId": request_id,
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "path": f"/{stage}{path}",
            "accountId": LOCAL_ACCOUNT,
            "protocol": "HTTP/1.1",
            "stage": stage,
            "domainPrefix": host.split(".")[0],
            "requestTimeEpoch": int(now * 1000),
            "requestId": request_id,
            "identity": {
                "accountId": LOCAL_ACCOUNT,
                "caller": caller.name,
                "user": caller.name,
                "userArn": caller.user_arn,
                "sourceIp": caller.source_ip,
                "userAgent": user_agent,
                "accessKey": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
                "principalOrgId": None,
            },
            "domainName": host,
            "apiId": LOCAL_API_ID,
        },
        "body": body.decode("utf-8", errors="replace") if body else None,
        "isBase64Encoded": False,
    }


@dataclass
class LambdaContext:
    """What a handler reads from Lambda's context object (Powertools' inject_lambda_context included)."""

    function_name: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    memory_limit_in_mb: int = 256
    function_version: str = "$LATEST"
    timeout_seconds: float = 10.0
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:local:{LOCAL_ACCOUNT}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "local"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - (time.monotonic() - self.started)) * 1000))


class MalformedProxyResponse(ValueError):
    """The function returned something API Gateway would answer 502 for."""


def http_response(result: Any) -> HttpResponse:
    """Status, headers (``multiValueHeaders`` first, then ``headers`` not named there) and body of a result."""
    if not isinstance(result, Mapping) or isinstance(result.get("statusCode"), bool):
        raise MalformedProxyResponse(f"the function returned {type(result).__name__}, not a proxy response")
    try:
        status = int(result["statusCode"])
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedProxyResponse("the proxy response has no integer statusCode") from exc
    headers: list[tuple[str, str]] = []
    multi = result.get("multiValueHeaders") or {}
    for name, values in multi.items():
        headers.extend((name, str(value)) for value in values)
    named = {name.lower() for name in multi}
    headers.extend(
        (name, str(value)) for name, value in (result.get("headers") or {}).items() if name.lower() not in named
    )
    body = result.get("body")
    if body is None:
        payload = b""
    elif result.get("isBase64Encoded"):
        payload = base64.b64decode(body)
    else:
        payload = str(body).encode("utf-8")
    return HttpResponse(status=status, headers=headers, body=payload)
