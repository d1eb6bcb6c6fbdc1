"""ONE OpenAPI 3.1 document for every route of ``singleton_flags_service.api.routes.ROUTES``, generated from the
service's own types, never kept by hand.

- Write routes: the write function's own schema (its Powertools resolver, with the pydantic models built from
  the declarations), with Powertools' 422 replaced by what the API really answers: the error contract of
  ``singleton_flags_service.api.http`` (400 for a schema violation, and 404/409/412/413/503 where they occur).
- Read and OFREP routes: their answers' typed dicts (``api.http.FlagsRead``, ``api.ofrep.OfrepEvaluation``, ...),
  which the read function builds its bodies as, turned into JSON Schema here by pydantic. Each field's docstring
  is its description; the declarations fill what depends on them (the flags' values, the flag names).
- Error answers: the codes of each status and the details they carry, read from the ``FlagsError`` classes
  (``status``, ``code``, ``detail_types``), so a new error or detail shows up by itself.

Generation only: neither function imports this module (pydantic here runs when the document is made; the read
function stays pydantic-free). The document describes the deployed API; the local runner's own routes are not in
it.
"""

import ast
import copy
import importlib.metadata
import inspect
import itertools
import json
import textwrap
from collections.abc import Iterator, Mapping
from http import HTTPStatus
from typing import Any, NamedTuple, get_args, get_type_hints

from pydantic import ConfigDict, TypeAdapter
from typing_extensions import is_typeddict

from singleton_flags_service.api.http import FlagRead, FlagsRead
from singleton_flags_service.api.ofrep import (
    OfrepBulkEvaluation,
    OfrepBulkEvaluationFailure,
    OfrepEvaluation,
    OfrepEvaluationFailure,
    OfrepEvaluationRequest,
    OfrepFlagNotFound,
)
from singleton_flags_service.api.routes import (
    GET_FLAG,
    GET_FLAGS,
    OFREP_EVALUATE_FLAG,
    OFREP_EVALUATE_FLAGS,
    ROUTES,
    SCHEDULES,
    Route,
)
from singleton_flags_service.contract import READ_FUNCTION, WRITE_FUNCTION
from singleton_flags_service.errors import FlagsError

DISTRIBUTION = "singleton-flags-service"  # the document's version is this distribution's
SCHEMAS = "#/components/schemas/"
RESPONSES = "#/components/responses/"
PARAMETERS = "#/components/parameters/"
NO_ROUTE_CODES = {HTTPStatus.NOT_FOUND: "NOT_FOUND", HTTPStatus.METHOD_NOT_ALLOWED: "METHOD_NOT_ALLOWED"}

RESPONSE_NAMES = {
    400: "BadRequest",
    403: "Forbidden",  # a protected flag: approvals, break-glass, the author or an approver only
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
RETRY_AFTER_STATUSES = (409, 503)


class ReadOperation(NamedTuple):
    """A read route as the document describes it: its operation id, its answer, its failures' OFREP shapes."""

    operation_id: str
    answer: type
    description: str
    failures: Mapping[int, tuple[type, str]] = {}


READ_OPERATIONS = {
    GET_FLAGS: ReadOperation("get_flags", FlagsRead, "The flags"),
    GET_FLAG: ReadOperation("get_flag", FlagRead, "The flag"),
    OFREP_EVALUATE_FLAG: ReadOperation(
        "ofrep_evaluate_flag",
        OfrepEvaluation,
        "The evaluation",
        {
            400: (
                OfrepEvaluationFailure,
                "Not an evaluation request (PARSE_ERROR), or a context that is no object (INVALID_CONTEXT)",
            ),
            404: (OfrepFlagNotFound, "No flag of that key is declared"),
        },
    ),
    OFREP_EVALUATE_FLAGS: ReadOperation(
        "ofrep_evaluate_flags",
        OfrepBulkEvaluation,
        "Every declared flag's evaluation",
        {
            400: (
                OfrepBulkEvaluationFailure,
                "Not an evaluation request (PARSE_ERROR), or a context that is no object (INVALID_CONTEXT)",
            )
        },
    ),
}
OFREP_ROUTES = (OFREP_EVALUATE_FLAG, OFREP_EVALUATE_FLAGS)
OFREP_REQUEST = OfrepEvaluationRequest
OFREP_TAG = "ofrep"


def _header(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"description": description, "schema": schema or {"type": "string"}}


ETAG = _header(
    'The version of the flags, quoted: "7". Absent when fallbacks are served.',
    {"type": "string", "pattern": '^"[0-9]+"$'},
)
CACHE_CONTROL = _header("no-cache for a stored version (revalidate with If-None-Match), no-store otherwise.")
RETRY_AFTER = _header("Seconds to wait before retrying.", {"type": "string", "pattern": "^[0-9]+$"})
THROTTLED = _header(
    "Seconds to wait (delta-seconds): API Gateway's THROTTLED answer. OFREP's document says a date; the providers "
    "read both.",
    {"type": "string", "pattern": "^[0-9]+$"},
)


def _error_classes() -> Iterator[type[FlagsError]]:
    pending = [FlagsError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        yield cls


def error_codes() -> dict[int, list[str]]:
    """Error codes by HTTP status: every ``FlagsError`` class, plus the no-route answers of
    ``singleton_flags_service.api.http``."""
    codes: dict[int, set[str]] = {int(status): {code} for status, code in NO_ROUTE_CODES.items()}
    for cls in _error_classes():
        codes.setdefault(int(cls.status), set()).add(cls.code)
    return {status: sorted(found) for status, found in sorted(codes.items())}


def error_details() -> dict[int, dict[str, Any]]:
    """The details the errors of each status may carry, as JSON Schema: every ``FlagsError`` class's
    ``detail_types``. Two classes of one status giving a detail different types is a contradiction: refused."""
    types: dict[int, dict[str, Any]] = {}
    for cls in sorted(_error_classes(), key=lambda found: found.__qualname__):
        of_status = types.setdefault(int(cls.status), {})
        for name, detail_type in cls.detail_types.items():
            if of_status.setdefault(name, detail_type) != detail_type:
                raise TypeError(f"the detail {name!r} of status {int(cls.status)} has two types: {cls.__name__}'s")
    return {
        status: {name: TypeAdapter(detail_type).json_schema() for name, detail_type in sorted(found.items())}
        for status, found in sorted(types.items())
    }


def _error_schema(codes: list[str], details: dict[str, Any]) -> dict[str, Any]:
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
                    **details,
                },
            }
        },
    }


def _error_response(status: int, codes: list[str], details: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": HTTPStatus(status).phrase,
        "content": {"application/json": {"schema": _error_schema(codes, details)}},
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


def _field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal under it) by field, its bases' fields included."""
    docs: dict[str, str] = {}
    for base in getattr(cls, "__orig_bases__", ()):
        if is_typeddict(base):
            docs.update(_field_docs(base))
    (definition,) = ast.parse(textwrap.dedent(inspect.getsource(cls))).body
    if not isinstance(definition, ast.ClassDef):
        raise TypeError(f"{cls.__name__} is not defined by a class statement")
    for field, after in itertools.pairwise(definition.body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[field.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _typed_dicts(annotation: Any) -> Iterator[type]:
    """Every typed dict ``annotation`` is or holds, itself first."""
    if is_typeddict(annotation):
        yield annotation
        for hint in get_type_hints(annotation).values():
            yield from _typed_dicts(hint)
    else:
        for argument in get_args(annotation):
            yield from _typed_dicts(argument)


def read_schemas(flag_names: list[str]) -> dict[str, Any]:
    """The read and OFREP answers' schemas (closed objects) and OFREP's request's (open: a context may hold
    anything), from their typed dicts; the declarations decide the flags' values and the flag names."""
    answers = [operation.answer for operation in READ_OPERATIONS.values()]
    answers += [failure for operation in READ_OPERATIONS.values() for failure, _ in operation.failures.values()]
    closed = TypeAdapter(tuple[*answers], config=ConfigDict(extra="forbid"))  # type: ignore[valid-type]
    _, generated = TypeAdapter.json_schemas(
        [("answers", "serialization", closed), ("request", "validation", TypeAdapter(list[OFREP_REQUEST]))],
        ref_template=SCHEMAS + "{model}",
    )
    schemas: dict[str, Any] = generated["$defs"]
    for typed in {typed for annotation in (*answers, OFREP_REQUEST) for typed in _typed_dicts(annotation)}:
        for field, doc in _field_docs(typed).items():
            schemas[typed.__name__]["properties"][field]["description"] = doc
    schemas[FlagsRead.__name__]["properties"]["flags"] = {"$ref": SCHEMAS + "FlagValues"}  # the write side's
    schemas[OfrepEvaluation.__name__]["properties"]["key"]["enum"] = flag_names
    return schemas


def _json_content(schema: type) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": SCHEMAS + schema.__name__}}}


def _name_parameter(route: Route, flag_names: list[str]) -> list[dict[str, Any]]:
    if route == GET_FLAG:
        return [{"$ref": PARAMETERS + "FlagName"}]
    if route == OFREP_EVALUATE_FLAG:
        return [
            {
                "name": "key",
                "in": "path",
                "required": True,
                "description": "A declared flag name; any other answers 404 FLAG_NOT_FOUND.",
                "schema": {"type": "string", "examples": flag_names},
            }
        ]
    return []


def _read_operation(route: Route, flag_names: list[str]) -> dict[str, Any]:
    """A read route's operation: its answer (304 while If-None-Match holds, but for one OFREP evaluation, which
    is no-store); an OFREP route's failures in OFREP's shapes, and API Gateway's 429 in ours."""
    described = READ_OPERATIONS[route]
    revalidates = route != OFREP_EVALUATE_FLAG
    ok_headers = {"ETag": ETAG, "Cache-Control": CACHE_CONTROL} if revalidates else {"Cache-Control": CACHE_CONTROL}
    responses: dict[str, Any] = {
        "200": {"description": described.description, "headers": ok_headers, "content": _json_content(described.answer)}
    }
    if revalidates:
        responses["304"] = {"description": "The client's If-None-Match still holds", "headers": ok_headers}
    for status, (failure, description) in described.failures.items():
        responses[str(status)] = {
            "description": description,
            "headers": {"Cache-Control": CACHE_CONTROL},
            "content": _json_content(failure),
        }
    parameters = _name_parameter(route, flag_names)
    if revalidates:
        parameters.append({"$ref": PARAMETERS + "IfNoneMatch"})
    operation: dict[str, Any] = {
        "operationId": described.operation_id,
        "tags": [OFREP_TAG if route in OFREP_ROUTES else READ_FUNCTION],
        "parameters": parameters,
        "responses": responses,
    }
    if route in OFREP_ROUTES:
        operation["requestBody"] = {"required": False, "content": _json_content(OFREP_REQUEST)}
        throttled = _error_response(429, ["THROTTLED"], {})
        throttled["headers"] = {"Retry-After": THROTTLED}
        responses["429"] = throttled
    return operation


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


def _write_operation(route: Route, generated: dict[str, Any]) -> dict[str, Any]:
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
    ok = responses[str(route.success)]
    if route.path.startswith(SCHEDULES):  # a scheduled change is no version of the flags: no ETag
        ok["headers"] = {"Cache-Control": CACHE_CONTROL}
    elif route.method != "GET":
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


def _servers(server_url: str | None, stage: str) -> list[dict[str, Any]]:
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
    return servers


def build_document(
    write_app: Any, flag_names: list[str], *, server_url: str | None = None, stage: str = "prod"
) -> dict[str, Any]:
    """The API's OpenAPI document. ``write_app`` is the write function's Powertools resolver."""
    version = importlib.metadata.version(DISTRIBUTION)
    generated = json.loads(write_app.get_openapi_json_schema(title="singleton-flags", version=version))
    schemas = {
        name: schema
        for name, schema in generated["components"]["schemas"].items()
        if name not in {"HTTPValidationError", "ValidationError", "ResponseValidationError"}
    }
    _fix_bounds(schemas)
    for name, schema in read_schemas(flag_names).items():
        if name in schemas:
            raise TypeError(f"two schemas named {name!r}: a read answer and a write model")
        schemas[name] = schema
    codes, details = error_codes(), error_details()
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        method = route.method.lower()
        if route.function == READ_FUNCTION:
            operation = _read_operation(route, flag_names)
        else:
            operation = _write_operation(route, generated["paths"][route.path][method])
        operation["summary"] = route.summary or f"{route.method} {route.path}"
        for status in route.errors:
            if str(status) not in operation["responses"]:  # an OFREP failure keeps OFREP's shape
                operation["responses"][str(status)] = {"$ref": RESPONSES + RESPONSE_NAMES[status]}
        paths.setdefault(route.path, {})[method] = operation
    document = {
        "openapi": generated["openapi"],
        "info": {
            "title": "singleton-flags",
            "version": version,
            "description": (
                "Application-wide flags kept in ONE DynamoDB item. Every method is AWS_IAM-authorised "
                '(SigV4, service execute-api). ETag is the quoted version ("7"): send it back as If-None-Match '
                "for 304, or as If-Match to make a write conditional (412 when stale). Errors are "
                '{"error": {"code", "message", ...}}. A method a path does not support answers 405 with Allow, '
                "an unknown path 404."
            ),
        },
        "servers": _servers(server_url, stage),
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
                RESPONSE_NAMES[status]: _error_response(status, codes.get(status, []), details.get(status, {}))
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
