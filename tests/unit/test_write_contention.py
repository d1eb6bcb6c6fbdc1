"""Writes that wait their turn: an unconditional change retries conflicts until its time budget is spent.

A fake DynamoDB client stands for a table other writers keep winning: every transaction is cancelled and the item
moves on one version. Time is a fake monotonic clock that each call and each back-off sleep advances, so the rule
is pinned exactly: an attempt (a consistent read and a transaction) starts only while its worst case still ends
within the budget; a back-off never sleeps past that last start; the 409 comes once no attempt fits, not after a
fixed number of attempts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError

from local.functions import Functions
from singleton_flags.codec import iso_time
from singleton_flags.declarations import Declarations
from singleton_flags.keys import SUPERSEDED_BY_ATTR
from singleton_flags.snapshot import Snapshot
from singleton_flags_infra.constants import TIMEOUT_SECONDS
from singleton_flags_service.contract import WRITE_FUNCTION
from singleton_flags_service.errors import FlagsSuperseded, InvalidRequest, PreconditionFailed, WriteConflict
from singleton_flags_service.maintenance.windows import MaintenanceWindows, Window
from singleton_flags_service.writes.store import ATTEMPT_CALLS, MAX_ATTEMPTS, FlagStore
from tests.support.unit import START, Clock, WriteApi, body_of, flags_item, headers_of

TABLE = "flags"


@dataclass
class FakeTime:
    """A monotonic clock that only calls and sleeps move."""

    now: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


@dataclass
class Contended:
    """A flags table other writers keep changing: each transaction is cancelled (the item moved on one version)
    until ``losses`` have been lost, then the next one commits. Each call takes ``call_time`` of ``time``."""

    declarations: Declarations
    time: FakeTime
    call_time: float
    losses: int | None = None  # None: every transaction loses
    version: int = 1
    extra: dict[str, Any] = field(default_factory=dict)  # more attributes of the item (a marker set meanwhile)
    read_at: list[float] = field(default_factory=list)  # when each consistent read of the singleton started
    read_versions: list[int] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def get_item(self, **params: Any) -> dict[str, Any]:
        self.read_at.append(self.time.now)
        self.read_versions.append(self.version)
        self.time.now += self.call_time
        return {"Item": {**flags_item(self.declarations, self.version), **self.extra}}

    def transact_write_items(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        self.time.now += self.call_time
        if self.losses is not None and len(self.requests) > self.losses:
            self.version += 1
            return {}
        self.version += 1  # another writer committed first
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                "CancellationReasons": [{"Code": "ConditionalCheckFailed"}, {"Code": "None"}],
            },
            "TransactWriteItems",
        )

    def conditioned_on(self, index: int) -> int:
        """The version the ``index``-th transaction's Update required."""
        update = self.requests[index]["TransactItems"][0]["Update"]
        return int(update["ExpressionAttributeValues"][":current"]["N"])


def store_on(client: Contended, *, call_seconds: float, jitter: float = 1.0, **options: Any) -> FlagStore:
    return FlagStore(
        client,
        TABLE,
        client.declarations,
        call_seconds=call_seconds,
        clock=Clock(),
        monotonic=client.time.monotonic,
        sleep=client.time.sleep,
        jitter=lambda: jitter,
        **options,
    )


# (seconds each call takes, back-off base, back-off cap): attempts short and long against the back-off
TIMINGS = [(0.005, 0.025, 0.4), (0.05, 0.025, 0.4), (0.3, 0.1, 2.0), (0.02, 0.5, 5.0)]


@pytest.mark.parametrize(("call_time", "base", "cap"), TIMINGS, ids=[f"call{t}-cap{c}" for t, _, c in TIMINGS])
def test_an_unconditional_write_retries_conflicts_until_its_budget_is_spent_then_409(
    declarations: Declarations, call_time: float, base: float, cap: float
) -> None:
    # Given a table whose other writers win every race, a 10 s budget, and a call's worst case of 1 s
    time = FakeTime()
    client = Contended(declarations, time, call_time)
    store = store_on(client, call_seconds=1.0, backoff_base=base, backoff_max=cap)
    last_start = 10.0 - ATTEMPT_CALLS * 1.0  # the last moment an attempt's worst case still ends within the budget

    # When an unconditional change is made
    with pytest.raises(WriteConflict) as refused:
        store.change({"signup_enabled": False}, actor="a", reason="r", time_budget=10.0)

    # Then it kept trying until no attempt fitted any more: the last attempt started at or before the last start,
    # none after, and the 409 came once that attempt ended past it (at the budget, not earlier)
    attempts = len(client.read_at)
    assert refused.value.details["attempts"] == attempts == len(client.requests)
    assert max(client.read_at) == client.read_at[-1] <= last_start
    assert time.now > last_start
    assert time.now == pytest.approx(client.read_at[-1] + 2 * call_time)
    assert attempts < MAX_ATTEMPTS  # the budget decided, not the safety net
    # every back-off within its jittered, doubling, capped bound, none sleeping past the last start
    assert all(pause <= min(cap, base * 2**index) + 1e-9 for index, pause in enumerate(time.sleeps))
    assert len(time.sleeps) == attempts - 1
    assert f"gave up after {attempts} attempts in {time.now:.1f} s" in refused.value.message


def test_the_back_off_is_cut_short_so_the_last_attempt_starts_at_the_last_moment_it_may(
    declarations: Declarations,
) -> None:
    # Given back-offs far longer than the budget's room (a 3 s cap, 2 s of room before the last start)
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.01)
    store = store_on(client, call_seconds=1.0, backoff_base=3.0, backoff_max=3.0)

    # When a change meets conflicts
    with pytest.raises(WriteConflict):
        store.change({"signup_enabled": False}, actor="a", reason="r", time_budget=4.0)

    # Then the one back-off ends exactly at the last start (4 - 2 x 1 s), where the second and last attempt begins
    assert client.read_at == [0.0, pytest.approx(2.0)]
    assert time.sleeps == [pytest.approx(2.0 - 0.02)]


def test_a_write_that_waits_its_turn_is_applied_on_the_version_it_read_last(declarations: Declarations) -> None:
    # Given other writers who win the first 9 races (more than any former fixed attempt count allowed)
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.01, losses=9)
    store = store_on(client, call_seconds=1.0, jitter=0.5)

    # When an unconditional change is made with a budget that allows it
    result = store.change({"signup_enabled": False}, actor="a", reason="r", time_budget=19.0)

    # Then it is applied at the 10th attempt, each attempt conditioned on the version it had just read, each with
    # a new ClientRequestToken
    assert (result.applied, result.attempts, result.snapshot.version) == (True, 10, 11)
    assert [client.conditioned_on(index) for index in range(10)] == client.read_versions == list(range(1, 11))
    tokens = [request["ClientRequestToken"] for request in client.requests]
    assert len(set(tokens)) == len(tokens) == 10


def test_a_conditional_write_makes_exactly_one_attempt_whatever_its_budget(declarations: Declarations) -> None:
    # Given a table whose other writers win every race, and a budget that would allow many attempts
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.01)
    store = store_on(client, call_seconds=1.0)

    # When a change with If-Match (the version just read) loses its race
    with pytest.raises(PreconditionFailed) as refused:
        store.change({"signup_enabled": False}, actor="a", reason="r", expected_version=1, time_budget=600.0)

    # Then one transaction was sent, no back-off slept: 412 with the version it lost to
    assert len(client.requests) == 1 and time.sleeps == []
    assert refused.value.details["current_version"] == 2


def test_every_attempt_runs_the_attempt_checks_on_the_state_it_read(declarations: Declarations) -> None:
    # Given other writers who win every race, and a check that refuses once the flags reach version 3
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.01)
    store = store_on(client, call_seconds=1.0)
    seen: list[tuple[int | None, Mapping[str, Any]]] = []

    def protected(snapshot: Snapshot, changed: Mapping[str, Mapping[str, Any]]) -> None:
        seen.append((snapshot.version, dict(changed)))
        if (snapshot.version or 0) >= 3:
            raise InvalidRequest("signup_enabled is protected from version 3 on", rule="protected")

    # When a change is retried
    with pytest.raises(InvalidRequest):
        store.change({"signup_enabled": False}, actor="a", reason="r", time_budget=10.0, attempt_checks=[protected])

    # Then the check ran on each attempt's fresh state with what that attempt would change, and its refusal
    # stopped the write before a third transaction
    change = {"signup_enabled": {"old": True, "new": False}}
    assert seen == [(1, change), (2, change), (3, change)]
    assert len(client.requests) == 2


def test_every_policy_of_the_store_is_taken_on_every_attempt_with_the_writes_kind(declarations: Declarations) -> None:
    # Given a store whose policy refuses once the flags reach version 3, and other writers who win every race
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.01)
    seen: list[tuple[str, int | None, Mapping[str, Any]]] = []

    def policy(kind: str, snapshot: Snapshot, changed: Mapping[str, Mapping[str, Any]]) -> None:
        seen.append((kind, snapshot.version, dict(changed)))
        if (snapshot.version or 0) >= 3:
            raise InvalidRequest("signup_enabled is frozen from version 3 on", rule="frozen")

    store = store_on(client, call_seconds=1.0, policies=[policy])

    # When a change is retried
    with pytest.raises(InvalidRequest):
        store.change({"signup_enabled": False}, actor="a", reason="r", time_budget=10.0)

    # Then the policy was taken on each attempt's fresh state with the write's kind and what that attempt would
    # change, and its refusal stopped the write before a third transaction
    change = {"signup_enabled": {"old": True, "new": False}}
    assert seen == [("change", 1, change), ("change", 2, change), ("change", 3, change)]
    assert len(client.requests) == 2


def test_before_write_runs_once_however_many_attempts(declarations: Declarations) -> None:
    # Given a check of what is not the flags item (a guard's alarms), and other writers who win 4 races
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.01, losses=4)
    store = store_on(client, call_seconds=1.0)
    checks: list[float] = []

    # When the change is made
    result = store.change(
        {"signup_enabled": False}, actor="a", reason="r", time_budget=10.0, before_write=lambda: checks.append(1)
    )

    # Then it was asked once, before the first attempt
    assert result.attempts == 5 and checks == [1]


def test_a_superseded_marker_set_during_the_retries_refuses_the_next_attempt(declarations: Declarations) -> None:
    # Given other writers who win every race, and the table replaced after the second attempt
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.01)
    store = store_on(client, call_seconds=1.0)
    real_send = client.transact_write_items

    def send_then_supersede(**request: Any) -> dict[str, Any]:
        if len(client.requests) == 1:
            client.extra[SUPERSEDED_BY_ATTR] = {"S": "arn:aws:dynamodb:eu-west-1:123456789012:table/next"}
        return real_send(**request)

    client.transact_write_items = send_then_supersede  # type: ignore[method-assign]

    # When the change is retried / Then the attempt that reads the marker refuses, nothing more sent
    with pytest.raises(FlagsSuperseded):
        store.change({"signup_enabled": False}, actor="a", reason="r", time_budget=10.0)
    assert len(client.requests) == 2 and len(client.read_at) == 3


def test_a_write_without_a_budget_stops_at_the_safety_net(declarations: Declarations) -> None:
    # Given a caller that gives no budget, and other writers who win every race
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.0)
    store = store_on(client, call_seconds=1.0, max_attempts=25)

    # When the change is made / Then it stops at the safety net and says so
    with pytest.raises(WriteConflict) as refused:
        store.change({"signup_enabled": False}, actor="a", reason="r")
    assert refused.value.details["attempts"] == 25 == len(client.requests)
    assert "safety limit" in refused.value.message
    assert client.read_versions == list(range(1, 26))  # each attempt re-read the moved item


def test_a_window_start_waits_its_turn_within_the_budget_the_maintenance_function_gives(
    declarations: Declarations,
) -> None:
    # Given other writers who win every race, and a window's start delivered with 10 s of budget
    time = FakeTime()
    client = Contended(declarations, time, call_time=0.01)
    window = Window(name="nightly", duration_seconds=3600)
    windows = MaintenanceWindows(store_on(client, call_seconds=1.0), {window.name: window}, clock=Clock())

    # When it is applied / Then it retried until that budget was spent (the last attempt at 8 s at the latest),
    # and raised for Lambda to retry the invocation
    with pytest.raises(WriteConflict):
        windows.handle({"action": "start", "window": "nightly", "scheduled_time": iso_time(START)}, time_budget=10.0)
    assert client.read_at[-1] <= 8.0 < time.now and len(client.requests) > 6


class CommitsFirst:
    """A client on which ``other`` runs once, right before this request's first transaction: a request with the
    same Idempotency-Key that read after it and commits before it."""

    def __init__(self, real: Any, other: Callable[[], None]) -> None:
        self._real = real
        self._other: Callable[[], None] | None = other
        self.transactions = 0

    def transact_write_items(self, **params: Any) -> Any:
        self.transactions += 1
        if self._other is not None:
            other, self._other = self._other, None
            other()
        return self._real.transact_write_items(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_a_keyed_write_that_loses_its_race_to_the_same_key_replays_the_winner_and_writes_nothing(
    api: WriteApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a keyed PATCH that has read version 1, and its duplicate (same key, same body) committing first
    def duplicate() -> None:
        api.use_store(monkeypatch, api.client)
        answer = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "same"})
        assert body_of(answer)["version"] == 2
        api.use_store(monkeypatch, racing)

    racing = CommitsFirst(api.client, duplicate)
    api.use_store(monkeypatch, racing)

    # When its transaction is cancelled (the version moved, the key is taken), with budget left for many retries
    answer = api.patch({"signup_enabled": False}, headers={"Idempotency-Key": "same"})

    # Then it answers the winner's answer, replayed, after one transaction: no second version, no retry
    assert answer["statusCode"] == 200 and headers_of(answer)["Idempotent-Replayed"] == "true"
    assert (body_of(answer)["applied"], body_of(answer)["version"]) == (True, 2)
    assert racing.transactions == 1
    assert [record["version"] for record in api.module.STORE.history()[0]] == [2, 1]


def test_the_local_runner_gives_the_write_function_its_deployed_timeout_as_its_budget() -> None:
    # Given the local runner's functions, the write function reporting the time it was given
    functions = Functions({WRITE_FUNCTION: lambda event, context: context.get_remaining_time_in_millis()})

    # When it is invoked / Then it has the deployed timeout: its writes get the deployed budget, retries included
    remaining_ms = functions.invoke(WRITE_FUNCTION, {})
    assert TIMEOUT_SECONDS[WRITE_FUNCTION] * 1000 - 1000 < remaining_ms <= TIMEOUT_SECONDS[WRITE_FUNCTION] * 1000
