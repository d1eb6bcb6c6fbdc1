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
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.shared import constants
from aws_lambda_powertools.shared.functions import resolve_max_age
from aws_lambda_powertools.utilities.parameters.base import BaseProvider
from aws_lambda_powertools.utilities.parameters.constants import DEFAULT_MAX_AGE_SECS

from singleton_flags.declarations import Declarations, FlagValue
from singleton_flags.keys import SINGLETON_SK, singleton_key
from singleton_flags.snapshot import Snapshot


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
    if TYPE_CHECKING:  # what get() returns here, for the type checker only: BaseProvider.get runs unchanged

        def get(  # type: ignore[override]
            self,
            name: str,
            max_age: int | None = None,
            transform: None = None,  # nothing to transform: a Snapshot is already typed
            force_fetch: bool = False,
            **sdk_options: Any,
        ) -> Snapshot: ...

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

    def cached_entry(self, name: str, snapshot: Snapshot) -> tuple[tuple[Any, ...], object, float] | None:
        """The cache key of ``name``, its entry (an object that changes whenever the entry is replaced) and when
        that entry expires on the ``time.monotonic`` clock, if the entry holds ``snapshot``; else None (nothing
        cached, the entry expired, or another thread's refresh replaced it meanwhile).

        Powertools keeps an entry's expiry as a naive ``datetime`` and compares it with ``datetime.now()`` on
        each ``get``; converted once to the monotonic clock, a reader can check it for a few tens of nanoseconds
        (the remaining age is the same; a step of the wall clock no longer stretches or shortens it).
        """
        key = self._build_cache_key(name=name)
        entry = self.store.get(key)
        cached: object = None if entry is None else entry.value  # Powertools types it str | bytes | dict
        if entry is None or cached is not snapshot:
            return None
        remaining = (entry.ttl - datetime.now()).total_seconds()
        return (key, entry, time.monotonic() + remaining) if remaining >= 0 else None

    def prime(self, name: str, snapshot: Snapshot, max_age: int | None = None) -> None:
        """Cache a snapshot this environment just wrote (read-your-writes), with the usual max age.

        The age resolves exactly as ``BaseProvider.get`` resolves it (argument, else Powertools' env).
        """
        age = resolve_max_age(env=os.getenv(constants.PARAMETERS_MAX_AGE_ENV, DEFAULT_MAX_AGE_SECS), choice=max_age)
        self.add_to_cache(key=self._build_cache_key(name=name), value=snapshot, max_age=age)
