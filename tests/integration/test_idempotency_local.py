"""An Idempotency-Key remembers every answer it gave, on AWS's own engine (moto's conditional writes are not
atomic under concurrency): a no-op is remembered too, every duplicate of a key (race losers included) gets the
original answer, and a retried scheduled change is created once."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from botocore.exceptions import ClientError

from singleton_flags.declarations import Declarations
from singleton_flags_service.schedules.changes import PENDING, ScheduledChanges, ScheduleItems
from singleton_flags_service.schedules.one_time import OneTimeSchedules, OneTimeTarget
from singleton_flags_service.schedules.timing import parse_schedule_time
from singleton_flags_service.writes.idempotency import Idempotency
from singleton_flags_service.writes.store import ChangeResult, FlagStore
from tests.support.events import invocation_context, rest_event
from tests.support.tables import read_singleton, read_trail

SENDERS = 16
ENVIRONMENTS = 4
NOW = datetime(2027, 3, 1, 8, 0, tzinfo=UTC).timestamp()


def send(module: ModuleType, flags: dict[str, Any], key: str | None = None) -> tuple[int, dict[str, Any], dict]:
    headers = {"Idempotency-Key": key} if key is not None else None
    event = rest_event("PATCH", "/flags", body={"flags": flags, "reason": "integration"}, headers=headers)
    response = module.handler(event, invocation_context())
    single = {name: values[-1] for name, values in (response.get("multiValueHeaders") or {}).items()}
    return response["statusCode"], json.loads(response["body"]), {**(response.get("headers") or {}), **single}


def test_a_no_op_retried_after_another_writers_change_replays_the_no_op(
    write_function: ModuleType, ddb_local: Any, flags_table: str
) -> None:
    # Given a keyed PATCH that changed nothing (signup is on at version 0)
    status, first, _ = send(write_function, {"signup_enabled": True}, key="noop")
    assert (status, first["applied"], first["version"]) == (200, False, 0)
    # And another writer switching signup off afterwards
    assert send(write_function, {"signup_enabled": False})[1]["version"] == 1
    # When the first client retries with its key
    status, again, headers = send(write_function, {"signup_enabled": True}, key="noop")
    # Then its no-op is replayed and the other writer's change stands
    assert (status, headers.get("Idempotent-Replayed")) == (200, "true")
    assert (again["applied"], again["version"], again["flags"]) == (False, 0, first["flags"])
    assert read_singleton(ddb_local, flags_table)["signup_enabled"] == {"BOOL": False}
    assert len(read_trail(ddb_local, flags_table)) == 1


def test_concurrent_senders_of_one_key_all_get_the_original_answer(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given 16 senders of one keyed change, spread over 4 execution environments (a store and client each)
    stores = [FlagStore(client_factory(), flags_table, declarations, sleep=lambda _: None) for _ in range(ENVIRONMENTS)]
    changes = {"signup_enabled": False, "api_rate_limit_per_minute": 900}
    key = Idempotency.of("arn:aws:iam::123456789012:user/alice", "one-key", {"flags": changes})
    results: list[ChangeResult] = []
    errors: list[BaseException] = []
    start = threading.Barrier(SENDERS)

    def sender(index: int) -> None:
        start.wait()
        try:
            results.append(
                stores[index % ENVIRONMENTS].change(changes, actor="alice", reason="retry storm", idempotency=key)
            )
        except BaseException as exc:  # noqa: BLE001 - collected, the test fails on it below
            errors.append(exc)

    # When they all send at once
    threads = [threading.Thread(target=sender, args=(index,)) for index in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then one version is written, and every sender holds its answer: one original, the rest replays of it
    assert errors == []
    assert len(read_trail(ddb_local, flags_table)) == 1
    assert read_singleton(ddb_local, flags_table)["schema_version"] == {"N": "1"}
    assert sorted(result.replayed for result in results) == [False] + [True] * (SENDERS - 1)
    answers = {
        (result.applied, result.snapshot.version, json.dumps(result.changed, sort_keys=True)) for result in results
    }
    assert answers == {
        (
            True,
            1,
            json.dumps(
                {"api_rate_limit_per_minute": {"new": 900, "old": 600}, "signup_enabled": {"new": False, "old": True}},
                sort_keys=True,
            ),
        )
    }
    assert {json.dumps(dict(result.values), sort_keys=True) for result in results} == {
        json.dumps(dict(results[0].values), sort_keys=True)
    }


class FakeScheduler:
    """EventBridge Scheduler's create/delete as this service uses them: a name is one schedule; creating a name
    that exists is ``ConflictException`` (thread-safe, so concurrent requests meet as in Scheduler)."""

    def __init__(self) -> None:
        self.created: dict[str, dict[str, Any]] = {}
        self.calls = 0
        self._lock = threading.Lock()

    def create_schedule(self, **request: Any) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
            if request["Name"] in self.created:
                raise ClientError({"Error": {"Code": "ConflictException", "Message": "exists"}}, "CreateSchedule")
            self.created[request["Name"]] = request
        return {"ScheduleArn": f"arn:aws:scheduler:us-east-1:123456789012:schedule/g/{request['Name']}"}

    def delete_schedule(self, **request: Any) -> dict[str, Any]:
        with self._lock:
            self.created.pop(request["Name"], None)
        return {}


def scheduled_changes(client: Any, table: str, scheduler: FakeScheduler) -> ScheduledChanges:
    target = OneTimeTarget(
        group="g",
        target_arn="arn:aws:lambda:us-east-1:123456789012:function:maintenance",
        role_arn="arn:aws:iam::123456789012:role/scheduler",
        dead_letter_arn="arn:aws:sqs:us-east-1:123456789012:dlq",
        retry_attempts=3,
        max_event_age_seconds=3600,
    )
    return ScheduledChanges(
        ScheduleItems(client, table, retention_seconds=86400),
        OneTimeSchedules(scheduler, target),
        landing=lambda changes, actor: None,  # where the flags land is not what these tests are about
        clock=lambda: NOW,
    )


def test_a_retried_and_a_concurrent_keyed_scheduled_change_is_one_change_and_one_schedule(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str
) -> None:
    # Given 8 concurrent senders of one keyed scheduled change, in their own environments, and a later retry
    scheduler = FakeScheduler()
    when = parse_schedule_time("2027-03-01T09:00:00Z")
    request = {"flags": {"signup_enabled": False}, "reason": "close signups", "at": when.iso}
    key = Idempotency.of("alice", "launch", request)
    answers: list[tuple[str, bool]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def sender() -> None:
        service = scheduled_changes(client_factory(), flags_table, scheduler)
        start.wait()
        try:
            change, replayed = service.create({"signup_enabled": False}, "close signups", when, None, "alice", key)
            answers.append((change.id, replayed))
        except BaseException as exc:  # noqa: BLE001 - collected, the test fails on it below
            errors.append(exc)

    threads = [threading.Thread(target=sender) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    retried, replayed = scheduled_changes(ddb_local, flags_table, scheduler).create(
        {"signup_enabled": False}, "close signups", when, None, "alice", key
    )

    # Then one pending change and one schedule, named after it; every answer names it; only one is original
    assert errors == []
    changes, _ = ScheduleItems(ddb_local, flags_table, retention_seconds=86400).page(100, None)
    assert [(change.id, change.status) for change in changes] == [(retried.id, PENDING)]
    assert {change_id for change_id, _ in answers} == {retried.id} and replayed
    assert sorted(was_replayed for _, was_replayed in answers) == [False] + [True] * 7
    assert list(scheduler.created) == [f"change-{retried.id}"]
