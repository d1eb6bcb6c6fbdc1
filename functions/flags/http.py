"""HTTP shapes shared by the API functions: ETags, JSON bodies, and the ONE error -> response mapping.

Errors are ``{"error": {"code": CODE, "message": TEXT, ...details}}``. Only the Powertools response type
is imported here, so the read function stays lean.
"""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import Response

from flags.errors import FlagsError
from flags.routes import ROUTES, resource_routes

JSON = "application/json"
_ENTITY_TAG = re.compile(r'\s*(?:W/)?"([^"]*)"\s*(?:,|$)')


def format_etag(version: int) -> str:
    return f'"{version}"'


def parse_entity_tags(header: str | None) -> set[str] | None:
    """The opaque tags of an If-Match / If-None-Match header ({"*"} for a wildcard), None when absent."""
    if header is None or not header.strip():
        return None
    if header.strip() == "*":
        return {"*"}
    return {match.group(1) for match in _ENTITY_TAG.finditer(header)}


def json_response(status: HTTPStatus, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=int(status),
        content_type=JSON,
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False),
        headers=headers or {},
    )


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def error_response(error: FlagsError) -> Response:
    return json_response(error.status, error_body(error.code, error.message, **error.details), error.headers())


def allowed_methods(path: str) -> list[str]:
    """Methods the API serves on ``path`` (any function): those of the resource API Gateway picks for it."""
    return sorted({match.route.method for match in resource_routes(ROUTES, path)})


def no_route_response(method: str, path: str) -> Response:
    """405 (with Allow) when the path exists under another method, else 404."""
    allowed = allowed_methods(path)
    if allowed and method not in allowed:
        return json_response(
            HTTPStatus.METHOD_NOT_ALLOWED,
            error_body("METHOD_NOT_ALLOWED", f"{method} is not supported on {path}; use {', '.join(allowed)}"),
            {"Allow": ", ".join(allowed)},
        )
    return json_response(HTTPStatus.NOT_FOUND, error_body("NOT_FOUND", f"no route for {method} {path}"))
