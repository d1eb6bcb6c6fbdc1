"""Shared test fixtures: fake AWS credentials, API Gateway REST proxy events, a Lambda context, a moto table.

Kept minimal on purpose: each tier adds what it needs in its own conftest.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from local.gateway import LambdaContext
from singleton_flags.declarations import Declarations
from singleton_flags_service.contract import load_service_declarations
from tests.support.events import invocation_context, rest_event
from tests.support.moto_tables import WORKER_TABLES

TABLE_NAME = "singleton-flags-test"
REGION = "us-east-1"
GUARD_ALARM_PREFIX = "singleton-flags-test-guard-"
SCHEDULE_GROUP = "singleton-flags-test"
# What the stack gives the write function for its one-time schedules (infra/scheduled_changes.py)
ONE_TIME_ENV = {
    "ONE_TIME_SCHEDULE_GROUP": SCHEDULE_GROUP,
    "ONE_TIME_SCHEDULE_TARGET_ARN": f"arn:aws:lambda:{REGION}:123456789012:function:singleton-flags-test-maintenance",
    "ONE_TIME_SCHEDULE_ROLE_ARN": "arn:aws:iam::123456789012:role/singleton-flags-test-scheduler",
    "ONE_TIME_SCHEDULE_DLQ_ARN": f"arn:aws:sqs:{REGION}:123456789012:singleton-flags-test-dlq",
    "ONE_TIME_SCHEDULE_RETRY_ATTEMPTS": "3",
    "ONE_TIME_SCHEDULE_MAX_EVENT_AGE_SECONDS": "3600",
}


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a real AWS account: fake credentials, a fixed region, the table's name."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "TABLE_NAME": TABLE_NAME,
        "FLAGS_GUARD_ALARM_PREFIX": GUARD_ALARM_PREFIX,
        **ONE_TIME_ENV,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def make_event() -> Callable[..., dict[str, Any]]:
    return rest_event


@pytest.fixture
def lambda_context() -> LambdaContext:
    return invocation_context()


@functools.cache
def _session() -> Any:
    """One boto3 session for the worker: loading a service's model again costs ~0.3 s per client."""
    import boto3

    return boto3.session.Session()


@pytest.fixture(scope="session")
def worker_moto() -> Any:
    """This worker's one moto, switched on for each test that asks for it (``moto``) and off after it.

    Starting moto afresh for every test rebuilt boto3's default session, and with it every service model a
    test's clients load; here the worker's session is kept, and only moto's data goes between tests. moto is
    off between those tests: kept on, it would also answer the calls of every later test that the same worker
    happens to run, so a test's outcome would depend on its worker.

    Of moto's two routes only botocore's is switched: everything under test calls AWS through botocore, whose
    ``before-send`` hook moto answers. The other route, the ``requests`` library's (moto registers a callback per
    AWS URL pattern with ``responses`` at every start, most of the cost of a start), is left off: a call to AWS
    through ``requests`` would reach the network, which the unit tier's socket guard refuses. The switching
    keeps moto's own count of who started it, so a runner that starts its own moto inside a test shares it.
    """
    from moto import mock_aws
    from moto.core.base_backend import BackendDict
    from moto.core.models import botocore_stubber, reset_model_data

    mock = mock_aws(config={"core": {"reset_boto3_session": False}})

    def switch_on(reset: bool = True) -> None:
        botocore_stubber.enabled = True
        if reset:
            BackendDict.reset()

    def switch_off(remove_data: bool) -> None:
        botocore_stubber.enabled = False
        if remove_data:
            BackendDict.reset()
            reset_model_data()

    mock._enable_patching = switch_on  # what start() and stop() call when the outermost moto starts or stops
    mock._disable_patching = switch_off
    return mock


@pytest.fixture
def moto(worker_moto: Any, aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every AWS service on moto for this test, starting empty (no table, schedule, alarm or queue); boto3's
    default session is the worker's (a test may replace it: undone after)."""
    import boto3

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", _session())
    worker_moto.start()  # also empties every backend left in use
    try:
        yield
    finally:
        worker_moto.stop()  # empties them again: nothing outlives the test


@pytest.fixture(scope="session")
def declarations() -> Declarations:
    return load_service_declarations()


@pytest.fixture
def table_name() -> str:
    return TABLE_NAME


@pytest.fixture
def ddb(moto: None) -> Any:
    """A low-level DynamoDB client on moto, with the flags table created as the stack defines it."""
    from local.dynamodb_local import create_table

    client = _session().client("dynamodb", region_name=REGION)
    WORKER_TABLES.create("flags table", REGION, TABLE_NAME, lambda: create_table(client, TABLE_NAME))
    return client


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of the project's built distributions for the whole run: each wheel is built once, by whichever
    test process needs it first (pytest-xdist's workers share their run's temporary root)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "wheelhouse"


# The order a run starts its tests in: the slowest tiers first, so that under parallel workers they overlap the
# fast ones instead of trailing after them. Within a tier, the collected order.
_TIERS_FIRST = ("install", "e2e", "integration", "infra", "unit")
_TESTS = Path(__file__).parent


def tier_of(item: pytest.Item) -> str:
    if item.get_closest_marker("install") is not None:
        return "install"
    path = Path(str(item.path))
    return next((tier for tier in _TIERS_FIRST if _TESTS / tier in path.parents), "unit")


@pytest.hookimpl(tryfirst=True)  # before an order plugin's shuffle (pytest-random-order), never after it
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _TIERS_FIRST.index(tier_of(item)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """At the very end of a run, loudly: which tiers were skipped, and why (a missing Java or Chromium)."""
    from tests.support.skips import skipped_tiers, summary_lines

    lines = summary_lines(skipped_tiers(terminalreporter.stats.get("skipped", [])))
    if not lines:
        return
    terminalreporter.section("SKIPPED TIERS", sep="!", red=True, bold=True)
    for line in lines:
        terminalreporter.write_line(line, red=True, bold=True)


def ci_is_set() -> bool:
    """CI (``.ci/run`` sets CI=true) must run every tier: what would be skipped elsewhere fails there."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def dynamodb_local_endpoint() -> Iterator[str]:
    """Endpoint URL of the session's one DynamoDB Local (AWS's jar, in memory, gone when the session ends).

    Without the jar or Java: skipped with the reason, except under CI, where it fails.
    """
    from local.dynamodb_local import DynamoDBLocalUnavailable, find_jar, find_java, running_dynamodb_local

    try:
        find_jar()
        find_java()
    except DynamoDBLocalUnavailable as exc:
        if ci_is_set():
            pytest.fail(f"CI must run the DynamoDB Local tests, but: {exc}", pytrace=False)
        pytest.skip(f"DynamoDB Local unavailable ({exc}); CI fails here instead of skipping")
    with running_dynamodb_local() as endpoint:
        yield endpoint
