"""The one OpenAPI document (singleton_flags_service.api.openapi) and the route table must agree, and the document
must be valid.

The fuzz tier (tests/e2e/test_fuzz_api.py) then holds every real answer to this document.
"""

from __future__ import annotations

import ast
import copy
import functools
from typing import Any

import pytest
import schemathesis

from local.functions import load_module
from local.paths import REPO_ROOT
from singleton_flags.declarations import Declarations
from singleton_flags_service.api.http import FlagRead, FlagsRead
from singleton_flags_service.api.ofrep import OfrepEvaluation
from singleton_flags_service.api.openapi import RESPONSE_NAMES, build_document, error_codes, operations
from singleton_flags_service.api.routes import OFREP_FLAG, OFREP_FLAGS, ROUTES
from singleton_flags_service.contract import READ_FUNCTION, WRITE_FUNCTION
from singleton_flags_service.errors import FlagsError, WriteConflict


@pytest.fixture
def write_app() -> Any:
    # module scope needs TABLE_NAME and a region: set by aws_env
    return load_module("singleton_flags_service.handlers.write_api").app


@functools.cache
def _built(names: tuple[str, ...]) -> dict[str, Any]:
    app = load_module("singleton_flags_service.handlers.write_api").app
    return build_document(app, list(names), server_url="http://127.0.0.1:3000")


@pytest.fixture
def document(aws_env: None, declarations: Declarations) -> dict[str, Any]:
    """The document as the write function serves it: built once, each test given its own copy."""
    return copy.deepcopy(_built(tuple(declarations)))


def _operation(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    return document["paths"][path][method.lower()]


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        *_, section, name = node["$ref"].split("/")
        node = document["components"][section][name]
    return node


def _values(schema: dict[str, Any]) -> list[Any]:
    """The values a schema allows: its enum, or its one const."""
    return list(schema["enum"]) if "enum" in schema else [schema["const"]]


def test_the_document_has_exactly_the_operations_of_the_route_table(document):
    # Then: nothing missing, nothing extra (the runner's /_scheduler, /openapi.json, /docs are not deployed)
    assert operations(document) == {(route.method, route.path) for route in ROUTES}


def test_the_document_is_a_valid_openapi_3_1_document(document):
    schema = schemathesis.openapi.from_dict(document)
    schema.validate()  # raises on a document that breaks the OpenAPI meta-schema
    assert document["openapi"].startswith("3.1")


def test_each_operation_documents_the_statuses_its_function_answers(document):
    for route in ROUTES:
        responses = _operation(document, route.method, route.path)["responses"]
        revalidates = route.function == READ_FUNCTION and route.path != OFREP_FLAG  # one OFREP evaluation: no 304
        expected = {str(route.success), "304"} if revalidates else {str(route.success)}
        expected |= {str(status) for status in route.errors}
        if route.path in (OFREP_FLAG, OFREP_FLAGS):
            expected.add("429")  # API Gateway's THROTTLED, with Retry-After: what the OFREP providers back off on
        assert set(responses) == expected, f"{route.method} {route.path}"
        # Powertools' default 422 for a validation failure is mapped to 400; only a reused Idempotency-Key is 422
        takes_a_key = (route.method, route.path) in {
            ("PATCH", "/flags"),
            ("POST", "/flags/revert"),
            ("POST", "/flags/restore"),
            ("POST", "/flags/schedules"),
            ("POST", "/flags/change-requests"),
            ("POST", "/flags/change-requests/{id}/approve"),
        }
        assert ("422" in responses) is takes_a_key


def test_every_error_answer_is_the_error_contract_with_the_codes_of_its_status(document):
    codes = error_codes()
    for status, name in RESPONSE_NAMES.items():
        schema = document["components"]["responses"][name]["content"]["application/json"]["schema"]
        error = schema["properties"]["error"]
        assert schema["required"] == ["error"] and error["required"] == ["code", "message"]
        assert error["properties"]["code"].get("enum", []) == codes.get(status, [])


def test_the_error_codes_come_from_the_domain_errors():
    codes = error_codes()
    pending = [FlagsError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        assert cls.code in codes[int(cls.status)], cls.__name__
    assert "NOT_FOUND" in codes[404] and codes[405] == ["METHOD_NOT_ALLOWED"]


def test_the_flag_values_schema_is_the_declarations(document, declarations):
    values = document["components"]["schemas"]["FlagValues"]
    assert set(values["properties"]) == set(values["required"]) == set(declarations)
    changes = document["components"]["schemas"]["FlagChanges"]
    float_flags = [spec for spec in declarations.values() if spec.type == "float" and spec.minimum is not None]
    for spec in float_flags:  # pydantic's ge/le on a float|int union are turned into JSON Schema bounds
        assert changes["properties"][spec.name]["minimum"] == spec.minimum
        assert "ge" not in changes["properties"][spec.name]


def test_read_routes_are_described_without_the_read_function(document, declarations):
    flags = _operation(document, "GET", "/flags")
    one = _operation(document, "GET", "/flags/{name}")
    assert flags["tags"] == one["tags"] == [READ_FUNCTION]
    assert set(_resolve(document, flags["responses"]["200"]["content"]["application/json"]["schema"])["required"]) == {
        "flags",
        "version",
        "reason",
        "fetched_at",
        "maintenance",
    }
    name = _resolve(document, one["parameters"][0])
    assert name["in"] == "path" and name["schema"]["examples"] == list(declarations)
    for operation in (flags, one):
        assert "ETag" in operation["responses"]["200"]["headers"]
        assert _resolve(document, operation["parameters"][-1])["name"] == "If-None-Match"


def test_writes_take_if_match_and_answer_an_etag(document):
    for method, path in (("PATCH", "/flags"), ("POST", "/flags/revert")):
        operation = _operation(document, method, path)
        assert [_resolve(document, p)["name"] for p in operation["parameters"]] == ["If-Match"]
        assert "ETag" in operation["responses"]["200"]["headers"]
        assert operation["requestBody"]["required"] is True


def test_the_local_runner_is_the_first_server_and_the_deployed_api_the_second(document):
    assert document["servers"][0]["url"] == "http://127.0.0.1:3000"
    assert "execute-api" in document["servers"][1]["url"]
    assert document["components"]["securitySchemes"]["sigv4"]["x-amazon-apigateway-authtype"] == "awsSigv4"


def test_the_ofrep_operations_answer_in_ofreps_shapes(document):
    # Given the two OFREP operations
    one = _operation(document, "POST", OFREP_FLAG)["responses"]
    bulk = _operation(document, "POST", OFREP_FLAGS)["responses"]

    def schema(response: dict[str, Any]) -> dict[str, Any]:
        return _resolve(document, _resolve(document, response)["content"]["application/json"]["schema"])

    # Then evaluations and failures are OFREP's objects, not the {"error"} contract
    assert set(schema(one["200"])["required"]) == {"key", "value", "reason", "variant", "metadata"}
    assert _values(schema(one["404"])["properties"]["errorCode"]) == ["FLAG_NOT_FOUND"]
    assert set(_values(schema(one["400"])["properties"]["errorCode"])) == {"PARSE_ERROR", "INVALID_CONTEXT"}
    assert schema(bulk["200"])["properties"]["flags"]["items"] == {"$ref": "#/components/schemas/OfrepEvaluation"}
    assert "key" not in schema(bulk["400"])["required"]
    # and API Gateway's throttling keeps our shape, with Retry-After in delta-seconds
    assert schema(one["429"])["required"] == ["error"]
    assert one["429"]["headers"]["Retry-After"]["schema"]["pattern"] == "^[0-9]+$"
    assert "ETag" in bulk["200"]["headers"] and "304" in bulk


def test_the_console_routes_are_write_operations_with_their_answers(document):
    # GET /flags/declarations and GET /flags/windows: the write function's, each 200 with its model
    declarations = _operation(document, "GET", "/flags/declarations")
    windows = _operation(document, "GET", "/flags/windows")
    assert declarations["tags"] == windows["tags"] == [WRITE_FUNCTION]
    listing = _resolve(document, declarations["responses"]["200"]["content"]["application/json"]["schema"])
    entry = _resolve(document, listing["properties"]["declarations"]["items"])
    assert {"name", "type", "initial", "fallback", "description"} <= set(entry["required"])
    assert not {"min", "max", "enum", "max_length"} & set(entry["required"])
    answer = _resolve(document, windows["responses"]["200"]["content"]["application/json"]["schema"])
    window = _resolve(document, answer["properties"]["windows"]["items"])
    assert set(window["required"]) == {
        "name",
        "start",
        "end",
        "timezone",
        "next_start",
        "next_end",
        "next_start_utc",
        "next_end_utc",
    }


def test_the_migration_routes_are_write_operations_with_their_answers(document):
    # GET /flags/migration answers the record, POST /flags/migration 201 what it wrote, finalise the record
    shown = _operation(document, "GET", "/flags/migration")
    migrate = _operation(document, "POST", "/flags/migration")
    finalise = _operation(document, "POST", "/flags/migration/finalise")
    assert shown["tags"] == migrate["tags"] == finalise["tags"] == [WRITE_FUNCTION]
    assert set(shown["responses"]) == {"200", "404", "500", "503"}
    answer = _resolve(document, shown["responses"]["200"]["content"]["application/json"]["schema"])
    record = _resolve(document, answer["properties"]["migration"])
    assert {"source", "target", "state", "migrated_at", "mapping", "actor", "reason"} <= set(record["required"])
    assert _values(record["properties"]["state"]) == ["expanding", "finalised", "rolled_back"]
    rollback = _operation(document, "POST", "/flags/migration/rollback")
    assert rollback["tags"] == [WRITE_FUNCTION] and "200" in rollback["responses"]
    result = _resolve(document, migrate["responses"]["201"]["content"]["application/json"]["schema"])
    assert set(result["required"]) == {"migration", "version", "item", "flags", "v1_reader_fallbacks", "attempts"}
    # And the request takes the new declarations, the mapping and a reason: the dry run is flagctl's, not a field
    body = _resolve(document, migrate["requestBody"]["content"]["application/json"]["schema"])
    assert set(body["required"]) == set(body["properties"]) == {"declarations", "mapping", "reason"}
    reason = _resolve(document, finalise["requestBody"]["content"]["application/json"]["schema"])
    assert set(reason["properties"]) == {"reason"}


def test_get_flags_documents_the_maintenance_holder(document):
    flags = _operation(document, "GET", "/flags")
    schema = _resolve(document, flags["responses"]["200"]["content"]["application/json"]["schema"])
    maintenance = _resolve(document, schema["properties"]["maintenance"])
    assert maintenance["required"] == ["on", "held_by", "window", "deadline"]
    assert maintenance["properties"]["held_by"]["enum"] == ["window", "manual", None]


def test_a_new_detail_on_an_error_class_shows_up_in_the_document_by_itself(
    write_app: Any, declarations: Declarations, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a 409 error class that now carries one more detail
    monkeypatch.setattr(WriteConflict, "detail_types", {**WriteConflict.detail_types, "holder": str})
    # When the document is generated
    document = build_document(write_app, list(declarations))
    # Then the 409 answer's error lists it, with its type, beside the details it had
    error = document["components"]["responses"]["Conflict"]["content"]["application/json"]["schema"]
    details = error["properties"]["error"]["properties"]
    assert details["holder"] == {"type": "string"}
    assert details["attempts"] == details["retry_after"] == {"type": "integer"}


def _error_classes() -> dict[str, type[FlagsError]]:
    found: dict[str, type[FlagsError]] = {}
    pending = [FlagsError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        found[cls.__name__] = cls
    return found


def test_every_detail_an_error_is_raised_with_is_declared_on_its_class() -> None:
    # Given every call of an error class in the client's and the service's sources
    classes = _error_classes()
    undeclared = []
    for root in (REPO_ROOT / "client" / "src", REPO_ROOT / "functions"):
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name not in classes:
                    continue
                # Then each detail it passes is one its class declares (the document lists no other)
                undeclared += [
                    f"{path.relative_to(REPO_ROOT)}:{node.lineno} {name}({keyword.arg}=)"
                    for keyword in node.keywords
                    if keyword.arg is not None and keyword.arg not in classes[name].detail_types
                ]
    assert undeclared == []


def test_the_read_answers_are_their_typed_dicts(document: dict[str, Any]) -> None:
    # Given the typed dicts the read function builds its answers as
    for typed in (FlagsRead, FlagRead, OfrepEvaluation):
        schema = document["components"]["schemas"][typed.__name__]
        # Then each answer's schema has exactly their fields, closed, the optional ones not required
        assert set(schema["properties"]) == set(typed.__annotations__)
        assert set(schema["required"]) == set(typed.__required_keys__)
        assert schema["additionalProperties"] is False
    # and a field's docstring is its description, an inherited field's included
    flags = document["components"]["schemas"]["FlagsRead"]["properties"]
    assert flags["version"]["description"] == "The stored version; null for fallbacks."
    assert "maintenance_ended_by" not in document["components"]["schemas"]["FlagsRead"]["required"]
