"""Write-path metrics: ChangesApplied, Refusals{code}, WriteConflicts, WriteRetries.

Each test captures the EMF the write function prints and fails if its metric is missing or wrong.
"""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags_service.writes.store import FlagStore
from tests.support.unit import FailingClient, emf_metrics

PATCH = {"flags": {"signup_enabled": False}, "reason": "metrics test"}


def _metrics(stdout: Any) -> list[tuple[str, float, dict[str, str]]]:
    return emf_metrics(stdout.records())


def test_an_applied_change_emits_changes_applied(write_api, make_event, lambda_context, stdout) -> None:
    # Given a seeded table / When a PATCH changes a flag
    response = write_api.handler(make_event("PATCH", "/flags", body=PATCH), lambda_context)
    # Then the invocation flushes ChangesApplied=1 with the service dimension
    assert response["statusCode"] == 200
    assert ("ChangesApplied", 1.0, {"service": "singleton-flags"}) in _metrics(stdout)


def test_a_no_op_write_emits_no_changes_applied(write_api, make_event, lambda_context, stdout) -> None:
    # Given the flag already holds the value / When the same value is PATCHed
    body = {"flags": {"signup_enabled": True}, "reason": "same value"}
    write_api.handler(make_event("PATCH", "/flags", body=body), lambda_context)
    # Then nothing counts as applied
    assert [m for m in _metrics(stdout) if m[0] == "ChangesApplied"] == []


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"flags": {"nope": True}, "reason": "x"}, "UNKNOWN_FLAG"),
        ({"flags": {"signup_enabled": "true"}, "reason": "x"}, "INVALID_VALUE"),
        ("{not json", "INVALID_REQUEST"),
    ],
)
def test_a_refusal_emits_refusals_by_code(write_api, make_event, lambda_context, stdout, body, code) -> None:
    # Given a request the API refuses / When it is sent
    response = write_api.handler(make_event("PATCH", "/flags", body=body), lambda_context)
    # Then Refusals=1 is emitted with the error code as its dimension
    assert response["statusCode"] == 400
    assert ("Refusals", 1.0, {"service": "singleton-flags", "code": code}) in _metrics(stdout)


def test_exhausted_retries_emit_conflicts_and_retries(
    write_api, ddb, table_name, make_event, lambda_context, stdout, monkeypatch
) -> None:
    # Given a store whose every transaction is cancelled by a concurrent writer
    client = FailingClient(
        ddb,
        "transact_write_items",
        "TransactionCanceledException",
        reasons=[{"Code": "ConditionalCheckFailed"}, {"Code": "None"}],
    )
    store = FlagStore(
        client,
        table_name,
        write_api.DECLARATIONS,
        max_attempts=4,
        sleep=lambda _: None,
        on_retry=write_api.STORE._on_retry,
    )
    monkeypatch.setattr(write_api, "STORE", store)
    # When a PATCH is sent
    response = write_api.handler(make_event("PATCH", "/flags", body=PATCH), lambda_context)
    # Then it answers 409 and the metrics say 1 conflict after 3 retries
    assert response["statusCode"] == 409
    assert client.calls == 4
    metrics = _metrics(stdout)
    assert ("WriteConflicts", 1.0, {"service": "singleton-flags"}) in metrics
    assert ("WriteRetries", 3.0, {"service": "singleton-flags"}) in metrics
    assert ("Refusals", 1.0, {"service": "singleton-flags", "code": "WRITE_CONFLICT"}) in metrics
