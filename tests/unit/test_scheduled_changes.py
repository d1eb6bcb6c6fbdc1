"""Scheduled changes end to end in the unit tier: the write API creates, lists and cancels them (moto's DynamoDB
and EventBridge Scheduler), the maintenance function applies what a schedule delivers; the clock is frozen."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from singleton_flags.keys import schedule_key
from singleton_flags_service.schedules.apply import ScheduledChangeRunner
from singleton_flags_service.schedules.changes import ScheduledChanges, ScheduleItems
from singleton_flags_service.schedules.one_time import OneTimeSchedules
from singleton_flags_service.writes.audit import audit_record
from singleton_flags_service.writes.store import FlagStore
from tests.conftest import REGION, SCHEDULE_GROUP
from tests.support.tables import table_state
from tests.support.unit import CALLER, Clock, WriteApi, emf_metrics

NOW = datetime(2027, 3, 1, 8, 0, tzinfo=UTC).timestamp()  # a whole minute
FLAG = "ai_search_enabled"
RETENTION = 365 * 86400


@dataclass
class Scheduling:
    api: WriteApi
    scheduler: Any
    runner: ScheduledChangeRunner
    clock: Clock
    context: Any

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.api("POST", "/flags/schedules", body=body)

    def deliver(self, schedule_id: str) -> dict[str, Any]:
        """What the schedule's target receives, handed to the real maintenance handler's service."""
        return self.runner.handle({"scheduled_change": schedule_id}).as_dict()

    def item(self, schedule_id: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.api.client.get_item(
            TableName=self.api.table, Key=schedule_key(schedule_id), ConsistentRead=True
        ).get("Item")
        return found

    def schedules(self) -> list[dict[str, Any]]:
        names = [s["Name"] for s in self.scheduler.list_schedules(GroupName=SCHEDULE_GROUP)["Schedules"]]
        return [self.scheduler.get_schedule(Name=name, GroupName=SCHEDULE_GROUP) for name in names]

    def records(self) -> list[dict[str, Any]]:
        return [audit_record(record) for record in table_state(self.api.client, self.api.table)[1]]


@pytest.fixture
def scheduling(seeded_api: WriteApi, monkeypatch: pytest.MonkeyPatch, lambda_context: Any) -> Scheduling:
    """The write API's scheduled changes and their runner on moto, the clock at NOW (2027-03-01T08:00:00Z)."""
    clock = Clock(NOW)
    scheduler = boto3.client("scheduler", region_name=REGION)
    scheduler.create_schedule_group(Name=SCHEDULE_GROUP)
    items = ScheduleItems(seeded_api.client, seeded_api.table, retention_seconds=RETENTION)
    schedules = OneTimeSchedules(scheduler, seeded_api.module.CONFIG.scheduled_changes)  # read at its cold start
    monkeypatch.setattr(
        seeded_api.module,
        "SCHEDULED",
        ScheduledChanges(items, schedules, landing=seeded_api.module.landing, clock=clock),
    )
    store = FlagStore(seeded_api.client, seeded_api.table, seeded_api.module.DECLARATIONS, clock=clock)
    runner = ScheduledChangeRunner(store, items, seeded_api.module.DECLARATIONS, clock=clock)
    return Scheduling(seeded_api, scheduler, runner, clock, lambda_context)


def body_of(response: dict[str, Any]) -> Any:
    return json.loads(response["body"])


def change(**overrides: Any) -> dict[str, Any]:
    return {"flags": {FLAG: True}, "reason": "open AI search at launch", "at": "2027-03-01T09:00:00Z", **overrides}


# ---------------------------------------------------------------------------------------------- creation


def test_a_scheduled_change_is_a_pending_item_and_a_one_time_schedule_carrying_only_its_id(
    scheduling: Scheduling,
) -> None:
    # When a change is scheduled for 10:00 Paris time (09:00 UTC)
    response = scheduling.create(change(at="2027-03-01T10:00:00", timezone="Europe/Paris"))
    # Then 201 with the pending schedule, who asked and when
    assert response["statusCode"] == 201, response["body"]
    created = body_of(response)
    assert created["status"] == "pending"
    assert (created["at"], created["local_time"], created["timezone"]) == (
        "2027-03-01T09:00:00Z",
        "2027-03-01T10:00:00",
        "Europe/Paris",
    )
    assert created["created_by"] == CALLER and created["created_at"] == "2027-03-01T08:00:00.000+00:00"
    assert created["flags"] == {FLAG: True} and created["if_version"] is None
    # And one one-time schedule at that instant, deleted after it fires, whose payload is only the id
    (schedule,) = scheduling.schedules()
    assert schedule["Name"] == f"change-{created['id']}"
    assert (schedule["ScheduleExpression"], schedule["ScheduleExpressionTimezone"]) == (
        "at(2027-03-01T09:00:00)",
        "UTC",
    )
    assert schedule["ActionAfterCompletion"] == "DELETE" and schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert json.loads(schedule["Target"]["Input"]) == {"scheduled_change": created["id"]}
    # And no version was written: a schedule is not a change of the flags
    assert scheduling.records() == []


def test_a_local_time_in_the_spring_forward_gap_is_400_and_creates_nothing(scheduling: Scheduling) -> None:
    # 2027-03-28: Paris skips 02:00-03:00
    response = scheduling.create(change(at="2027-03-28T02:30:00", timezone="Europe/Paris"))
    assert response["statusCode"] == 400
    error = body_of(response)["error"]
    assert (error["code"], error["rule"]) == ("INVALID_REQUEST", "at_nonexistent")
    assert scheduling.schedules() == []
    assert scheduling.api("GET", "/flags/schedules")["body"] == '{"schedules":[],"next_cursor":null}'


def test_an_ambiguous_local_time_is_its_first_occurrence(scheduling: Scheduling) -> None:
    # 2027-10-31: Paris repeats 02:00-03:00; the first 02:30 is CEST (+02:00), 00:30 UTC
    created = body_of(scheduling.create(change(at="2027-10-31T02:30:00", timezone="Europe/Paris")))
    assert created["at"] == "2027-10-31T00:30:00Z"
    (schedule,) = scheduling.schedules()
    assert schedule["ScheduleExpression"] == "at(2027-10-31T00:30:00)"


@pytest.mark.parametrize(
    ("at", "status", "rule"),
    [
        ("2027-03-01T08:02:00Z", 201, None),  # exactly 2 minutes ahead
        ("2027-03-01T08:01:00Z", 400, "at_too_soon"),
        ("2027-03-01T07:59:00Z", 400, "at_too_soon"),  # the past
        ("2028-03-01T08:00:00Z", 201, None),  # exactly 366 days ahead (2028 is a leap year: 366 days)
        ("2028-03-01T08:01:00Z", 400, "at_too_far"),
        ("2027-03-01T09:00:30Z", 400, "at_seconds"),
        ("2027-03-01T09:00:00.500Z", 400, "at_seconds"),
        ("2027-03-01T09:00:00.000000001Z", 400, "at_seconds"),  # past datetime's six digits: still not :00
        ("2027-03-01T09:00:00.000000000Z", 201, None),
        ("2027-03-01T09:00:00", 400, "timezone"),  # a local time without its zone
        ("2027-02-30T09:00:00Z", 400, "at"),
        ("9999-12-31T23:59:00-14:00", 400, "at"),  # past datetime's range once in UTC: refused, never a 500
        ("0001-01-01T00:00:00+14:00", 400, "at"),
        ("tomorrow at nine", 400, "at"),
    ],
)
def test_when_a_change_may_be_scheduled(scheduling: Scheduling, at: str, status: int, rule: str | None) -> None:
    response = scheduling.create(change(at=at))
    assert response["statusCode"] == status, response["body"]
    if rule is not None:
        assert body_of(response)["error"]["rule"] == rule
        assert scheduling.schedules() == []


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (change(flags={"no_such_flag": True}), "UNKNOWN_FLAG"),
        (change(flags={FLAG: "yes"}), "INVALID_VALUE"),
        (change(flags={}), "INVALID_REQUEST"),
        (change(reason=" "), "INVALID_REQUEST"),
        (change(timezone="Mars/Olympus"), "INVALID_REQUEST"),  # an offset and a zone
        (change(at="2027-03-01T10:00:00", timezone="Mars/Olympus"), "INVALID_REQUEST"),
        (change(at="9999-12-31T23:00:00", timezone="America/New_York"), "INVALID_REQUEST"),
        (change(at="2027-03-01T10:00:00", timezone="../../etc/passwd"), "INVALID_REQUEST"),
        (change(at="2027-03-01T10:00:00", timezone="localtime"), "INVALID_REQUEST"),  # the host's own setting
        (change(at="2027-03-01T10:00:00", timezone="posixrules"), "INVALID_REQUEST"),
        (change(at="2027-03-01T10:00:00", timezone="Factory"), "INVALID_REQUEST"),
        (change(at="2027-03-01T10:00:00", timezone="right/Europe/Paris"), "INVALID_REQUEST"),
        (change(at="2027-03-01T10:00:00", timezone="posix/Europe/Paris"), "INVALID_REQUEST"),
        (change(if_version=-1), "INVALID_REQUEST"),
        (change(if_version=True), "INVALID_REQUEST"),
        (change(if_version=10**12), "INVALID_REQUEST"),  # beyond any version; 42 digits would be unstorable
        (change(if_version=123456789012345678901234567890123456789012), "INVALID_REQUEST"),
        (change(when="later"), "INVALID_REQUEST"),
    ],
)
def test_a_change_refused_as_patch_would_refuse_it_creates_nothing(
    scheduling: Scheduling, body: dict[str, Any], code: str
) -> None:
    response = scheduling.create(body)
    assert response["statusCode"] == 400, response["body"]
    assert body_of(response)["error"]["code"] == code
    assert scheduling.schedules() == []
    assert body_of(scheduling.api("GET", "/flags/schedules"))["schedules"] == []


def test_a_schedule_scheduler_cannot_create_leaves_a_failed_item_and_no_schedule(scheduling: Scheduling) -> None:
    stubber = Stubber(scheduling.scheduler)
    stubber.add_client_error("create_schedule", service_error_code="ThrottlingException", http_status_code=400)
    stubber.add_client_error("delete_schedule", service_error_code="ResourceNotFoundException", http_status_code=404)
    with stubber:
        response = scheduling.create(change())
    assert response["statusCode"] == 503
    assert body_of(response)["error"]["code"] == "SCHEDULER_UNAVAILABLE"
    assert response["multiValueHeaders"]["Retry-After"] == ["2"]
    (listed,) = body_of(scheduling.api("GET", "/flags/schedules"))["schedules"]
    assert listed["status"] == "failed" and "could not be created" in listed["detail"]
    assert scheduling.schedules() == []


# ---------------------------------------------------------------------------------------------- Idempotency-Key


def keyed(scheduling: Scheduling, key: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    return scheduling.api("POST", "/flags/schedules", body=body or change(), headers={"Idempotency-Key": key})


def pending(scheduling: Scheduling) -> list[dict[str, Any]]:
    listed = body_of(scheduling.api("GET", "/flags/schedules"))["schedules"]
    return [schedule for schedule in listed if schedule["status"] == "pending"]


def test_a_scheduled_change_retried_with_its_key_is_created_once(scheduling: Scheduling) -> None:
    # Given a change scheduled with an Idempotency-Key whose answer the client did not get
    first = keyed(scheduling, "launch-1")
    assert first["statusCode"] == 201 and "Idempotent-Replayed" not in first["multiValueHeaders"]
    # When the client retries with the same key
    again = keyed(scheduling, "launch-1")
    # Then the same change, replayed: one pending change and one schedule, named after it
    assert again["statusCode"] == 201 and again["multiValueHeaders"]["Idempotent-Replayed"] == ["true"]
    assert body_of(again) == body_of(first)
    assert [schedule["id"] for schedule in pending(scheduling)] == [body_of(first)["id"]]
    assert [schedule["Name"] for schedule in scheduling.schedules()] == [f"change-{body_of(first)['id']}"]


def test_a_keyed_change_whose_schedule_is_missing_gets_it_from_the_retry(scheduling: Scheduling) -> None:
    # Given a keyed change whose request stopped after its item, before its schedule existed
    created = body_of(keyed(scheduling, "stopped"))
    scheduling.scheduler.delete_schedule(Name=f"change-{created['id']}", GroupName=SCHEDULE_GROUP)
    # When the client retries with its key / Then the schedule is created again, under the same name, once
    again = keyed(scheduling, "stopped")
    assert again["multiValueHeaders"]["Idempotent-Replayed"] == ["true"] and body_of(again)["id"] == created["id"]
    assert [schedule["Name"] for schedule in scheduling.schedules()] == [f"change-{created['id']}"]
    assert len(pending(scheduling)) == 1


def test_a_key_names_one_scheduled_change_request(scheduling: Scheduling) -> None:
    keyed(scheduling, "one-request")
    other = keyed(scheduling, "one-request", change(at="2027-03-01T09:30:00Z"))
    assert other["statusCode"] == 422 and body_of(other)["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert len(pending(scheduling)) == 1 and len(scheduling.schedules()) == 1


def test_a_keyed_change_scheduler_refused_releases_its_key_for_the_retry(scheduling: Scheduling) -> None:
    # Given a keyed change whose schedule Scheduler could not create (503, the item marked failed)
    stubber = Stubber(scheduling.scheduler)
    stubber.add_client_error("create_schedule", service_error_code="ThrottlingException", http_status_code=400)
    stubber.add_client_error("delete_schedule", service_error_code="ResourceNotFoundException", http_status_code=404)
    with stubber:
        assert keyed(scheduling, "after-503")["statusCode"] == 503
    # When the client retries with the same key once Scheduler answers
    again = keyed(scheduling, "after-503")
    # Then a new attempt: one pending change with its schedule (the failed one stays failed), not replayed
    assert again["statusCode"] == 201 and "Idempotent-Replayed" not in again["multiValueHeaders"]
    assert [schedule["id"] for schedule in pending(scheduling)] == [body_of(again)["id"]]
    assert len(scheduling.schedules()) == 1


def test_schedules_are_listed_newest_first_a_page_at_a_time(scheduling: Scheduling) -> None:
    ids = []
    for minute in range(3):
        ids.append(body_of(scheduling.create(change(at=f"2027-03-01T09:0{minute}:00Z")))["id"])
        scheduling.clock.advance(1)
    first = body_of(scheduling.api("GET", "/flags/schedules", query={"limit": "2"}))
    assert [s["id"] for s in first["schedules"]] == [ids[2], ids[1]]
    second = body_of(scheduling.api("GET", "/flags/schedules", query={"limit": "2", "cursor": first["next_cursor"]}))
    assert [s["id"] for s in second["schedules"]] == [ids[0]] and second["next_cursor"] is None
    bad = scheduling.api("GET", "/flags/schedules", query={"cursor": "not-a-cursor"})
    assert bad["statusCode"] == 400 and body_of(bad)["error"]["rule"] == "cursor"


# ---------------------------------------------------------------------------------------------- cancellation


def test_cancel_marks_a_pending_change_cancelled_deletes_its_schedule_and_only_once(scheduling: Scheduling) -> None:
    created = body_of(scheduling.create(change()))
    scheduling.clock.advance(60)
    response = scheduling.api(
        "DELETE", f"/flags/schedules/{created['id']}", caller_arn="arn:aws:iam::123456789012:user/bob"
    )
    assert response["statusCode"] == 200, response["body"]
    cancelled = body_of(response)
    assert cancelled["schedule_deleted"] is True
    assert cancelled["schedule"]["status"] == "cancelled"
    assert cancelled["schedule"]["cancelled_by"] == "arn:aws:iam::123456789012:user/bob"
    assert cancelled["schedule"]["cancelled_at"] == "2027-03-01T08:01:00.000+00:00"
    assert scheduling.schedules() == []
    again = scheduling.api("DELETE", f"/flags/schedules/{created['id']}")
    assert again["statusCode"] == 409
    assert body_of(again)["error"] | {"message": ""} == {
        "code": "SCHEDULE_NOT_PENDING",
        "message": "",
        "id": created["id"],
        "status": "cancelled",
    }
    assert scheduling.records() == []  # cancelling is no version either


@pytest.mark.parametrize("schedule_id", ["20270301T080000Z-00000000", "nope", "%2F"])
def test_cancelling_an_unknown_schedule_is_404(scheduling: Scheduling, schedule_id: str) -> None:
    response = scheduling.api("DELETE", f"/flags/schedules/{schedule_id}")
    assert response["statusCode"] == 404
    assert body_of(response)["error"]["code"] == "SCHEDULE_NOT_FOUND"


# ---------------------------------------------------------------------------------------------- applying


def test_a_delivered_change_is_one_version_by_the_schedule_with_its_requester_and_reason(
    scheduling: Scheduling,
) -> None:
    created = body_of(scheduling.create(change()))
    scheduling.clock.now = datetime(2027, 3, 1, 9, 0, 20, tzinfo=UTC).timestamp()
    outcome = scheduling.deliver(created["id"])
    assert outcome == {"status": "applied", "schedule": created["id"], "detail": "applied", "version": 1}
    (record,) = scheduling.records()
    assert (record["version"], record["kind"], record["actor"]) == (1, "scheduled", f"schedule:{created['id']}")
    assert (record["reason"], record["requested_by"], record["schedule"]) == (
        "open AI search at launch",
        CALLER,
        created["id"],
    )
    assert record["changes"] == {FLAG: {"old": False, "new": True}}
    listed = body_of(scheduling.api("GET", "/flags/schedules"))["schedules"][0]
    assert (listed["status"], listed["version"], listed["finished_at"]) == (
        "applied",
        1,
        "2027-03-01T09:00:20.000+00:00",
    )


def test_a_change_delivered_twice_is_applied_once(scheduling: Scheduling) -> None:
    created = body_of(scheduling.create(change()))
    assert scheduling.deliver(created["id"])["status"] == "applied"
    second = scheduling.deliver(created["id"])
    assert second["status"] == "not_pending"
    assert [record["version"] for record in scheduling.records()] == [1]


def test_a_change_whose_if_version_no_longer_matches_is_skipped_and_writes_no_version(scheduling: Scheduling) -> None:
    created = body_of(scheduling.create(change(if_version=0)))
    assert scheduling.api.patch({"signup_enabled": False})["statusCode"] == 200  # version 1, by hand, meanwhile
    outcome = scheduling.deliver(created["id"])
    assert outcome["status"] == "skipped"
    assert [record["version"] for record in scheduling.records()] == [1]  # only the manual change
    listed = body_of(scheduling.api("GET", "/flags/schedules"))["schedules"][0]
    assert listed["status"] == "skipped"
    assert listed["detail"] == "if_version 0 no longer matches: the flags are at version 1; nothing changed"
    assert "version" not in listed


def test_a_change_whose_if_version_still_matches_is_applied(scheduling: Scheduling) -> None:
    created = body_of(scheduling.create(change(if_version=0)))
    assert scheduling.deliver(created["id"])["status"] == "applied"


def test_a_cancelled_change_delivered_anyway_does_nothing(scheduling: Scheduling) -> None:
    created = body_of(scheduling.create(change()))
    assert scheduling.api("DELETE", f"/flags/schedules/{created['id']}")["statusCode"] == 200
    assert scheduling.deliver(created["id"])["status"] == "not_pending"
    assert scheduling.records() == []
    assert body_of(scheduling.api("GET", "/flags/schedules"))["schedules"][0]["status"] == "cancelled"


def test_a_change_no_longer_valid_when_due_fails_and_is_recorded(scheduling: Scheduling) -> None:
    created = body_of(scheduling.create(change()))
    # the flag's declaration changed meanwhile: the stored value is no longer a valid one
    scheduling.api.client.update_item(
        TableName=scheduling.api.table,
        Key=schedule_key(created["id"]),
        UpdateExpression="SET flags = :f",
        ExpressionAttributeValues={":f": {"M": {"no_longer_declared": {"BOOL": True}}}},
    )
    outcome = scheduling.deliver(created["id"])
    assert outcome["status"] == "failed" and "no longer valid" in outcome["detail"]
    assert scheduling.records() == []
    assert body_of(scheduling.api("GET", "/flags/schedules"))["schedules"][0]["status"] == "failed"


# ---------------------------------------------------------------------------------------------- the function


def test_the_maintenance_function_applies_a_delivery_and_counts_its_failures(
    maintenance: Any, scheduling: Scheduling, stdout: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = body_of(scheduling.create(change()))
    monkeypatch.setattr(maintenance.module, "SCHEDULED", scheduling.runner)
    assert maintenance.deliver({"scheduled_change": created["id"]})["status"] == "applied"
    assert maintenance.deliver({"scheduled_change": "x", "window": "w"})["status"] == "rejected"
    assert maintenance.deliver({"scheduled_change": "20270301T080000Z-00000000"})["status"] == "unknown"
    metrics = [(name, value) for name, value, _ in emf_metrics(stdout.records())]
    assert ("ScheduledChangesApplied", 1) in metrics
    assert metrics.count(("ScheduledChangeFailures", 1)) == 2


class ThrottledWrites:
    """The moto client, except that its transactions are throttled while ``throttled`` is set."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.throttled = True

    def transact_write_items(self, **params: Any) -> Any:
        if self.throttled:
            from botocore.exceptions import ClientError

            error = {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}
            raise ClientError(error, "TransactWriteItems")  # type: ignore[arg-type]
        return self._client.transact_write_items(**params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_dynamodb_failure_when_due_raises_for_lambda_to_retry_and_the_retry_applies_once(
    scheduling: Scheduling,
) -> None:
    from singleton_flags_service.errors import StoreUnavailable

    created = body_of(scheduling.create(change()))
    client = ThrottledWrites(scheduling.api.client)
    store = FlagStore(client, scheduling.api.table, scheduling.api.module.DECLARATIONS, sleep=lambda _: None)
    items = ScheduleItems(client, scheduling.api.table, retention_seconds=RETENTION)
    runner = ScheduledChangeRunner(store, items, scheduling.api.module.DECLARATIONS, clock=scheduling.clock)
    # When DynamoDB throttles every transaction / Then the delivery raises (Lambda retries it), nothing written
    with pytest.raises(StoreUnavailable):
        runner.handle({"scheduled_change": created["id"]})
    assert scheduling.records() == []
    assert body_of(scheduling.api("GET", "/flags/schedules"))["schedules"][0]["status"] == "pending"
    # When Lambda's retry comes and DynamoDB is back / Then it is applied, once
    client.throttled = False
    assert runner.handle({"scheduled_change": created["id"]}).status == "applied"
    assert [record["version"] for record in scheduling.records()] == [1]
    assert runner.handle({"scheduled_change": created["id"]}).status == "not_pending"
