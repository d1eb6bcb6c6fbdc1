"""The singleton's Powertools parameters provider: ONE GetItem on the full key, never Query or Scan.

Powertools' stock DynamoDBProvider addresses items by a single partition key; ours has PK+SK, so we
subclass ``BaseProvider`` and implement ``_get`` / ``_get_multiple``. The instance lives at a handler's
module scope, so ``BaseProvider``'s cache (``max_age``, env ``POWERTOOLS_PARAMETERS_MAX_AGE``) lives in
the warm execution environment. The fetched item is decoded once, at fetch time, into a ``Snapshot``:
every declared flag is checked against its declaration, and an attribute that is missing or of the wrong
type yields that flag's fallback and a warning (once per fetch, never per request). An item carrying the
migration pointer is followed within the same fetch (one GetItem more: at most two per cache age), and what is
cached is the later item's values as the reader's declarations express them (``Snapshot.from_successor``).

That cache is the only one. A snapshot enters it through ``get`` (a fetch) or ``prime`` (a write of this
environment), leaves it with ``clear_cache()`` or a newer entry, and is read back from it by every read
(``cached``, ``cache_lookup``) while younger than its age.

This class is the one place that knows Powertools' cache from the inside (its ``store`` of ``ExpirableValue``
entries and ``_build_cache_key``): BaseProvider's public ``get`` costs several microseconds a call, too slow for
a cached read. A contract test pins what is relied on to the Powertools version it was checked against. Should
a Powertools release change it, a lookup finds nothing (it never raises) and reads go through ``get``: still
correct, only slower.
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
from singleton_flags.keys import MIGRATED_TO_ATTR, SINGLETON_SK, SUPERSEDED_BY_ATTR, singleton_key
from singleton_flags.snapshot import Snapshot

__all__ = ["SingletonProvider"]


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
        item = response.get("Item")
        if item is not None and MIGRATED_TO_ATTR in item and SUPERSEDED_BY_ATTR not in item:
            return self._follow(name, item, **sdk_options)
        return Snapshot.from_item(item, self._declarations, fetched_at=self._clock())

    def _follow(self, name: str, item: dict[str, Any], **sdk_options: Any) -> Snapshot:
        """The item points to a later one (a migration): one GetItem more, read through the mapping stored beside
        the pointer. Whatever cannot be followed is the declared fallbacks, with why (the one rule: on doubt, the
        fallbacks)."""
        from singleton_flags.migration import MappingError, read_pointer  # loaded by the first pointer seen

        pointer = item[MIGRATED_TO_ATTR].get("S") if isinstance(item[MIGRATED_TO_ATTR], dict) else None
        try:
            mapping = read_pointer(name, item)
        except MappingError as exc:
            return Snapshot.unfollowed(self._declarations, self._clock(), pointer, f"the pointer cannot be read: {exc}")
        self.fetches += 1
        response = self._client.get_item(TableName=self._table_name, Key=singleton_key(mapping.target), **sdk_options)
        later = response.get("Item")
        problem: str | None = None
        if later is None:
            problem = f"{mapping.target} is missing"
        elif SUPERSEDED_BY_ATTR in later:
            problem = f"{mapping.target} is itself superseded by {later[SUPERSEDED_BY_ATTR].get('S')!r}"
        elif MIGRATED_TO_ATTR in later:
            problem = f"{mapping.target} points further (a reader follows one pointer): switch this reader"
        if problem is not None:
            return Snapshot.unfollowed(self._declarations, self._clock(), mapping.target, problem)
        return Snapshot.from_successor(later, mapping, self._declarations, fetched_at=self._clock())

    def _get_multiple(self, path: str, **sdk_options: Any) -> dict[str, FlagValue]:  # type: ignore[override]  # typed values, not str
        """All flag values of the item at ``path`` (its sort key), as Powertools' get_multiple promises."""
        return dict(self._get(path, **sdk_options).values)

    def cached(self, name: str = SINGLETON_SK) -> Snapshot | None:
        """The snapshot ``get(name)`` would return without a call (cached, younger than its age); else None."""
        return self.cache_lookup(name)()

    def cache_lookup(self, name: str = SINGLETON_SK) -> Callable[[], Snapshot | None]:
        """``cached(name)`` as a function of no argument, for a reader that asks on every read.

        Each call reads the entry Powertools holds now: an entry replaced (a refresh, ``prime``, a hand edit) or
        dropped (``clear_cache()``) is seen at once. An entry's expiry, a naive ``datetime`` that Powertools
        compares with ``datetime.now()``, is converted once per entry to the ``time.monotonic`` clock (the same
        remaining age; a step of the wall clock no longer stretches or shortens it): what the lookup remembers
        is that expiry, never the entry or its value.
        """
        key = self._build_cache_key(name=name)
        monotonic, now = time.monotonic, datetime.now
        provider, snapshot_type = self, Snapshot
        expiry: tuple[object, float] = (None, 0.0)  # (the entry's ttl, that instant on the monotonic clock)

        def lookup() -> Snapshot | None:
            nonlocal expiry
            try:
                entry = provider.store.get(key)
                if entry is None:
                    return None
                ttl = entry.ttl
                seen, expires = expiry
                if ttl is not seen:  # a new entry (each holds a ttl object of its own): convert its expiry once
                    expires = monotonic() + (ttl - now()).total_seconds()
                    expiry = (ttl, expires)
                if monotonic() > expires:
                    return None
                value: object = entry.value
            except (AttributeError, TypeError):  # a cache not shaped as pinned: let ``get`` answer
                return None
            return value if type(value) is snapshot_type else None

        return lookup

    def prime(self, name: str, snapshot: Snapshot, max_age: int | None = None) -> None:
        """Cache a snapshot this environment just wrote (read-your-writes), with the usual max age.

        The age resolves exactly as ``BaseProvider.get`` resolves it (argument, else Powertools' env).
        """
        age = resolve_max_age(env=os.getenv(constants.PARAMETERS_MAX_AGE_ENV, DEFAULT_MAX_AGE_SECS), choice=max_age)
        self.add_to_cache(key=self._build_cache_key(name=name), value=snapshot, max_age=age)
