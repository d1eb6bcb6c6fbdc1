"""A reader's settings rules, shared by every reader (the embedded client and the service's read function): the
cache age's and max-stale's limits and defaults, and how an integer setting is read from an environment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "DEFAULT_MAX_AGE_SECONDS",
    "DEFAULT_MAX_STALE_SECONDS",
    "MAX_AGE_LIMIT_SECONDS",
    "MAX_STALE_LIMIT_SECONDS",
    "SettingsError",
    "int_setting",
]

_INTEGER = re.compile(r"[0-9]{1,9}")
MAX_STALE_LIMIT_SECONDS = 3600
MAX_AGE_LIMIT_SECONDS = 3600
DEFAULT_MAX_AGE_SECONDS = 5  # Powertools' own default, restated for the docs
DEFAULT_MAX_STALE_SECONDS = 300


class SettingsError(ValueError):
    """A reader or function was deployed with a bad environment; raised at cold start, naming the variable."""


def int_setting(env: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    if not _INTEGER.fullmatch(raw):  # ASCII digits, counted first: int() also takes " 5", "+5" and "1_0"
        raise SettingsError(f"{key} must be an integer, got {raw!r}")
    value = int(raw)
    if not low <= value <= high:
        raise SettingsError(f"{key} must be between {low} and {high}, got {value}")
    return value
