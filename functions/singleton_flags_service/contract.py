"""The contract between the stack and the functions: what each function reads from its environment, validated
once at the edge (a handler's module scope).

Only ``TABLE_NAME`` is required; everything else has a default. The library below never reads
``os.environ`` itself: handlers build a ``Settings`` and pass what each part needs. The cache age is
Powertools' own ``POWERTOOLS_PARAMETERS_MAX_AGE``, validated here and passed explicitly as ``max_age``.
"""

from __future__ import annotations

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
    "DECLARATIONS_FILE",
    "MAX_AGE_LIMIT_SECONDS",
    "MAX_STALE_LIMIT_SECONDS",
    "ChangeEventSettings",
    "Settings",
    "SettingsError",
    "load_service_declarations",
]

# The flags this service is deployed for: shipped in the functions' asset, read by every function at cold start.
DECLARATIONS_FILE = Path(__file__).with_name("declarations.json")


def load_service_declarations(path: Path = DECLARATIONS_FILE) -> Declarations:
    """The service's declarations (``DECLARATIONS_FILE`` unless another file is given)."""
    return load_declarations(path)


@dataclass(frozen=True, slots=True)
class Settings:
    table_name: str
    item_sort_key: str = SINGLETON_SK
    max_age_seconds: int = DEFAULT_MAX_AGE_SECONDS
    max_stale_seconds: int = DEFAULT_MAX_STALE_SECONDS
    audit_retention_days: int = 365
    local_actor: str | None = None  # the local runner's fixed identity; never set in a deployed function
    guard_alarm_prefix: str = ""  # the names a guard's alarms start with ("": guarded changes are refused)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        table_name = env.get("TABLE_NAME", "")
        if not table_name:
            raise SettingsError("TABLE_NAME is required")
        sort_key = env.get("FLAGS_ITEM_SK", SINGLETON_SK)
        if not sort_key.startswith("FLAGS#V"):
            raise SettingsError(f"FLAGS_ITEM_SK must look like FLAGS#V<n>, got {sort_key!r}")
        return cls(
            table_name=table_name,
            item_sort_key=sort_key,
            # Powertools parses this itself on every get(), outside its error handling: validate it once here
            max_age_seconds=int_setting(
                env, "POWERTOOLS_PARAMETERS_MAX_AGE", DEFAULT_MAX_AGE_SECONDS, 0, MAX_AGE_LIMIT_SECONDS
            ),
            max_stale_seconds=int_setting(
                env, "FLAGS_MAX_STALE_SECONDS", DEFAULT_MAX_STALE_SECONDS, 0, MAX_STALE_LIMIT_SECONDS
            ),
            audit_retention_days=int_setting(env, "FLAGS_AUDIT_RETENTION_DAYS", 365, 1, 3650),
            local_actor=env.get("FLAGS_LOCAL_ACTOR") or None,
            guard_alarm_prefix=env.get("FLAGS_GUARD_ALARM_PREFIX", ""),
        )


@dataclass(frozen=True, slots=True)
class ChangeEventSettings:
    """The change-events function's configuration: the bus it publishes to and the stage its events name."""

    event_bus_name: str
    stage: str

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ChangeEventSettings:
        bus, stage = env.get("EVENT_BUS_NAME", ""), env.get("FLAGS_STAGE", "")
        if not bus:
            raise SettingsError("EVENT_BUS_NAME is required")
        if not stage:
            raise SettingsError("FLAGS_STAGE is required")
        return cls(event_bus_name=bus, stage=stage)
