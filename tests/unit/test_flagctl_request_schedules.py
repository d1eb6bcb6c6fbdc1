"""``flagctl request create --at``: a change request with a time, which its last approval schedules (no network: a
fake transport records what flagctl sends and answers a canned response)."""

from __future__ import annotations

from flagctl.cli import OK
from tests.unit.test_flagctl_approvals import BASE, BOB, REQUEST_ID, FakeTransport, change_request, run, sent_json

AT = "2027-03-01T09:00:00Z"


def test_create_with_at_sends_the_time_and_its_zone_and_prints_it():
    # Given
    transport = FakeTransport(201, {"change_request": change_request(at=AT, timezone="Europe/Paris")})
    # When
    code, out, _ = run(
        ["request", "create", "maintenance_mode=true", "--reason", "migration",
         "--at", "2027-03-01T10:00:00", "--timezone", "Europe/Paris"],
        transport,
    )  # fmt: skip
    # Then the time goes as the API takes it, and the request says when it applies
    (sent,) = transport.sent
    assert (sent.method, sent.url) == ("POST", BASE)
    assert sent_json(sent) == {
        "flags": {"maintenance_mode": True},
        "reason": "migration",
        "at": "2027-03-01T10:00:00",
        "timezone": "Europe/Paris",
    }
    assert code == OK
    assert f"at         {AT}" in out.splitlines()


def test_the_last_approval_of_a_timed_request_says_it_is_scheduled():
    scheduled = change_request(
        state="scheduled", at=AT, schedule="20270228T080000Z-0a1b2c3d", approvals=[{"principal": BOB, "at": "T1"}]
    )
    transport = FakeTransport(200, {"change_request": scheduled, "applied": False, "version": None})
    code, out, _ = run(["request", "approve", REQUEST_ID], transport)
    assert code == OK
    assert out.splitlines()[0] == f"approved: the change is scheduled for {AT} (20270228T080000Z-0a1b2c3d)"
    assert "state      scheduled: approved; its scheduled change applies it at its time" in out
