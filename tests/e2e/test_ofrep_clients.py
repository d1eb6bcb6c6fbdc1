"""Real OpenFeature clients, written elsewhere, read the flags over OFREP from the local runner.

Python: ``openfeature-sdk`` with ``openfeature-provider-ofrep`` (requirements-dev.txt). Node:
``@openfeature/server-sdk`` with ``@openfeature/ofrep-provider`` (package.json's devDependencies), run as
``node ofrep_node_client.cjs URL``.
The runner is this module's own: the tests change a flag and switch the local throttle on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openfeature import api
from openfeature.client import OpenFeatureClient
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import Reason

from tests.support.runner import REPO_ROOT, Runner, eventually, running

NODE_CLIENT = Path(__file__).with_name("ofrep_node_client.cjs")
DOMAIN = "ofrep-e2e"
CONTEXT = EvaluationContext("user-1", {"plan": "pro", "country": "FR"})


@pytest.fixture(scope="module")
def ofrep_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    with running(tmp_path_factory.mktemp("ofrep") / "runner.log") as runner:
        yield runner


@pytest.fixture
def client(ofrep_runner: Runner) -> Iterator[OpenFeatureClient]:
    """An OpenFeature client whose provider is the OFREP provider, pointed at the runner (a fresh provider per test:
    no back-off carried over)."""
    api.set_provider(OFREPProvider(ofrep_runner.url), DOMAIN)
    yield api.get_client(DOMAIN)
    api.clear_providers()


class TestPythonProvider:
    @pytest.mark.parametrize(
        ("method", "key", "default", "expected"),
        [
            pytest.param("get_boolean_details", "signup_enabled", False, True, id="bool"),
            pytest.param("get_integer_details", "api_rate_limit_per_minute", -1, 600, id="integer"),
            pytest.param("get_float_details", "trace_sample_rate", -1.0, 0.05, id="float"),
            pytest.param("get_string_details", "search_ranking", "none", "classic", id="string"),
        ],
    )
    def test_each_flag_type_is_evaluated_with_our_reason_variant_and_metadata(
        self, client: OpenFeatureClient, method: str, key: str, default: Any, expected: Any
    ) -> None:
        # Given the seeded flags (version 0)
        # When the SDK evaluates a flag of each type, with an evaluation context (ignored by the API)
        details = getattr(client, method)(key, default, CONTEXT)
        # Then the stored value, typed as the SDK expects, with the API's reason, variant and flat metadata
        assert details.error_code is None, details.error_message
        assert details.value == expected and type(details.value) is type(expected)
        assert details.reason in (Reason.STATIC, Reason.CACHED)
        assert details.variant == "stored"
        assert details.flag_metadata["contextIgnored"] is True
        assert isinstance(details.flag_metadata["version"], int)

    def test_an_unknown_flag_is_the_callers_default_with_flag_not_found(self, client: OpenFeatureClient) -> None:
        details = client.get_boolean_details("no_such_flag", True, CONTEXT)
        assert (details.value, details.error_code, details.reason) == (True, ErrorCode.FLAG_NOT_FOUND, Reason.ERROR)

    def test_a_change_through_patch_is_seen_after_the_cache_age(
        self, ofrep_runner: Runner, client: OpenFeatureClient
    ) -> None:
        # Given the SDK reads search_ranking
        before = client.get_string_value("search_ranking", "none")
        # When an operator changes it through PATCH /flags
        new = "semantic" if before != "semantic" else "classic"
        changed = ofrep_runner.send("PATCH", "/flags", {"flags": {"search_ranking": new}, "reason": "OFREP e2e"})
        assert changed.status == 200, changed.body
        # Then the SDK sees the new value once the read function's cache (1 s here) has aged
        seen = eventually(lambda: client.get_string_details("search_ranking", "none"), lambda d: d.value == new)
        assert (seen.value, seen.flag_metadata["version"]) == (new, changed.body["version"])

    def test_a_429_pauses_the_provider_for_retry_after_seconds(
        self, ofrep_runner: Runner, client: OpenFeatureClient
    ) -> None:
        # Given the local throttle switched on for the next request, Retry-After 2 s
        assert ofrep_runner.send("POST", "/_throttle", {"requests": 1, "retry_after": 2}).status == 200
        # When the SDK evaluates: the 429 is the caller's default with GENERAL
        throttled = client.get_boolean_details("signup_enabled", False)
        assert (throttled.value, throttled.error_code) == (False, ErrorCode.GENERAL)
        # Then it sends nothing until Retry-After has passed (the runner would answer a request now: 200)
        paused_at = time.monotonic()
        paused = client.get_boolean_details("signup_enabled", False)
        assert paused.error_code == ErrorCode.GENERAL and "paused" in (paused.error_message or "")
        assert ofrep_runner.send("POST", "/ofrep/v1/evaluate/flags/signup_enabled", {}).status == 200
        # and evaluates again once it has
        time.sleep(max(0.0, 2.2 - (time.monotonic() - paused_at)))
        resumed = client.get_boolean_details("signup_enabled", False)
        assert (resumed.value, resumed.error_code) == (True, None)


def test_the_node_sdk_reads_bool_number_string_and_reports_an_unknown_flag(ofrep_runner: Runner) -> None:
    # Given Node, the npm packages of package.json (npm ci), and the flags as GET /flags reads them
    stored = ofrep_runner.get("/flags").body["flags"]
    node = shutil.which("node")
    assert node is not None, "node is needed: it runs the CDK CLI too"
    # When the Node OpenFeature SDK, with the OFREP provider, evaluates through the runner
    done = subprocess.run(
        [node, str(NODE_CLIENT), ofrep_runner.url],
        cwd=REPO_ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    details = json.loads(done.stdout)
    # Then each typed flag is its stored value with our reason and variant, the metadata kept flat
    keys = {
        "bool": "signup_enabled",
        "integer": "api_rate_limit_per_minute",
        "float": "trace_sample_rate",
        "string": "search_ranking",
    }
    for name, key in keys.items():
        assert details[name]["value"] == stored[key], (name, details[name])
        assert details[name]["errorCode"] is None
        assert details[name]["reason"] in ("STATIC", "CACHED")
        assert details[name]["variant"] == "stored"
        assert details[name]["flagMetadata"]["contextIgnored"] is True
    # an unknown flag is the caller's default with FLAG_NOT_FOUND, and a type the flag does not have is refused
    assert (details["unknown"]["value"], details["unknown"]["errorCode"]) == (True, "FLAG_NOT_FOUND")
    assert (details["mismatch"]["value"], details["mismatch"]["errorCode"]) == ("not-a-bool", "TYPE_MISMATCH")
