"""A scheduled change of a protected flag is created only from an approved change request (moto: DynamoDB and
EventBridge Scheduler; the clock is frozen).

A request with a time (``at``) is bound to it; its last approval does not apply the change but creates the
scheduled change (the request's state ``scheduled``, naming it), in one transaction with the check that the bound
values still hold. When it comes due it is written as a version of kind ``change_request_applied`` naming the
request and its approvers, the only scheduled version the write path lets change a protected flag; a change it is
bound to that moved since makes it skip. Every other scheduled change touching a protected flag stays refused, at
creation and when it comes due.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from singleton_flags.keys import schedule_key
from singleton_flags_service.approvals.store import ChangeRequests
from singleton_flags_service.schedules.apply import ScheduledChangeRunner
from singleton_flags_service.schedules.changes import ScheduleItems
from singleton_flags_service.schedules.one_time import OneTimeSchedules
from singleton_flags_service.schedules.timing import parse_schedule_time
from singleton_flags_service.vocabulary import KIND_CHANGE_REQUEST
from tests.conftest import REGION, SCHEDULE_GROUP
from tests.support.approvals import ALICE, BOB, CAROL, ON_CALL
from tests.support.unit import Clock, WriteApi, body_of
from tests.unit import test_approvals_routes as routes
from tests.unit.test_approvals_routes import (
    REQUESTS,
    approve,
    create,
    created_id,
    error_of,
    versions,
)

approvals_api = routes.approvals_api  # the write function with protected declarations (a fixture)

RETENTION = 365 * 86400


@dataclass
class Timed:
    api: WriteApi
    scheduler: Any
    items: ScheduleItems
    runner: ScheduledChangeRunner
    clock: Clock

    def at(self, minutes: int) -> str:
        """A whole minute ``minutes`` ahead of the frozen clock, RFC 3339."""
        when = datetime.fromtimestamp(self.clock.now, UTC).replace(second=0, microsecond=0)
        return (when + timedelta(minutes=minutes)).isoformat()

    def deliver(self, schedule_id: str) -> dict[str, Any]:
        return self.runner.handle({"scheduled_change": schedule_id}).as_dict()

    def schedule_item(self, schedule_id: str) -> dict[str, Any]:
        item: dict[str, Any] = self.api.client.get_item(
            TableName=self.api.table, Key=schedule_key(schedule_id), ConsistentRead=True
        )["Item"]
        return item

    def schedule_names(self) -> list[str]:
        return [s["Name"] for s in self.scheduler.list_schedules(GroupName=SCHEDULE_GROUP)["Schedules"]]


@pytest.fixture
def timed(approvals_api: WriteApi, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Timed:
    """The write function's change requests with the scheduled changes' schedule group, and the runner that applies
    what a schedule delivers, all on the protected declarations."""
    scheduler = boto3.client("scheduler", region_name=REGION)
    scheduler.create_schedule_group(Name=SCHEDULE_GROUP)
    module = approvals_api.module
    schedules = OneTimeSchedules(scheduler, module.CONFIG.scheduled_changes)
    requests = ChangeRequests(approvals_api.client, approvals_api.table, module.STORE, clock=clock, scheduler=schedules)
    monkeypatch.setattr(module, "CHANGE_REQUESTS", requests)
    items = ScheduleItems(approvals_api.client, approvals_api.table, retention_seconds=RETENTION)
    runner = ScheduledChangeRunner(module.STORE, items, module.STORE.declarations, clock=clock)
    return Timed(approvals_api, scheduler, items, runner, clock)


def kill_switch(api: WriteApi) -> bool:
    return bool(api.module.STORE.current().values["kill_switch"])


def request_of(api: WriteApi, request_id: str) -> dict[str, Any]:
    return dict(body_of(api("GET", f"{REQUESTS}/{request_id}"))["change_request"])


def test_the_last_approval_of_a_timed_request_schedules_it_and_it_applies_when_due(timed: Timed):
    api = timed.api
    # Given a request to stop the application tomorrow
    at = timed.at(24 * 60)
    request_id = created_id(api, flags={"kill_switch": True}, at=at)
    assert request_of(api, request_id)["at"] == parse_schedule_time(at).iso
    # When its two approvals come
    assert body_of(approve(api, request_id, BOB))["applied"] is False
    answer = body_of(approve(api, request_id, CAROL))
    # Then nothing is applied now: the request is scheduled, naming its scheduled change, which has its schedule
    request = answer["change_request"]
    assert (answer["applied"], answer["version"], request["state"]) == (False, None, "scheduled")
    schedule_id = request["schedule"]
    assert kill_switch(api) is False
    assert timed.schedule_names() == [f"change-{schedule_id}"]
    item = timed.schedule_item(schedule_id)
    assert (item["status"]["S"], item["change_request"]["S"]) == ("pending", request_id)
    # And when it comes due, it applies as the approved request's version, naming the request and its approvers
    timed.clock.advance(24 * 3600)
    outcome = timed.deliver(schedule_id)
    assert outcome["status"] == "applied", outcome
    assert kill_switch(api) is True
    record = body_of(api.history())["records"][0]
    assert record["kind"] == KIND_CHANGE_REQUEST
    assert (record["change_request"], record["schedule"], record["requested_by"]) == (request_id, schedule_id, ALICE)
    assert [approval["principal"] for approval in record["approved_by"]] == [BOB, CAROL]


def test_a_schedule_of_a_protected_flag_not_made_by_an_approved_request_is_refused_when_due(timed: Timed):
    # Given a scheduled change of kill_switch made any other way (here: written as POST /flags/schedules writes it)
    when = parse_schedule_time(timed.at(60))
    timed.items.put_pending("20231114T221320Z-0000abcd", {"kill_switch": True}, "r", when, None, ALICE, timed.clock())
    before = versions(timed.api)
    # When it comes due
    timed.clock.advance(3600)
    outcome = timed.deliver("20231114T221320Z-0000abcd")
    # Then it is refused and marked failed, saying why; nothing is written
    assert outcome["status"] == "failed", outcome
    assert "protected" in outcome["detail"]
    assert versions(timed.api) == before
    assert kill_switch(timed.api) is False


def test_a_scheduled_request_whose_bound_flag_moved_is_skipped_when_due(timed: Timed):
    api = timed.api
    # Given a scheduled request of kill_switch and rate_limit
    request_id = created_id(api, flags={"kill_switch": True, "rate_limit": 5}, at=timed.at(60))
    approve(api, request_id, BOB)
    schedule_id = body_of(approve(api, request_id, CAROL))["change_request"]["schedule"]
    # When rate_limit moves before it comes due
    assert api.patch({"rate_limit": 7})["statusCode"] == 200
    before = versions(api)
    timed.clock.advance(3600)
    outcome = timed.deliver(schedule_id)
    # Then it is skipped, naming the flag; nothing is written
    assert outcome["status"] == "skipped", outcome
    assert "rate_limit" in outcome["detail"]
    assert versions(api) == before


def test_a_timed_request_expires_when_its_time_is_too_near_to_schedule(timed: Timed):
    api = timed.api
    request_id = created_id(api, flags={"maintenance_mode": True}, at=timed.at(10))
    timed.clock.advance(9 * 60)  # its time is less than 2 minutes ahead: Scheduler could not take it
    response = approve(api, request_id, BOB)
    assert error_of(response) == (409, "REQUEST_CLOSED")
    assert body_of(response)["error"]["state"] == "expired"
    assert timed.schedule_names() == []


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ({"at": "tomorrow"}, "at"),
        ({"at": "2023-11-14T22:14:00Z"}, "at_too_soon"),
        ({"timezone": "Europe/Paris"}, "at"),
        ({"at": "2023-11-15T22:14:00Z", "break_glass": True}, "at"),
    ],
)
def test_a_timed_request_takes_the_times_a_schedule_takes(timed: Timed, body: dict[str, Any], rule: str):
    response = create(timed.api, ON_CALL, flags={"kill_switch": True}, **body)
    assert error_of(response) == (400, "INVALID_REQUEST"), body_of(response)
    assert body_of(response)["error"]["rule"] == rule
    assert body_of(timed.api("GET", REQUESTS))["change_requests"] == []
