"""The consumer example's handler, run from the layer its stack builds, over a stand-in for Lambda's runtime
(standard library and boto3 only), against DynamoDB Local: it gates signups on maintenance_mode and
signup_enabled, and fails closed when DynamoDB cannot be reached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from local.dynamodb_local import free_port
from singleton_flags.declarations import Declarations
from singleton_flags_service.writes.store import FlagStore
from tests.support.example import EXAMPLE, lambda_runtime, synthesize

INVOKE = """
import json, sys
import handler
answer = handler.handler({}, None)
print(json.dumps({"answer": answer, "paths": sorted({m.__file__.split("/python/")[0] for m in (
    __import__("singleton_flags"), __import__("aws_lambda_powertools"))})}))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The client layer the example's stack built, and a stand-in for Lambda's runtime."""
    root = tmp_path_factory.mktemp("example")
    _, layer = synthesize(root / "cdk.out", root / "build")
    return layer, lambda_runtime(root / "runtime")


def invoke(layer: Path, runtime: Path, endpoint: str, table: str) -> dict[str, Any]:
    """One cold invocation: a new process, as a new execution environment (``python -S``: no site-packages)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(EXAMPLE / "signup"), str(layer / "python"), str(runtime)]),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
        "SINGLETON_FLAGS_TABLE": table,
        # The layer's file, where Lambda would mount it at /opt
        "SINGLETON_FLAGS_DECLARATIONS": str(layer / "singleton-flags" / "declarations.json"),
    }
    out = subprocess.run(
        [sys.executable, "-S", "-c", INVOKE], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["paths"] == [str(layer)]  # the client and Powertools came from the layer
    return result["answer"]


def test_the_example_gates_signups_on_the_flags_it_reads_from_the_layer(
    built: tuple[Path, Path], local_endpoint: str, flags_table: str, ddb_local: Any, declarations: Declarations
) -> None:
    layer, runtime = built
    store = FlagStore(ddb_local, flags_table, declarations)
    # Given the seeded flags (signups open, no maintenance): the signup goes ahead
    opened = invoke(layer, runtime, local_endpoint, flags_table)
    assert opened["statusCode"] == 201 and json.loads(opened["body"]) == {"signed_up": True, "flags_version": 0}
    # When signups are closed: 403
    store.change({"signup_enabled": False}, actor="it", reason="close signups")
    closed = invoke(layer, runtime, local_endpoint, flags_table)
    assert closed["statusCode"] == 403 and json.loads(closed["body"])["reason"] == "CACHED"
    # When maintenance is on, whatever signups say: 503 with Retry-After
    store.change({"signup_enabled": True, "maintenance_mode": True}, actor="it", reason="maintenance")
    down = invoke(layer, runtime, local_endpoint, flags_table)
    assert down["statusCode"] == 503 and down["headers"]["Retry-After"] == "60"


def test_the_example_fails_closed_when_dynamodb_cannot_be_reached(built: tuple[Path, Path]) -> None:
    layer, runtime = built
    # Given no DynamoDB at the endpoint: the declared fallbacks (maintenance ON) answer
    dead = invoke(layer, runtime, f"http://127.0.0.1:{free_port()}", "no-such-table")
    assert dead["statusCode"] == 503
