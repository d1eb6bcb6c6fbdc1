"""API Gateway REST (v1) proxy events and the Lambda context, as ``local.gateway`` builds them for the runner.

Tests call the handlers with the very event shape the local runner sends, for an AWS_IAM-authorised method:
the route (resource and path parameters) is the one ``singleton_flags_service.api.routes`` picks, as the deployed API
does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from local.gateway import Caller, LambdaContext, proxy_event
from singleton_flags_service.api.routes import ROUTES, Route, RouteMatch, match_route

CALLER_ARN = "arn:aws:iam::123456789012:user/tester"
REQUEST_ID = "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"
FUNCTION_NAME = "singleton-flags-test"
LAMBDA_REQUEST_ID = "52fdfc07-2182-154f-163f-5f0f9a621d72"
STAGE = "prod"

Pairs = Mapping[str, str] | Iterable[tuple[str, str]]


def _pairs(values: Pairs | None) -> list[tuple[str, str]]:
    if values is None:
        return []
    return list(values.items()) if isinstance(values, Mapping) else list(values)


def rest_event(
    method: str,
    path: str,
    *,
    headers: Pairs | None = None,
    query: Pairs | None = None,
    body: Any = None,
    base64_body: bool = False,
    resource: str | None = None,
    path_parameters: dict[str, str] | None = None,
    caller_arn: str = CALLER_ARN,
) -> dict[str, Any]:
    """The proxy event for one request: headers and query given as a mapping or as (name, value) pairs (a name
    may repeat), a body as text (sent as is) or any JSON value (sent as JSON). ``resource`` and
    ``path_parameters`` override what the route table says (a route it does not know keeps the path)."""
    found = match_route(ROUTES, method, path)
    matched = found if isinstance(found, RouteMatch) else None
    route = matched.route if matched else Route(method, path, "")
    if resource is not None:
        route = route._replace(path=resource)
    if path_parameters is None:
        path_parameters = matched.path_parameters if matched else {}
    event = proxy_event(
        method=method,
        raw_path=path,
        query="",
        headers=_pairs(headers),
        body=b"",
        match=RouteMatch(route, path_parameters),
        stage=STAGE,
        caller=Caller(caller_arn.rsplit("/", 1)[-1], "192.0.2.1", caller_arn),
        request_id=REQUEST_ID,
    )
    # Query values as given, decoded already (as API Gateway delivers them), even those no URL could carry.
    query_pairs = _pairs(query)
    multi_query: dict[str, list[str]] = {}
    for name, value in query_pairs:
        multi_query.setdefault(name, []).append(value)
    event["queryStringParameters"] = dict(query_pairs) or None
    event["multiValueQueryStringParameters"] = multi_query or None
    if body is not None and not isinstance(body, str):
        body = json.dumps(body)
    event["body"] = body
    event["isBase64Encoded"] = base64_body
    return event


def invocation_context(function_name: str = FUNCTION_NAME) -> LambdaContext:
    """The Lambda context the local runner passes, with a fixed request id and a 30 s budget."""
    return LambdaContext(function_name=function_name, aws_request_id=LAMBDA_REQUEST_ID, timeout_seconds=30.0)
