"""Tables on the worker's moto, made once and copied into each test that asks for them.

Creating the flags table through the API (CreateTable, its waiter, UpdateTimeToLive) and seeding it (a
TransactWriteItems through the store) are most of a unit test's set-up. Their result is the same in every test
that starts from nothing: the worker makes each once, keeps a deep copy of moto's table (its items, key schema,
TTL and stream), and gives each later test its own copy of that copy. A copy is taken only of a set-up that
started from nothing (no table, or an empty one), so a test that wrote something first still runs its set-up for
real.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Hashable
from typing import Any


def _tables(region: str) -> dict[str, Any]:
    """moto's tables of the default account in ``region`` (the backend of the test's moto, emptied per test)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    tables: dict[str, Any] = dynamodb_backends[DEFAULT_ACCOUNT_ID][region].tables
    return tables


class TableCopies:
    """What one worker's set-ups made, by a key naming everything the set-up's result depends on."""

    def __init__(self) -> None:
        self._made: dict[Hashable, Any] = {}

    def create(self, key: Hashable, region: str, name: str, make: Callable[[], None]) -> None:
        """Table ``name`` as ``make`` creates it: made for real the first time (and whenever a table of that name
        already exists: ``make`` then fails as it would), copied after."""
        tables = _tables(region)
        if name in tables:
            make()
            return
        self._place(key, tables, name, make)

    def fill(self, key: Hashable, region: str, name: str, fill: Callable[[], None]) -> None:
        """Existing table ``name`` as ``fill`` leaves it: copied only when it is empty and described exactly as
        the table the copy was made from (an item, a stream record or another definition is a different start,
        so ``fill`` runs for real)."""
        tables = _tables(region)
        table = tables[name]
        stream = getattr(table, "stream_shard", None)
        if len(table) or (stream is not None and stream.items):
            fill()
            return
        definition = json.dumps([table.describe(), table.ttl], sort_keys=True, default=str)
        self._place((key, definition), tables, name, fill)

    def _place(self, key: Hashable, tables: dict[str, Any], name: str, make: Callable[[], None]) -> None:
        made = self._made.get(key)
        if made is None:
            make()
            self._made[key] = copy.deepcopy(tables[name])
        else:
            tables[name] = copy.deepcopy(made)


WORKER_TABLES = TableCopies()
"""This process's copies (one pytest-xdist worker: one moto)."""
