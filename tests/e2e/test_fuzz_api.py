"""Fuzz: schemathesis against the local runner, every operation of the OpenAPI document, bounded.

Positive and negative cases (schemathesis' defaults). No answer may be a 5xx, and every answer must be one
the document declares for that operation: status, content type, headers and body schema. The runner is
its own (module scope): the fuzz writes random valid values that other tests must not see.

The document is generated at collection by ``python -m local.openapi`` in a subprocess (so this process
never imports a handler module with the wrong environment), and a test checks it is the one the runner
serves. (schemathesis' lazy ``from_fixture`` loader does not work with pytest 9: it sets ``Node._nodeid``.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.runner import Runner, run_module, start_runner

MAX_EXAMPLES = 50  # per operation
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def fuzz_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    runner = start_runner(tmp_path_factory.mktemp("fuzz") / "runner.log")
    yield runner
    runner.stop()


def generated_document() -> dict:
    printed = run_module("local.openapi")
    assert printed.returncode == 0, printed.stderr
    return json.loads(printed.stdout)


DOCUMENT = generated_document()
schema = schemathesis.openapi.from_dict(DOCUMENT)
schema.config.generation.update(max_examples=MAX_EXAMPLES)


def test_the_fuzzed_document_is_the_one_the_runner_serves(fuzz_runner: Runner) -> None:
    served = fuzz_runner.get("/openapi.json").body
    assert {key: value for key, value in served.items() if key != "servers"} == {
        key: value for key, value in DOCUMENT.items() if key != "servers"
    }


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_every_answer_is_documented_and_none_is_a_server_error(case: schemathesis.Case, fuzz_runner: Runner) -> None:
    case.call_and_validate(base_url=fuzz_runner.url, checks=CHECKS, timeout=10)
