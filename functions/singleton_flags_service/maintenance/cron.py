"""EventBridge Scheduler's ``cron(min hour dom month dow year)`` expressions: validated, and evaluated.

One evaluation for the stack and the functions: cdk.json's windows are checked with it at synth (their length,
``singleton_flags_infra.config``), and the write function answers ``GET /flags/windows`` with it (each window's
next start and end in its IANA time zone). Evaluation is croniter's, over the expression translated into its dialect.

Daylight saving time as Scheduler applies it: a wall-clock time the zone skips (spring forward) has no
occurrence, and a wall-clock time the zone repeats (fall back) occurs once, at its first instance.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter


class CronError(ValueError):
    """An expression Scheduler would refuse, or one that cannot be evaluated; the message says which part."""


@dataclass(frozen=True, slots=True)
class _CronField:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()  # symbolic values, in order from ``low``
    question_mark: bool = False  # dom and dow accept '?'


_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")  # EventBridge: 1 = SUN ... 7 = SAT
_CRON_FIELDS = (
    _CronField("minutes", 0, 59),
    _CronField("hours", 0, 23),
    _CronField("day-of-month", 1, 31, question_mark=True),
    _CronField("month", 1, 12, names=_MONTHS),
    _CronField("day-of-week", 1, 7, names=_DAYS, question_mark=True),
    _CronField("year", 1970, 2199),
)
_CRON_PATTERN = re.compile(r"^cron\((?P<body>[^()]*)\)$")


@dataclass(frozen=True, slots=True)
class Cron:
    """An EventBridge cron expression split into its six fields, and its croniter (5 or 7 field) form."""

    fields: tuple[str, ...]
    croniter_form: str

    @property
    def expression(self) -> str:
        return f"cron({' '.join(self.fields)})"


def _cron_value(token: str, field: _CronField) -> int:
    upper = token.upper()
    if field.names and upper in field.names:
        return field.low + field.names.index(upper)
    if not token.isdigit():
        raise CronError(
            f"{field.name} value {token!r} is not a number"
            + (f" or one of {', '.join(field.names)}" if field.names else ""),
        )
    value = int(token)
    if not field.low <= value <= field.high:
        raise CronError(f"{field.name} value {value} is outside {field.low}-{field.high}")
    return value


def _croniter_value(value: int, field: _CronField) -> str:
    return str(value - 1) if field.name == "day-of-week" else str(value)  # croniter: 0 = Sunday


def _translate_part(part: str, field: _CronField) -> str:
    """Validate one comma-separated part of a field and return it in croniter's dialect."""
    if part == "*":
        return "*"
    if field.name == "day-of-month" and part == "L":
        return "L"
    if field.name == "day-of-month" and part == "LW":
        raise CronError(f"{field.name} 'LW' cannot be evaluated at synth; name the days explicitly")
    if field.name == "day-of-month" and part.endswith("W"):
        return f"{_cron_value(part[:-1], field)}W"
    if field.name == "day-of-week" and part.upper().endswith("L") and len(part) > 1:
        return f"L{_croniter_value(_cron_value(part[:-1], field), field)}"
    if field.name == "day-of-week" and "#" in part:
        day, _, nth = part.partition("#")
        if nth not in {"1", "2", "3", "4", "5"}:
            raise CronError(f"{field.name} {part!r}: the week after '#' must be 1-5")
        return f"{_croniter_value(_cron_value(day, field), field)}#{nth}"
    base, slash, step = part.partition("/")
    if slash and (not step.isdigit() or int(step) < 1):
        raise CronError(f"{field.name} {part!r}: the step after '/' must be a positive integer")
    if base == "*":
        translated = "*"
    elif "-" in base:
        first, _, last = base.partition("-")
        low, high = _cron_value(first, field), _cron_value(last, field)
        if low > high:
            raise CronError(f"{field.name} range {base!r} runs backwards")
        translated = f"{_croniter_value(low, field)}-{_croniter_value(high, field)}"
    else:
        translated = _croniter_value(_cron_value(base, field), field)
    return f"{translated}/{step}" if slash else translated


def parse_cron(expression: str) -> Cron:
    """Validate an EventBridge Scheduler ``cron(min hour dom month dow year)`` expression; CronError says why."""
    match = _CRON_PATTERN.match(expression.strip())
    if not match:
        raise CronError(
            f"must be an EventBridge cron expression 'cron(min hour dom month dow year)', got {expression!r}"
        )
    fields = tuple(match.group("body").split())
    if len(fields) != len(_CRON_FIELDS):
        raise CronError(f"a cron expression has 6 fields (min hour dom month dow year), got {len(fields)}")
    translated: list[str] = []
    for raw, field in zip(fields, _CRON_FIELDS, strict=True):
        if raw == "?":
            if not field.question_mark:
                raise CronError(f"'?' is only allowed in day-of-month or day-of-week, not in {field.name}")
            translated.append("*")
            continue
        translated.append(",".join(_translate_part(part, field) for part in raw.split(",")))
    if (fields[2] == "?") == (fields[4] == "?"):
        raise CronError("exactly one of day-of-month and day-of-week must be '?' (EventBridge rule)")
    minutes, hours, dom, month, dow, year = translated
    croniter_form = f"{minutes} {hours} {dom} {month} {dow}"
    if year != "*":
        croniter_form += f" 0 {year}"  # croniter's 7-field form: seconds, then year
    if not croniter.is_valid(croniter_form):
        raise CronError(f"{expression!r} cannot be evaluated (as {croniter_form!r})")
    return Cron(fields=fields, croniter_form=croniter_form)


def occurrences(cron: Cron, after: datetime) -> Iterator[datetime]:
    """Wall-clock (naive local) occurrences strictly after ``after``, until there are none (a year ran out)."""
    iterator = croniter(cron.croniter_form, after)
    while True:
        try:
            yield iterator.get_next(datetime)
        except CroniterBadDateError:
            return


def fires_at(cron: Cron, wall_clock: datetime) -> bool:
    """The expression fires at this wall-clock (naive local) minute."""
    return bool(croniter.match(cron.croniter_form, wall_clock))


def _exists(moment: datetime) -> bool:
    """The zone has this wall-clock time (it is not in a spring-forward gap)."""
    zone = moment.tzinfo
    return moment.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == moment.replace(tzinfo=None)


# A fall-back repeats at most a few hours: wall-clock occurrences are searched from this far before ``after``.
_REPEATED_HOURS = timedelta(hours=3)


def next_occurrence(cron: Cron, timezone: str, after: datetime) -> datetime | None:
    """The first occurrence strictly after ``after`` (an aware time), as Scheduler fires it in ``timezone``:
    an aware time in that zone (its offset on that date), or None when the expression never fires again."""
    zone = ZoneInfo(timezone)
    start = after.astimezone(zone).replace(tzinfo=None) - _REPEATED_HOURS
    for wall_clock in occurrences(cron, start):
        moment = wall_clock.replace(tzinfo=zone)  # fold 0: a repeated time is its first instance
        if _exists(moment) and moment > after:
            return moment
    return None
