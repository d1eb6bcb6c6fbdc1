"""Writes apply exactly once when DynamoDB's answer is lost, and a client's Idempotency-Key makes its retry safe.

The client here is moto's, behind ``LossyClient``: it commits a transaction and then loses the answer, the way a
read timeout does, and answers a repeated ClientRequestToken with success without applying it again (what
DynamoDB documents for TransactWriteItems, and what DynamoDB Local does: the integration tier checks it there).
"""

from __future__ import annotations

from typing import Any

import pytest

from singleton_flags.keys import singleton_key
from singleton_flags_service.writes.transaction import MAX_RESENDS
from tests.support.unit import LossyClient, WriteApi, assert_refused, body_of, headers_of


def versions(api: WriteApi) -> list[int]:
    _, trail = api.state()
    return sorted(int(record["version"]["N"]) for record in trail)


def test_a_lost_answer_is_resent_with_the_same_token_and_applies_once(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given DynamoDB committing the write but its answer lost once
    client = LossyClient(api.client, lose=1)
    api.use_store(monkeypatch, client)
    # When a PATCH is sent
    response = api.patch({"signup_enabled": False})
    # Then the identical request went again with the same token, and the caller hears the committed result
    assert response["statusCode"] == 200, body_of(response)
    assert body_of(response)["applied"] is True and body_of(response)["version"] == 2
    assert len(client.tokens) == 2 and len(set(client.tokens)) == 1
    assert versions(api) == [1, 2]


def test_when_every_answer_is_lost_the_audit_record_tells_that_the_write_committed(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the write committed on the first send and every answer lost
    client = LossyClient(api.client, lose=1 + MAX_RESENDS)
    api.use_store(monkeypatch, client)
    # When a PATCH is sent / Then the store reads version 2's record, finds its own token: 200, applied once
    response = api.patch({"signup_enabled": False})
    assert response["statusCode"] == 200, body_of(response)
    assert body_of(response)["version"] == 2 and versions(api) == [1, 2]
    _, trail = api.state()
    assert {record["token"]["S"] for record in trail if record["version"]["N"] == "2"} == {client.tokens[0]}


def test_an_outcome_that_cannot_be_learned_is_503_outcome_unknown(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given every answer lost and the audit record unreadable
    client = LossyClient(api.client, lose=1 + MAX_RESENDS, commit=False, lose_reads_of="AUDIT#")
    api.use_store(monkeypatch, client)
    before = api.state()
    # When a PATCH is sent / Then 503 OUTCOME_UNKNOWN, saying how to find out, with Retry-After
    response = api.patch({"signup_enabled": False})
    error = assert_refused(api, response, before, 503, "OUTCOME_UNKNOWN")
    assert "history" in error["message"] and "Idempotency-Key" in error["message"]
    assert error["version"] == 2 and "Retry-After" in headers_of(response)


def test_no_record_of_the_version_after_lost_answers_is_outcome_unknown_not_an_outage(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given every answer lost, the request never applied, and no record of the version it meant to write
    client = LossyClient(api.client, lose=1 + MAX_RESENDS, commit=False)
    api.use_store(monkeypatch, client)
    before = api.state()
    # When a PATCH is sent / Then it may still be in flight as far as anyone can tell: OUTCOME_UNKNOWN
    assert_refused(api, api.patch({"signup_enabled": False}), before, 503, "OUTCOME_UNKNOWN")


# -- Idempotency-Key ------------------------------------------------------------------------------------


def test_the_same_idempotency_key_and_body_answers_the_original_result(api: WriteApi) -> None:
    # Given a PATCH applied with an Idempotency-Key
    first = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "k-1"})
    api.patch({"ai_search_enabled": False})  # another change after it
    before = api.state()
    # When the same request is sent again with the same key
    again = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "k-1"})
    # Then the original 200 (same version, same changes), marked as replayed, and nothing written
    assert again["statusCode"] == 200 and headers_of(again)["Idempotent-Replayed"] == "true"
    assert body_of(again)["version"] == body_of(first)["version"] == 2
    assert body_of(again)["changed"] == body_of(first)["changed"]
    assert headers_of(again)["ETag"] == '"2"'
    assert api.state() == before
    assert "Idempotent-Replayed" not in headers_of(first)


def test_the_same_idempotency_key_with_another_body_is_422(api: WriteApi) -> None:
    api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "k-2"})
    before = api.state()
    response = api.patch({"signup_enabled": True}, headers={"Idempotency-Key": "k-2"})
    assert_refused(api, response, before, 422, "IDEMPOTENCY_KEY_REUSED")


def test_an_idempotency_key_belongs_to_its_caller(api: WriteApi) -> None:
    # Given alice's key / When bob sends the same key for the same body / Then bob's write is his own
    api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "shared"})
    api.patch({"signup_enabled": True})
    other = api.patch(
        {"signup_enabled": False},
        headers={"Idempotency-Key": "shared"},
        caller_arn="arn:aws:iam::123456789012:user/bob",
    )
    assert "Idempotent-Replayed" not in headers_of(other) and body_of(other)["applied"] is True


def test_a_revert_retried_with_its_idempotency_key_applies_once(api: WriteApi) -> None:
    api.patch({"signup_enabled": False})
    first = api.revert(1, headers={"Idempotency-Key": "revert-1"})
    again = api.revert(1, headers={"Idempotency-Key": "revert-1"})
    assert body_of(first)["version"] == body_of(again)["version"] == 3
    assert headers_of(again)["Idempotent-Replayed"] == "true" and versions(api) == [1, 2, 3]


def test_a_retry_after_outcome_unknown_with_the_same_key_answers_the_committed_write(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a write that committed but whose outcome could not be learned (answers lost, record unreadable)
    lossy = LossyClient(api.client, lose=1 + MAX_RESENDS, lose_reads_of="AUDIT#")
    api.use_store(monkeypatch, lossy)
    unknown = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "retry-me"})
    assert body_of(unknown)["error"]["code"] == "OUTCOME_UNKNOWN"
    # When the client retries with the same key once DynamoDB answers again
    api.use_store(monkeypatch, api.client)
    retried = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "retry-me"})
    # Then it hears the committed result; the change exists once
    assert retried["statusCode"] == 200 and headers_of(retried)["Idempotent-Replayed"] == "true"
    assert body_of(retried)["version"] == 2 and versions(api) == [1, 2]


class InterleavingClient:
    """A DynamoDB client that runs ``between`` once, right before its first ``operation`` (for ``get_item``: the
    first read of the flags item): another writer's request landing between this one's steps."""

    def __init__(self, real: Any, between: Any, *, operation: str = "get_item") -> None:
        self._real = real
        self._between = between
        self._operation = operation

    def _maybe_interleave(self, operation: str, params: dict[str, Any]) -> None:
        if operation != self._operation or self._between is None:
            return
        if operation == "get_item" and params["Key"]["PK"]["S"] != "SETTINGS#APP":
            return
        between, self._between = self._between, None
        between()

    def get_item(self, **params: Any) -> Any:
        self._maybe_interleave("get_item", params)
        return self._real.get_item(**params)

    def transact_write_items(self, **params: Any) -> Any:
        self._maybe_interleave("transact_write_items", params)
        return self._real.transact_write_items(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_a_no_op_is_remembered_and_its_retry_never_overwrites_a_later_change(api: WriteApi) -> None:
    # Given a keyed PATCH that changes nothing (signup is already on) at version 1
    first = api.patch({"signup_enabled": True}, headers={"Idempotency-Key": "noop-1"})
    assert body_of(first)["applied"] is False and body_of(first)["version"] == 1
    # And another writer who then switches signup off
    api.patch({"signup_enabled": False})
    after_other = api.state()
    # When the first client retries with its key (its answer was lost)
    again = api.patch({"signup_enabled": True}, headers={"Idempotency-Key": "noop-1"})
    # Then it hears its original no-op, replayed, and the other writer's change stands
    assert again["statusCode"] == 200 and headers_of(again)["Idempotent-Replayed"] == "true"
    assert (body_of(again)["applied"], body_of(again)["version"], body_of(again)["changed"]) == (False, 1, {})
    assert body_of(again)["flags"] == body_of(first)["flags"] and headers_of(again)["ETag"] == '"1"'
    assert api.state() == after_other


def test_a_no_op_revert_is_remembered_and_its_retry_never_overwrites_a_later_change(api: WriteApi) -> None:
    # Given a keyed revert to the version the flags are already at (a no-op)
    first = api.revert(1, headers={"Idempotency-Key": "noop-revert"})
    assert body_of(first)["applied"] is False
    api.patch({"ai_search_enabled": False})  # another writer, after it
    after_other = api.state()
    # When it is retried with its key / Then the no-op is replayed and the later change stands
    again = api.revert(1, headers={"Idempotency-Key": "noop-revert"})
    assert headers_of(again)["Idempotent-Replayed"] == "true" and body_of(again)["applied"] is False
    assert body_of(again)["version"] == 1 and api.state() == after_other


def test_a_duplicate_that_decides_after_the_original_committed_replays_it(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a duplicate whose key check found nothing, and the original committing right after that check
    def original() -> None:
        api.use_store(monkeypatch, api.client)
        answer = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "raced"})
        assert body_of(answer)["applied"] is True
        api.use_store(monkeypatch, racing)

    racing = InterleavingClient(api.client, original)
    api.use_store(monkeypatch, racing)
    # When the duplicate reads the flags (already as it asks: a no-op for it on its own)
    duplicate = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "raced"})
    # Then it answers the original's result, replayed, not a no-op of its own
    assert duplicate["statusCode"] == 200 and headers_of(duplicate)["Idempotent-Replayed"] == "true"
    assert (body_of(duplicate)["applied"], body_of(duplicate)["version"]) == (True, 2)
    assert body_of(duplicate)["changed"] == {"signup_enabled": {"old": True, "new": False}}
    assert versions(api) == [1, 2]


def test_a_no_op_decided_on_a_version_that_moved_is_decided_again(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a keyed PATCH that is a no-op at version 1, and another writer committing after it read version 1
    def other_writer() -> None:
        api.client.transact_write_items(**other_change)

    api.use_store(monkeypatch, api.client)
    api.patch({"signup_enabled": False})  # v2: signup off
    api.revert(1)  # v3: signup on again; the other writer's change will be v4 (signup off)
    before = api.state()
    other_change = _transaction_switching_signup_off(api, monkeypatch)
    assert api.state() == before
    racing = InterleavingClient(api.client, other_writer, operation="transact_write_items")
    api.use_store(monkeypatch, racing)
    # When the keyed PATCH runs (its first decision is a no-op on version 3, its remember fails on version 4)
    answer = api.patch({"signup_enabled": True}, headers={"Idempotency-Key": "moved"})
    # Then it decided again on version 4 and applied its change as version 5
    assert answer["statusCode"] == 200 and "Idempotent-Replayed" not in headers_of(answer)
    assert (body_of(answer)["applied"], body_of(answer)["version"]) == (True, 5)
    again = api.patch({"signup_enabled": True}, headers={"Idempotency-Key": "moved"})
    assert headers_of(again)["Idempotent-Replayed"] == "true" and body_of(again)["version"] == 5


def _transaction_switching_signup_off(api: WriteApi, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The TransactWriteItems request the store sends for "signup off" at the current version, captured unsent."""
    sent: list[dict[str, Any]] = []

    class Capturing:
        def transact_write_items(self, **params: Any) -> Any:
            sent.append(params)
            return {}

        def __getattr__(self, name: str) -> Any:
            return getattr(api.client, name)

    api.use_store(monkeypatch, Capturing())
    api.patch({"signup_enabled": False})
    api.use_store(monkeypatch, api.client)
    assert len(sent) == 1
    return sent[0]


def test_a_restore_that_wrote_is_applied_and_its_retry_replays_it(api: WriteApi) -> None:
    # Given a missing flags item, restored with a key
    api.client.delete_item(TableName=api.table, Key=singleton_key())
    first = api("POST", "/flags/restore", body={"reason": "incident"}, headers={"Idempotency-Key": "restore-1"})
    assert (body_of(first)["applied"], body_of(first)["restored"], body_of(first)["version"]) == (True, True, 2)
    # When it is retried with the key after the item exists again
    again = api("POST", "/flags/restore", body={"reason": "incident"}, headers={"Idempotency-Key": "restore-1"})
    # Then the original "applied, restored" answer, replayed (not "no change")
    assert headers_of(again)["Idempotent-Replayed"] == "true"
    assert (body_of(again)["applied"], body_of(again)["restored"], body_of(again)["version"]) == (True, True, 2)
    assert versions(api) == [1, 2]


@pytest.mark.parametrize("key", ["", " ", "x" * 256, "caf\u00e9", "a b", "tab\there"], ids=repr)
def test_an_idempotency_key_that_is_not_1_to_255_visible_ascii_characters_is_400(api: WriteApi, key: str) -> None:
    before = api.state()
    response = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": key})
    assert_refused(api, response, before, 400, "INVALID_REQUEST", rule="idempotency_key")


# -- time budget ----------------------------------------------------------------------------------------


class ShortContext:
    """A Lambda context with little time left."""

    def __init__(self, real: Any, remaining_ms: int) -> None:
        self._real = real
        self._remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_a_write_with_too_little_time_left_answers_503_before_calling_dynamodb(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an invocation with 2 s left, less than one DynamoDB call may take (plus the margin)
    calls: list[str] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(api.client, name)

    api.use_store(monkeypatch, Counting(), call_seconds=6.0)
    before = api.state()
    api.context = ShortContext(api.context, 2000)
    # When a PATCH comes / Then 503 with Retry-After at once, no call made, nothing written
    response = api.patch({"signup_enabled": False})
    assert_refused(api, response, before, 503, "STORE_UNAVAILABLE")
    assert calls == []


def test_conflicts_stop_at_the_time_budget_with_a_409_before_the_function_times_out(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given every transaction cancelled by a concurrent writer, and each attempt taking 2 s of a 10 s budget
    from botocore.exceptions import ClientError

    now = [0.0]

    class Cancelling:
        def transact_write_items(self, **_: Any) -> Any:
            now[0] += 2.0
            raise ClientError(
                {
                    "Error": {"Code": "TransactionCanceledException"},
                    "CancellationReasons": [{"Code": "ConditionalCheckFailed"}],
                },
                "TransactWriteItems",
            )

        def __getattr__(self, name: str) -> Any:
            return getattr(api.client, name)

    api.use_store(monkeypatch, Cancelling(), call_seconds=1.0, monotonic=lambda: now[0], max_attempts=50)
    api.context = ShortContext(api.context, 11_000)
    before = api.state()
    # When a PATCH comes / Then 409 with Retry-After once the budget is spent, not at the 50th attempt
    response = api.patch({"signup_enabled": False})
    error = assert_refused(api, response, before, 409, "WRITE_CONFLICT")
    assert 3 <= error["attempts"] <= 6 and now[0] <= 10.0 + 2.0
