"""ONE OpenAPI 3.1 document for every route of ``singleton_flags_service.api.routes.ROUTES``, generated, never kept by
hand.

- Write routes: the write function's own schema (``write_api.handler.app``: Powertools with pydantic models
  built from the declarations), with Powertools' 422 replaced by what the API really answers: the error
  contract of ``singleton_flags_service.api.http`` (400 for a schema violation, and 404/409/412/413/503 where they
  occur).
- Read routes: described here (the read function stays pydantic-free), reusing the ``FlagValues`` schema
  the write side derives from the same declarations.
- Error codes per status are read from the ``singleton_flags_service.errors`` classes, so a new error shows up by
itself.

The document describes the deployed API only; the local runner's own routes (``/_scheduler/...``,
``/openapi.json``, ``/docs``) are not in it. ``python -m local.openapi`` prints it.
"""

from __future__ import annotations

import copy
import json
import os
import sys
import tomllib
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

from local.functions import load_module
from local.paths import REPO_ROOT
from local.scheduler import local_one_time_environment
from singleton_flags.declarations import TYPES
from singleton_flags_service.api.ofrep import FLAG_NOT_FOUND, INVALID_CONTEXT, PARSE_ERROR, VARIANTS
from singleton_flags_service.api.routes import (
    OFREP_FLAG,
    OFREP_FLAGS,
    READ_FUNCTION,
    ROUTES,
    SCHEDULES,
    WRITE_FUNCTION,
    Route,
)
from singleton_flags_service.contract import load_service_declarations
from singleton_flags_service.errors import FlagsError
from singleton_flags_service.vocabulary import READ_REASONS

SCHEMAS = "#/components/schemas/"
RESPONSES = "#/components/responses/"
PARAMETERS = "#/components/parameters/"
NO_ROUTE_CODES = {HTTPStatus.NOT_FOUND: "NOT_FOUND", HTTPStatus.METHOD_NOT_ALLOWED: "METHOD_NOT_ALLOWED"}

RESPONSE_NAMES = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    412: "PreconditionFailed",
    413: "ItemTooLarge",
    415: "UnsupportedMediaType",  # a body that is not application/json
    422: "IdempotencyKeyReused",
    500: "InternalError",  # DynamoDB refused what no input explains: a bug, alarmed
    503: "StoreUnavailable",  # STORE_UNAVAILABLE (nothing applied) or OUTCOME_UNKNOWN
}
ERROR_DETAILS: dict[int, dict[str, Any]] = {  # the details the errors of a status carry (singleton_flags.errors)
    400: {"flag": {"type": "string"}, "rule": {"type": "string"}},
    404: {"flag": {"type": "string"}, "version": {"type": "integer"}},
    409: {"attempts": {"type": "integer"}, "retry_after": {"type": "integer"}},
    412: {"current_version": {"type": "integer"}, "flags": {"type": "object"}},
    413: {"size": {"type": "integer"}, "limit": {"type": "integer"}, "rule": {"type": "string"}},
    422: {"rule": {"type": "string"}},
    503: {"version": {"type": "integer"}},  # OUTCOME_UNKNOWN: the version the write tried to write
}
RETRY_AFTER_STATUSES = (409, 503)


def _header(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"description": description, "schema": schema or {"type": "string"}}


ETAG = _header(
    'The version of the flags, quoted: "7". Absent when fallbacks are served.',
    {"type": "string", "pattern": '^"[0-9]+"$'},
)
CACHE_CONTROL = _header("no-cache for a stored version (revalidate with If-None-Match), no-store otherwise.")
RETRY_AFTER = _header("Seconds to wait before retrying.", {"type": "string", "pattern": "^[0-9]+$"})


def error_codes() -> dict[int, list[str]]:
    """Error codes by HTTP status: every ``FlagsError`` class, plus the no-route answers of
    ``singleton_flags_service.api.http``."""
    codes: dict[int, set[str]] = {int(status): {code} for status, code in NO_ROUTE_CODES.items()}
    pending = [FlagsError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        codes.setdefault(int(cls.status), set()).add(cls.code)
    return {status: sorted(found) for status, found in sorted(codes.items())}


def _error_schema(status: int, codes: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["error"],
        "additionalProperties": False,
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "enum": codes} if codes else {"type": "string"},
                    "message": {"type": "string"},
                    **ERROR_DETAILS.get(status, {}),
                },
            }
        },
    }


def _error_response(status: int, codes: list[str]) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": HTTPStatus(status).phrase,
        "content": {"application/json": {"schema": _error_schema(status, codes)}},
    }
    headers = {}
    if status in RETRY_AFTER_STATUSES:
        headers["Retry-After"] = RETRY_AFTER
    if status == 412:
        headers["ETag"] = ETAG
    if status == 405:
        headers["Allow"] = _header("The methods the path supports.")
    if headers:
        response["headers"] = headers
    return response


def _read_schemas() -> dict[str, Any]:
    meta = {
        "version": {"type": ["integer", "null"], "description": "The stored version; null for fallbacks."},
        "reason": {
            "type": "string",
            "enum": list(READ_REASONS),
            "description": "Where the values came from (OpenFeature).",
        },
        "fetched_at": {"type": ["string", "null"], "description": "When the values were read from the table."},
        "maintenance_ended_by": {
            "type": "string",
            "enum": ["deadline"],
            "description": "Present when a maintenance window's stored deadline, not its end event, ended it.",
        },
    }
    maintenance = {
        "type": "object",
        "description": "Who holds maintenance_mode now (its effective value, as in flags).",
        "required": ["on", "held_by", "window", "deadline"],
        "additionalProperties": False,
        "properties": {
            "on": {"type": "boolean", "description": "The same as flags.maintenance_mode."},
            "held_by": {
                "type": ["string", "null"],
                "enum": ["window", "manual", None],
                "description": "window: a window holds it until its deadline; manual: on otherwise; null: off.",
            },
            "window": {"type": ["string", "null"], "description": "The holding window's name."},
            "deadline": {
                "type": ["string", "null"],
                "format": "date-time",
                "description": "When the holding window's hold ends (RFC 3339, UTC).",
            },
        },
    }
    return {
        "FlagsRead": {
            "type": "object",
            "required": ["flags", "version", "reason", "fetched_at", "maintenance"],
            "additionalProperties": False,
            "properties": {"flags": {"$ref": SCHEMAS + "FlagValues"}, **meta, "maintenance": maintenance},
        },
        "FlagRead": {
            "type": "object",
            "required": ["name", "value", "version", "reason", "fetched_at"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string"},
                "value": {"type": ["boolean", "integer", "number", "string"]},
                **meta,
            },
        },
    }


OFREP_TAG = "ofrep"
OFREP_ROUTES = (OFREP_FLAG, OFREP_FLAGS)
THROTTLED = _header(
    "Seconds to wait (delta-seconds): API Gateway's THROTTLED answer. OFREP's document says a date; the providers "
    "read both.",
    {"type": "string", "pattern": "^[0-9]+$"},
)


def _ofrep_schemas(flag_names: list[str]) -> dict[str, Any]:
    """OFREP's request and answers as this API sends them (docs/ofrep.md lists where they differ from OFREP's)."""
    details = {"type": "string", "minLength": 1, "description": "What is wrong, for logs"}
    return {
        "OfrepEvaluationRequest": {
            "type": "object",
            "description": "The evaluation context is accepted and ignored: the flags are application-wide.",
            "properties": {"context": {"type": "object", "description": "Any object; targetingKey is optional."}},
        },
        "OfrepEvaluation": {
            "type": "object",
            "required": ["key", "value", "reason", "variant", "metadata"],
            "additionalProperties": False,
            "properties": {
                "key": {"type": "string", "enum": flag_names},
                "value": {"type": ["boolean", "integer", "number", "string"]},
                "reason": {
                    "type": "string",
                    "enum": list(READ_REASONS),
                    "description": "Where the value came from, in OpenFeature's reasons (not OFREP's example list).",
                },
                "variant": {"type": "string", "enum": list(VARIANTS)},
                "metadata": {
                    "type": "object",
                    "description": "Flat: strings, numbers and booleans only.",
                    "required": ["type", "contextIgnored"],
                    "additionalProperties": False,
                    "properties": {
                        "version": {"type": "integer", "description": "The stored version; absent for fallbacks."},
                        "fetchedAt": {"type": "string", "description": "When the values were read from the table."},
                        "type": {"type": "string", "enum": sorted(TYPES)},
                        "contextIgnored": {"const": True},
                    },
                },
            },
        },
        "OfrepBulkEvaluation": {
            "type": "object",
            "required": ["flags"],
            "additionalProperties": False,
            "properties": {"flags": {"type": "array", "items": {"$ref": SCHEMAS + "OfrepEvaluation"}}},
        },
        "OfrepEvaluationFailure": {
            "type": "object",
            "required": ["key", "errorCode", "errorDetails"],
            "additionalProperties": False,
            "properties": {
                "key": {"type": "string"},
                "errorCode": {"type": "string", "enum": [PARSE_ERROR, INVALID_CONTEXT]},
                "errorDetails": details,
            },
        },
        "OfrepFlagNotFound": {
            "type": "object",
            "required": ["key", "errorCode", "errorDetails"],
            "additionalProperties": False,
            "properties": {
                "key": {"type": "string"},
                "errorCode": {"type": "string", "enum": [FLAG_NOT_FOUND]},
                "errorDetails": details,
            },
        },
        "OfrepBulkEvaluationFailure": {
            "type": "object",
            "required": ["errorCode", "errorDetails"],
            "additionalProperties": False,
            "properties": {
                "errorCode": {"type": "string", "enum": [PARSE_ERROR, INVALID_CONTEXT]},
                "errorDetails": details,
            },
        },
    }


def _json_content(schema: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": SCHEMAS + schema}}}


def _ofrep_operation(route: Route, flag_names: list[str]) -> dict[str, Any]:
    """An OFREP operation: OFREP's shapes for what the function answers, ours for API Gateway's 429."""
    one = route.path == OFREP_FLAG
    throttled = _error_response(429, ["THROTTLED"])
    throttled["headers"] = {"Retry-After": THROTTLED}
    no_store = {"Cache-Control": CACHE_CONTROL}
    responses: dict[str, Any] = {
        "200": {
            "description": "The evaluation" if one else "Every declared flag's evaluation",
            "headers": no_store if one else {"ETag": ETAG, "Cache-Control": CACHE_CONTROL},
            "content": _json_content("OfrepEvaluation" if one else "OfrepBulkEvaluation"),
        },
        "400": {
            "description": "Not an evaluation request (PARSE_ERROR), or a context that is no object (INVALID_CONTEXT)",
            "headers": no_store,
            "content": _json_content("OfrepEvaluationFailure" if one else "OfrepBulkEvaluationFailure"),
        },
        "429": throttled,
    }
    if one:
        responses["404"] = {
            "description": "No flag of that key is declared",
            "headers": no_store,
            "content": _json_content("OfrepFlagNotFound"),
        }
    else:
        responses["304"] = {
            "description": "The client's If-None-Match still holds",
            "headers": {"ETag": ETAG, "Cache-Control": CACHE_CONTROL},
        }
    parameters: list[dict[str, Any]] = (
        [
            {
                "name": "key",
                "in": "path",
                "required": True,
                "description": "A declared flag name; any other answers 404 FLAG_NOT_FOUND.",
                "schema": {"type": "string", "examples": flag_names},
            }
        ]
        if one
        else [{"$ref": PARAMETERS + "IfNoneMatch"}]
    )
    return {
        "operationId": "ofrep_evaluate_flag" if one else "ofrep_evaluate_flags",
        "tags": [OFREP_TAG],
        "parameters": parameters,
        "requestBody": {"required": False, "content": _json_content("OfrepEvaluationRequest")},
        "responses": responses,
    }


def _parameters(flag_names: list[str]) -> dict[str, Any]:
    return {
        "IfMatch": {
            "name": "If-Match",
            "in": "header",
            "required": False,
            "description": 'Write only if the flags are at this version ("7"), else 412; "*" means any version.',
            "schema": {"type": "string", "pattern": '^(\\*|"[0-9]+")$'},
        },
        "IfNoneMatch": {
            "name": "If-None-Match",
            "in": "header",
            "required": False,
            "description": 'The ETag the client holds ("7"): 304 while the flags are still at that version.',
            "schema": {"type": "string", "pattern": '^(\\*|(W/)?"[0-9]+"(, ?(W/)?"[0-9]+")*)$'},
        },
        "FlagName": {
            "name": "name",
            "in": "path",
            "required": True,
            "description": "A declared flag name; any other name answers 404.",
            "schema": {"type": "string", "examples": flag_names},
        },
    }


def _read_operation(method: str, path: str) -> dict[str, Any]:
    one = "{name}" in path
    ok_headers = {"ETag": ETAG, "Cache-Control": CACHE_CONTROL}
    operation: dict[str, Any] = {
        "operationId": "get_flag" if one else "get_flags",
        "tags": [READ_FUNCTION],
        "parameters": [{"$ref": PARAMETERS + "IfNoneMatch"}],
        "responses": {
            "200": {
                "description": "The flag" if one else "The flags",
                "headers": ok_headers,
                "content": {"application/json": {"schema": {"$ref": SCHEMAS + ("FlagRead" if one else "FlagsRead")}}},
            },
            "304": {"description": "The client's If-None-Match still holds", "headers": ok_headers},
        },
    }
    if one:
        operation["parameters"].insert(0, {"$ref": PARAMETERS + "FlagName"})
    return operation


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, null]`` of an optional parameter -> X (a parameter is absent, never null)."""
    branches = schema.get("anyOf")
    if branches and len(branches) == 2 and {"type": "null"} in branches:
        kept = next(branch for branch in branches if branch != {"type": "null"})
        return {**{k: v for k, v in schema.items() if k != "anyOf"}, **kept}
    return schema


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


_PYDANTIC_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _fix_bounds(schemas: dict[str, Any]) -> None:
    """pydantic leaves ge/le of a union field (float|int) as unknown keywords: make them JSON Schema."""
    for node in _walk(schemas):
        for pydantic_key, json_key in _PYDANTIC_BOUNDS.items():
            if pydantic_key in node and isinstance(node[pydantic_key], (int, float)) and "anyOf" in node:
                node[json_key] = node.pop(pydantic_key)


def _write_operation(method: str, path: str, generated: dict[str, Any]) -> dict[str, Any]:
    operation = copy.deepcopy(generated)
    operation["tags"] = [WRITE_FUNCTION]
    parameters: list[dict[str, Any]] = []
    for parameter in operation.get("parameters", []):
        if parameter.get("in") == "header" and parameter.get("name", "").lower() == "if-match":
            parameters.append({"$ref": PARAMETERS + "IfMatch"})
        else:
            parameters.append({**parameter, "schema": _without_null(parameter["schema"])})
    if parameters:
        operation["parameters"] = parameters
    responses = {status: answer for status, answer in operation["responses"].items() if status != "422"}
    ok = responses["201"] if "201" in responses else responses["200"]
    if path.startswith(SCHEDULES):  # a scheduled change is no version of the flags: no ETag
        ok["headers"] = {"Cache-Control": CACHE_CONTROL}
    elif method != "GET":
        ok["headers"] = {"ETag": ETAG, "Cache-Control": CACHE_CONTROL}
    operation["responses"] = responses
    return operation


def _referenced(document: dict[str, Any]) -> set[str]:
    """Names of the component schemas reachable from the paths (so the generated leftovers can go)."""
    schemas = document["components"]["schemas"]
    seen: set[str] = set()
    pending = [
        document["paths"],
        document["components"].get("responses", {}),
        document["components"].get("parameters", {}),
    ]
    while pending:
        for node in _walk(pending.pop()):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(SCHEMAS) and ref[len(SCHEMAS) :] not in seen:
                seen.add(ref[len(SCHEMAS) :])
                pending.append(schemas[ref[len(SCHEMAS) :]])
    return seen


def _project_version() -> str:
    with (REPO_ROOT / "pyproject.toml").open("rb") as file:
        version: str = tomllib.load(file)["project"]["version"]
    return version


def build_document(
    write_app: Any, flag_names: list[str], *, server_url: str | None = None, stage: str = "prod"
) -> dict[str, Any]:
    """The API's OpenAPI document. ``write_app`` is the write function's Powertools resolver."""
    generated = json.loads(write_app.get_openapi_json_schema(title="singleton-flags", version=_project_version()))
    schemas = {
        name: schema
        for name, schema in generated["components"]["schemas"].items()
        if name not in {"HTTPValidationError", "ValidationError", "ResponseValidationError"}
    }
    _fix_bounds(schemas)
    schemas.update(_read_schemas())
    schemas.update(_ofrep_schemas(flag_names))
    codes = error_codes()
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        method = route.method.lower()
        if route.path in OFREP_ROUTES:
            operation = _ofrep_operation(route, flag_names)
            operation["summary"] = route.summary
            paths.setdefault(route.path, {})[method] = operation
            continue
        if route.function == READ_FUNCTION:
            operation = _read_operation(route.method, route.path)
        else:
            operation = _write_operation(route.method, route.path, generated["paths"][route.path][method])
        operation["summary"] = route.summary or f"{route.method} {route.path}"
        for status in route.errors:
            operation["responses"][str(status)] = {"$ref": RESPONSES + RESPONSE_NAMES[status]}
        paths.setdefault(route.path, {})[method] = operation
    servers: list[dict[str, Any]] = (
        [{"url": server_url, "description": "The local runner (no signature needed)"}] if server_url else []
    )
    servers.append(
        {
            "url": "https://{restApiId}.execute-api.{region}.amazonaws.com/{stage}",
            "description": "The deployed API (AWS_IAM: requests are signed with SigV4 for execute-api)",
            "variables": {
                "restApiId": {"default": "abcdef1234", "description": "The RestApi id (stack output)"},
                "region": {"default": "us-east-1"},
                "stage": {"default": stage},
            },
        }
    )
    document = {
        "openapi": generated["openapi"],
        "info": {
            "title": "singleton-flags",
            "version": generated["info"]["version"],
            "description": (
                "Application-wide flags kept in ONE DynamoDB item. Every method is AWS_IAM-authorised "
                '(SigV4, service execute-api). ETag is the quoted version ("7"): send it back as If-None-Match '
                "for 304, or as If-Match to make a write conditional (412 when stale). Errors are "
                '{"error": {"code", "message", ...}}. A method a path does not support answers 405 with Allow, '
                "an unknown path 404."
            ),
        },
        "servers": servers,
        "tags": [
            {"name": READ_FUNCTION, "description": "Served by the read function (GetItem through a cache)"},
            {"name": WRITE_FUNCTION, "description": "Served by the write function (admin)"},
            {
                "name": OFREP_TAG,
                "description": "The OpenFeature Remote Evaluation Protocol, served by the read function: any "
                "OpenFeature SDK's OFREP provider reads the flags (docs/ofrep.md)",
            },
        ],
        "security": [{"sigv4": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "parameters": _parameters(flag_names),
            "responses": {
                RESPONSE_NAMES[status]: _error_response(status, codes.get(status, []))
                for status in sorted(RESPONSE_NAMES)
            },
            "securitySchemes": {
                "sigv4": {
                    "type": "apiKey",
                    "name": "Authorization",
                    "in": "header",
                    "description": (
                        "AWS Signature Version 4 for the service execute-api (x-amazon-apigateway-authtype)."
                    ),
                    "x-amazon-apigateway-authtype": "awsSigv4",
                }
            },
        },
    }
    kept = _referenced(document)
    document["components"]["schemas"] = {name: schema for name, schema in schemas.items() if name in kept}
    return document


def operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    """(METHOD, path) of every operation in the document."""
    methods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item if method in methods}


def main() -> int:
    """Print the document (the functions' environment gets local defaults, as in the runner)."""
    for key, value in {
        "TABLE_NAME": "singleton-flags-local",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "1",
        **local_one_time_environment("us-east-1"),
    }.items():
        os.environ.setdefault(key, value)

    app = load_module("singleton_flags_service.handlers.write_api").app

    print(json.dumps(build_document(app, list(load_service_declarations())), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
