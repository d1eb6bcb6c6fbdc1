"""When a scheduled change applies: the ``at`` (and ``timezone``) of ``POST /flags/schedules``, checked.

Two forms, both whole minutes (seconds ``:00``, Scheduler's precision is the minute):

- RFC 3339 with an offset, ``2027-03-01T09:00:00+01:00`` or ``...Z``, with no ``timezone``: one instant;
- a local time ``2027-03-01T09:00:00`` plus an IANA ``timezone`` (``Europe/Paris``): the wall-clock time in
  that zone, daylight saving time included. A local time the zone skips (the spring-forward gap) is refused;
  one it repeats (the autumn fall-back) is its FIRST occurrence (``fold=0``).

Either way the result is one UTC instant; the schedule is created at that instant (``at(...)`` in UTC), so
which of two repeated local times fires never depends on how Scheduler resolves an ambiguous local time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from singleton_flags_service.errors import InvalidRequest

MIN_LEAD = timedelta(minutes=2)  # Scheduler needs time to create it; a nearer change is a PATCH
MAX_LEAD = timedelta(days=366)

_RFC3339 = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})")
_FRACTION = re.compile(r"\.([0-9]+)")
_LOCAL = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")
_ZONE = re.compile(r"[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*")
_UTC = "UTC"
# Files of a zoneinfo directory that are no IANA zone name: the host's own setting (its meaning is whatever the
# machine running the function is set to), the POSIX-rules default, the "unset" placeholder, and the two copies
# of the whole database (POSIX-style, and counting leap seconds).
_NOT_ZONES = frozenset({"localtime", "posixrules", "Factory"})
_NOT_ZONE_TREES = ("posix/", "right/")


@dataclass(frozen=True, slots=True)
class ScheduleTime:
    """One instant (``utc``), and how it was asked for: the local time and zone, or the offset form in UTC."""

    utc: datetime  # aware, UTC
    local: str  # yyyy-mm-ddThh:mm:ss as given (in ``timezone``), or the UTC time for the offset form
    timezone: str  # the IANA zone given, or "UTC"

    @property
    def iso(self) -> str:
        return self.utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def _refuse(message: str, rule: str = "at") -> InvalidRequest:
    return InvalidRequest(message, rule=rule, field="at")


def _whole_minute(moment: datetime, text: str) -> None:
    """Seconds :00 and no fraction but zeros, read from the text itself: datetime keeps six fractional digits and
    drops the rest (``:00.000000001`` would pass as a whole minute)."""
    fraction = _FRACTION.search(text)
    if moment.second or moment.microsecond or (fraction is not None and fraction.group(1).strip("0")):
        raise _refuse(f"'at' must be a whole minute (seconds :00, Scheduler's precision), got {text!r}", "at_seconds")


def _zone(name: Any) -> ZoneInfo:
    if not isinstance(name, str) or not _ZONE.fullmatch(name) or len(name) > 64:
        raise InvalidRequest(
            f"'timezone' must be an IANA time zone name such as 'Europe/Paris', got {name!r}",
            rule="timezone",
            field="timezone",
        )
    if name in _NOT_ZONES or name.startswith(_NOT_ZONE_TREES):
        raise InvalidRequest(
            f"'timezone' {name!r} is a file of the host's zone database, not an IANA time zone name such as "
            "'Europe/Paris'",
            rule="timezone",
            field="timezone",
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidRequest(
            f"'timezone' {name!r} is not an IANA time zone this service knows", rule="timezone", field="timezone"
        ) from None


def parse_schedule_time(at: Any, timezone: Any = None) -> ScheduleTime:
    """``at`` (and ``timezone``) as one UTC instant, or the precise refusal. Relative bounds: ``check_lead``."""
    if not isinstance(at, str):
        raise _refuse(
            "'at' is required: an RFC 3339 time with its offset (2027-03-01T09:00:00+01:00) or a local time "
            "(2027-03-01T09:00:00) with 'timezone'"
        )
    if _RFC3339.fullmatch(at):
        if timezone is not None:
            raise InvalidRequest(
                "'at' has an offset: give either an offset or a 'timezone', not both", rule="timezone", field="timezone"
            )
        try:
            moment = datetime.fromisoformat(at)
            utc = moment.astimezone(UTC)
        except (ValueError, OverflowError):  # no such date, or one that leaves datetime's range once in UTC
            raise _refuse(f"'at' is not a valid date and time: {at!r}") from None
        _whole_minute(moment, at)
        return ScheduleTime(utc=utc, local=utc.strftime("%Y-%m-%dT%H:%M:%S"), timezone=_UTC)
    if not _LOCAL.fullmatch(at):
        raise _refuse(f"'at' must be YYYY-MM-DDTHH:MM:SS with an offset (Z, +01:00) or with a 'timezone', got {at!r}")
    if timezone is None:
        raise InvalidRequest(
            f"'at' {at!r} is a local time: give its IANA 'timezone' (e.g. 'Europe/Paris'), or an offset",
            rule="timezone",
            field="timezone",
        )
    zone = _zone(timezone)
    try:
        wall = datetime.fromisoformat(at)
    except ValueError:
        raise _refuse(f"'at' is not a valid date and time: {at!r}") from None
    _whole_minute(wall, at)
    try:
        utc = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
        back = utc.astimezone(zone).replace(tzinfo=None)
    except (ValueError, OverflowError):  # a wall time that leaves datetime's range once in UTC
        raise _refuse(f"'at' is not a valid date and time: {at!r}") from None
    if back != wall:  # the zone skips this wall time
        raise _refuse(
            f"'at' {at} does not exist in {timezone} (the clocks skip it, daylight saving time); pick a time "
            "outside the gap",
            "at_nonexistent",
        )
    return ScheduleTime(utc=utc, local=at, timezone=timezone)


def check_lead(when: ScheduleTime, now: float) -> None:
    """Between 2 minutes and 366 days ahead of ``now`` (epoch seconds), both bounds included."""
    current = datetime.fromtimestamp(now, UTC)
    if when.utc < current + MIN_LEAD:
        raise _refuse(
            f"'at' ({when.iso}) must be at least {int(MIN_LEAD.total_seconds() // 60)} minutes ahead "
            f"(now {current.strftime('%Y-%m-%dT%H:%M:%SZ')}); for a change now, PATCH /flags",
            "at_too_soon",
        )
    if when.utc > current + MAX_LEAD:
        raise _refuse(f"'at' ({when.iso}) must be at most {MAX_LEAD.days} days ahead", "at_too_far")
