"""EventBridge crons evaluated in a time zone, as Scheduler fires them
(singleton_flags_service.maintenance.cron.next_occurrence)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from singleton_flags_service.maintenance.cron import CronError, next_occurrence, parse_cron


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "zone", "after", "expected"),
    [
        # Sundays 03:00 in Paris: winter (+01:00), then summer (+02:00) after the clocks went forward
        ("cron(0 3 ? * SUN *)", "Europe/Paris", "2026-01-01T00:00", "2026-01-04T03:00:00+01:00"),
        ("cron(0 3 ? * SUN *)", "Europe/Paris", "2026-04-01T00:00", "2026-04-05T03:00:00+02:00"),
        # strictly after: an occurrence at `after` itself is not next
        ("cron(0 3 ? * SUN *)", "Europe/Paris", "2026-01-04T02:00", "2026-01-11T03:00:00+01:00"),
        # day-of-week 1 is Sunday in EventBridge, 2#1 the first Monday, 6L the last Friday
        ("cron(0 12 ? * 1 *)", "UTC", "2026-01-01T00:00", "2026-01-04T12:00:00+00:00"),
        ("cron(0 12 ? * 2#1 *)", "UTC", "2026-01-01T00:00", "2026-01-05T12:00:00+00:00"),
        ("cron(0 12 ? * 6L *)", "UTC", "2026-01-01T00:00", "2026-01-30T12:00:00+00:00"),
        # Tokyo has no DST: 22:00 +09:00 is 13:00 UTC
        ("cron(0 22 * * ? *)", "Asia/Tokyo", "2026-06-01T12:00", "2026-06-01T22:00:00+09:00"),
        # spring forward in Paris (2026-03-29 02:00 -> 03:00): 02:30 does not exist that day, so it is skipped
        ("cron(30 2 * * ? *)", "Europe/Paris", "2026-03-28T02:00", "2026-03-30T02:30:00+02:00"),
        # fall back in Paris (2026-10-25 03:00 -> 02:00): 02:30 happens twice, the schedule fires once, the first
        ("cron(30 2 * * ? *)", "Europe/Paris", "2026-10-24T01:00", "2026-10-25T02:30:00+02:00"),
        ("cron(30 2 * * ? *)", "Europe/Paris", "2026-10-25T00:31", "2026-10-26T02:30:00+01:00"),
    ],
)
def test_next_occurrence_in_the_windows_zone(expression: str, zone: str, after: str, expected: str) -> None:
    moment = next_occurrence(parse_cron(expression), zone, utc(after))
    assert moment is not None
    assert moment.isoformat() == expected


def test_an_expression_that_never_fires_again_has_no_next_occurrence() -> None:
    assert next_occurrence(parse_cron("cron(0 3 1 1 ? 2020)"), "UTC", utc("2026-01-01T00:00")) is None


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("0 3 * * 0", "EventBridge cron"),
        ("cron(0 3 ? * SUN)", "6 fields"),
        ("cron(0 3 * * SUN *)", "exactly one of day-of-month"),
        ("cron(0 3 ? * 0 *)", "outside 1-7"),
    ],
)
def test_what_scheduler_refuses_is_refused_saying_why(expression: str, names: str) -> None:
    with pytest.raises(CronError, match=names):
        parse_cron(expression)
