"""The part of the stack-function contract that the read function reads, and that every other function shares: the
functions' names and handlers, the service's declarations, and the table's settings (``Settings``).

``singleton_flags_service.contract`` is the contract's one public home and re-exports all of this; it is apart so
that the read function's cold start builds its own settings only, not every function's (``contract`` defines the
others' at import). Nothing here is about another function than the table's readers and writers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from singleton_flags.declarations import Declarations, load_declarations
from singleton_flags.keys import SINGLETON_SK
from singleton_flags.settings import (
    DEFAULT_MAX_AGE_SECONDS,
    DEFAULT_MAX_STALE_SECONDS,
    MAX_AGE_LIMIT_SECONDS,
    MAX_STALE_LIMIT_SECONDS,
    SettingsError,
    int_setting,
)

__all__ = [
    "AUDIT_RETENTION_DAYS",
    "CHANGE_EVENTS_FUNCTION",
    "CHANGE_EVENTS_HANDLER",
    "DECLARATIONS_FILE",
    "DEFAULT_AUDIT_RETENTION_DAYS",
    "GUARD_ALARM_PREFIX",
    "GUARD_ALARM_PREFIX_PATTERN",
    "GUARD_ALARM_PREFIX_RULE",
    "GUARD_FUNCTION",
    "HANDLERS",
    "ITEM_SORT_KEY",
    "LOCAL_ACTOR",
    "MAINTENANCE_FUNCTION",
    "MAX_AGE",
    "MAX_STALE",
    "READ_FUNCTION",
    "RECONCILE_FUNCTION",
    "RECONCILE_HANDLER",
    "SEED_FUNCTION",
    "SEED_HANDLER",
    "TABLE_NAME",
    "WRITE_FUNCTION",
    "Integer",
    "Settings",
    "SettingsError",
    "load_service_declarations",
]

# The functions the stack deploys, by name; the API's serve the routes (singleton_flags_service.api.routes)
READ_FUNCTION = "read"
WRITE_FUNCTION = "write"
MAINTENANCE_FUNCTION = "maintenance"
GUARD_FUNCTION = "guard"
SEED_FUNCTION = "seed"
CHANGE_EVENTS_FUNCTION = "change_events"
RECONCILE_FUNCTION = "reconcile"

# Each API function's handler, relative to the functions' asset root
HANDLERS = {
    READ_FUNCTION: "singleton_flags_service.handlers.read_api.handler",
    WRITE_FUNCTION: "singleton_flags_service.handlers.write_api.handler",
    MAINTENANCE_FUNCTION: "singleton_flags_service.handlers.maintenance.handler",
    GUARD_FUNCTION: "singleton_flags_service.handlers.guard.handler",
}
SEED_HANDLER = "singleton_flags_service.handlers.seed.handler"
CHANGE_EVENTS_HANDLER = "singleton_flags_service.handlers.change_events.handler"
RECONCILE_HANDLER = "singleton_flags_service.handlers.reconcile.handler"

# The flags this service is deployed for: shipped in the functions' asset, read by every function at cold start.
DECLARATIONS_FILE = Path(__file__).with_name("declarations.json")


def load_service_declarations(path: Path = DECLARATIONS_FILE) -> Declarations:
    """The service's declarations (``DECLARATIONS_FILE`` unless another file is given)."""
    return load_declarations(path)


# ---------------------------------------------------------------------------------------------- variables


@dataclass(frozen=True, slots=True)
class Integer:
    """An integer variable: its name, its limits (both included) and its default (None: required)."""

    name: str
    low: int
    high: int
    default: int | None = None

    def read(self, env: Mapping[str, str]) -> int:
        if self.default is None and not env.get(self.name):
            raise SettingsError(f"{self.name} is required")
        return int_setting(env, self.name, self.default or 0, self.low, self.high)

    def write(self, value: int) -> str:
        """The variable's text; ``ValueError`` (at synth) for a value the reader would refuse."""
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            raise ValueError(f"{self.name} must be an integer between {self.low} and {self.high}, got {value!r}")
        return str(value)

    def within(self, low: int, high: int) -> tuple[int, int]:
        """A narrower range a deployment settles for, checked to lie inside what the reader accepts."""
        if not self.low <= low <= high <= self.high:
            raise ValueError(f"{low}-{high} is not inside {self.name}'s {self.low}-{self.high}")
        return low, high


TABLE_NAME = "TABLE_NAME"
ITEM_SORT_KEY = "FLAGS_ITEM_SK"  # not set by the stack: the item's shape moves by configuration (V1 -> V2)
# Powertools' own variable: it parses it itself on every get(), outside its error handling, so it is validated here
# once and passed explicitly as max_age.
MAX_AGE = Integer("POWERTOOLS_PARAMETERS_MAX_AGE", 0, MAX_AGE_LIMIT_SECONDS, DEFAULT_MAX_AGE_SECONDS)
MAX_STALE = Integer("FLAGS_MAX_STALE_SECONDS", 0, MAX_STALE_LIMIT_SECONDS, DEFAULT_MAX_STALE_SECONDS)
DEFAULT_AUDIT_RETENTION_DAYS = 365
AUDIT_RETENTION_DAYS = Integer("FLAGS_AUDIT_RETENTION_DAYS", 1, 3650, DEFAULT_AUDIT_RETENTION_DAYS)
LOCAL_ACTOR = "FLAGS_LOCAL_ACTOR"  # the local runner's fixed identity; never set in a deployed function
GUARD_ALARM_PREFIX = "FLAGS_GUARD_ALARM_PREFIX"
# Guarded changes watch CloudWatch alarms whose names start with this prefix (one EventBridge rule matches them by
# prefix). At least 8 characters, so that it cannot match most of an account's alarms; characters an alarm name
# takes (CloudWatch: printable ASCII), without spaces or wildcards.
GUARD_ALARM_PREFIX_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/#+=@-]{7,199}$")
GUARD_ALARM_PREFIX_RULE = "8-200 characters of letters, digits and ._:/#+=@- starting with a letter or digit"
_ITEM_SORT_KEY_PREFIX = "FLAGS#V"


def _guard_alarm_prefix(env: Mapping[str, str]) -> str:
    prefix = env.get(GUARD_ALARM_PREFIX, "")
    if prefix and not GUARD_ALARM_PREFIX_PATTERN.match(prefix):
        raise SettingsError(f"{GUARD_ALARM_PREFIX} must be {GUARD_ALARM_PREFIX_RULE}, got {prefix!r}")
    return prefix


@dataclass(frozen=True, slots=True)
class Settings:
    """What every function that reads or writes the table reads from its environment."""

    table_name: str
    item_sort_key: str = SINGLETON_SK
    max_age_seconds: int = DEFAULT_MAX_AGE_SECONDS
    max_stale_seconds: int = DEFAULT_MAX_STALE_SECONDS
    audit_retention_days: int = DEFAULT_AUDIT_RETENTION_DAYS
    local_actor: str | None = None  # the local runner's fixed identity; never set in a deployed function
    guard_alarm_prefix: str = ""  # the names a guard's alarms start with ("": guarded changes are refused)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Only ``TABLE_NAME`` is required; everything else has its default."""
        table_name = env.get(TABLE_NAME, "")
        if not table_name:
            raise SettingsError(f"{TABLE_NAME} is required")
        sort_key = env.get(ITEM_SORT_KEY, SINGLETON_SK)
        if not sort_key.startswith(_ITEM_SORT_KEY_PREFIX):
            raise SettingsError(f"{ITEM_SORT_KEY} must look like {_ITEM_SORT_KEY_PREFIX}<n>, got {sort_key!r}")
        return cls(
            table_name=table_name,
            item_sort_key=sort_key,
            max_age_seconds=MAX_AGE.read(env),
            max_stale_seconds=MAX_STALE.read(env),
            audit_retention_days=AUDIT_RETENTION_DAYS.read(env),
            local_actor=env.get(LOCAL_ACTOR) or None,
            guard_alarm_prefix=_guard_alarm_prefix(env),
        )
