"""The singleton's Powertools parameters provider: ONE GetItem on the full key, never Query or Scan.

Powertools' stock DynamoDBProvider addresses items by a single partition key; ours has PK+SK, so we
subclass ``BaseProvider`` and implement ``_get`` / ``_get_multiple``. The instance lives at a handler's
module scope, so ``BaseProvider``'s cache (``max_age``, env ``POWERTOOLS_PARAMETERS_MAX_AGE``) lives in
the warm execution environment. The fetched item is decoded once, at fetch time, into a ``Snapshot``:
every declared flag is checked against its declaration, and an attribute that is missing or of the wrong
type yields that flag's fallback and a warning (once per fetch, never per request).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_max_age
from aws_lambda_powertools.utilities.parameters.base import BaseProvider
from aws_lambda_powertools.utilities.parameters.constants import DEFAULT_MAX_AGE_SECS

from singleton_flags.codec import decode
from singleton_flags.declarations import Declarations, FlagValue
from singleton_flags.keys import (
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_FLAG,
    MAINTENANCE_OWNER_ATTR,
    SINGLETON_SK,
    UPDATED_AT_ATTR,
    UPDATED_BY_ATTR,
    VERSION_ATTR,
    singleton_key,
)
from singleton_flags.observability import logger


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The singleton as fetched: declared values (fallbacks where unusable) and bookkeeping."""

    found: bool
    values: Mapping[str, FlagValue]
    version: int | None
    fetched_at: float  # epoch seconds
    updated_at: str | None = None
    updated_by: str | None = None
    maintenance_owner: str | None = None
    maintenance_deadline: float | None = None
    fallen_back: tuple[str, ...] = field(default=())  # flags whose stored value was missing or invalid

    def window_ended(self, now: float) -> bool:
        """A window switched maintenance on and its stored deadline has passed (its end never came)."""
        return (
            self.values.get(MAINTENANCE_FLAG) is True
            and self.maintenance_owner is not None
            and self.maintenance_deadline is not None
            and now >= self.maintenance_deadline
        )

    def effective_values(self, now: float) -> Mapping[str, FlagValue]:
        """What every answer serves at ``now``: the values, with maintenance off once its window is over.

        The one place that rule lives: reads, write answers, reverts and window decisions all call it.
        """
        return {**self.values, MAINTENANCE_FLAG: False} if self.window_ended(now) else self.values

    @classmethod
    def missing(cls, declarations: Declarations, fetched_at: float) -> Snapshot:
        return cls(found=False, values=declarations.fallbacks(), version=None, fetched_at=fetched_at)

    @classmethod
    def from_item(cls, item: Mapping[str, Any] | None, declarations: Declarations, fetched_at: float) -> Snapshot:
        if item is None:
            return cls.missing(declarations, fetched_at)
        values: dict[str, FlagValue] = {}
        fallen_back: list[str] = []
        for name, spec in declarations.items():
            attribute = item.get(name)
            try:
                if attribute is None:
                    raise ValueError("attribute is missing")
                value = decode(spec, attribute)
                broken = spec.violation(value)
                if broken is not None:
                    raise ValueError(f"stored value {value!r} breaks rule '{broken[0]}'")
            except (ValueError, TypeError, AttributeError) as exc:  # any shape the declaration does not allow
                fallen_back.append(name)
                logger.warning("flag unusable in the item, serving its fallback", flag=name, problem=str(exc))
                value = spec.fallback
            values[name] = value
        deadline = _number_or_none(item.get(MAINTENANCE_DEADLINE_ATTR))
        return cls(
            found=True,
            values=values,
            version=_int_or_none(item.get(VERSION_ATTR, {}).get("N")),
            fetched_at=fetched_at,
            updated_at=item.get(UPDATED_AT_ATTR, {}).get("S"),
            updated_by=item.get(UPDATED_BY_ATTR, {}).get("S"),
            maintenance_owner=item.get(MAINTENANCE_OWNER_ATTR, {}).get("S"),
            maintenance_deadline=deadline,
            fallen_back=tuple(fallen_back),
        )


def _number_or_none(attribute: Any) -> float | None:
    try:
        return float(attribute["N"])
    except (KeyError, TypeError, ValueError):
        return None


def _int_or_none(raw: str | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


class SingletonProvider(BaseProvider):
    """``get(sort_key)`` returns the cached ``Snapshot`` of the item (PK=SETTINGS#APP, SK=sort_key)."""

    def __init__(
        self,
        *,
        client: Any,
        table_name: str,
        declarations: Declarations,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(client=client)  # type: ignore[no-untyped-call]  # Powertools' BaseProvider.__init__ is unannotated
        self._client = client
        self._table_name = table_name
        self._declarations = declarations
        self._clock = clock
        self.fetches = 0  # GetItem calls made: tells a fresh value from a cached one, and feeds the bench

    # BaseProvider types cached values as str | bytes | dict; it stores and returns ours, Snapshots, untouched.
    def _get(self, name: str = SINGLETON_SK, **sdk_options: Any) -> Snapshot:  # type: ignore[override]
        self.fetches += 1
        response = self._client.get_item(TableName=self._table_name, Key=singleton_key(name), **sdk_options)
        return Snapshot.from_item(response.get("Item"), self._declarations, fetched_at=self._clock())

    def _get_multiple(self, path: str, **sdk_options: Any) -> dict[str, FlagValue]:  # type: ignore[override]  # typed values, not str
        """All flag values of the item at ``path`` (its sort key), as Powertools' get_multiple promises."""
        return dict(self._get(path, **sdk_options).values)

    def is_fresh(self, name: str = SINGLETON_SK) -> bool:
        """True while a cached snapshot of ``name`` is younger than its max age."""
        return self.has_not_expired_in_cache(self._build_cache_key(name=name))

    def prime(self, name: str, snapshot: Snapshot, max_age: int | None = None) -> None:
        """Cache a snapshot this environment just wrote (read-your-writes), with the usual max age.

        The age resolves exactly as ``BaseProvider.get`` resolves it (argument, else Powertools' env).
        """
        age = resolve_max_age(env=os.getenv(constants.PARAMETERS_MAX_AGE_ENV, DEFAULT_MAX_AGE_SECS), choice=max_age)
        self.add_to_cache(key=self._build_cache_key(name=name), value=snapshot, max_age=age)
