"""Set flags in an application's unit tests, without DynamoDB.

``InMemoryFlags`` is a real ``Flags`` client whose DynamoDB client is an in-memory table: every read goes
through the same reader, snapshot and declarations as in production (fallbacks for a missing or unusable
value, STALE then DEFAULT while the table fails), only the GetItem is answered from memory. Its cache age is 0
by default, so a ``set`` is seen by the next read.

    from singleton_flags.testing import InMemoryFlags

    def test_signup_is_refused_in_maintenance(monkeypatch):
        flags = InMemoryFlags("flags.json", maintenance_mode=True)
        monkeypatch.setattr(app, "FLAGS", flags)
        ...

The pytest plugin (entry point ``singleton_flags``, loaded by pytest when the package is installed) offers the
same as a fixture, ``singleton_flags``, built from the fixture ``singleton_flags_declarations`` (a path or a
``Declarations``): override that one in your conftest.py, or set ``SINGLETON_FLAGS_DECLARATIONS``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from singleton_flags.client import ENV_DECLARATIONS, Flags
from singleton_flags.codec import encode
from singleton_flags.declarations import Declarations, FlagValue, load_declarations
from singleton_flags.keys import SINGLETON_SK, SORT_KEY, VERSION_ATTR, singleton_key

__all__ = ["InMemoryFlags", "InMemoryTable", "TableUnavailable"]

IN_MEMORY_TABLE = "in-memory"


class TableUnavailable(RuntimeError):
    """What the in-memory table raises while ``fail()`` is in effect (as a dead DynamoDB would)."""


class InMemoryTable:
    """A stand-in for the low-level DynamoDB client, answering ``get_item`` with the flags item held here."""

    def __init__(self, declarations: Declarations, values: dict[str, FlagValue] | None = None) -> None:
        self._declarations = declarations
        self.version = 0
        self.item: dict[str, Any] | None = None
        self.failing = False
        self.get_item_calls = 0
        self.set(**{**declarations.initials(), **(values or {})})

    def set(self, **values: FlagValue) -> None:
        """Store ``values`` (each checked against its declaration) as a new version of the item."""
        current = dict(self.item or {**singleton_key(SINGLETON_SK)})
        for name, value in values.items():
            spec = self._declarations.get(name)
            if spec is None:
                raise KeyError(f"no flag named {name!r} is declared")
            current[name] = encode(spec, spec.validate(value))
        self.version += 1
        current[VERSION_ATTR] = {"N": str(self.version)}
        self.item = current

    def put_attribute(self, name: str, attribute: dict[str, Any] | None) -> None:
        """Store a raw attribute (a wrong type, or None to remove it), as a hand edit of the table would."""
        current = dict(self.item or {**singleton_key(SINGLETON_SK)})
        if attribute is None:
            current.pop(name, None)
        else:
            current[name] = attribute
        self.item = current

    def delete(self) -> None:
        """The item is gone: readers serve the declared fallbacks."""
        self.item = None

    def fail(self) -> None:
        """Every GetItem fails from now on (until ``recover``)."""
        self.failing = True

    def recover(self) -> None:
        self.failing = False

    def get_item(self, *, TableName: str, Key: dict[str, Any], **_: Any) -> dict[str, Any]:  # noqa: N803 - boto3's names
        self.get_item_calls += 1
        if self.failing:
            raise TableUnavailable("the in-memory table is failing")
        if self.item is None or Key[SORT_KEY] != self.item[SORT_KEY]:
            return {}
        return {"Item": dict(self.item)}


class InMemoryFlags(Flags):
    """A ``Flags`` client over an ``InMemoryTable``; ``set``, ``delete``, ``fail`` and ``recover`` drive it."""

    def __init__(
        self,
        declarations: Declarations | str | os.PathLike[str],
        *,
        max_age: int = 0,
        max_stale: float = 300.0,
        clock: Callable[[], float] = time.time,
        **values: FlagValue,
    ) -> None:
        loaded = declarations if isinstance(declarations, Declarations) else load_declarations(Path(declarations))
        self.table = InMemoryTable(loaded, values)
        super().__init__(
            table_name=IN_MEMORY_TABLE,
            declarations=loaded,
            max_age=max_age,
            max_stale=max_stale,
            client=self.table,
            clock=clock,
        )

    def set(self, **values: FlagValue) -> None:
        self.table.set(**values)

    def delete(self) -> None:
        self.table.delete()

    def fail(self) -> None:
        self.table.fail()

    def recover(self) -> None:
        self.table.recover()


# -- the pytest plugin ----------------------------------------------------------------------------------------

try:
    import pytest
except ImportError:  # the module also works without pytest (InMemoryFlags alone)
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture
    def singleton_flags_declarations() -> Declarations | str:
        """The application's declarations: override this fixture, or set SINGLETON_FLAGS_DECLARATIONS."""
        path = os.environ.get(ENV_DECLARATIONS)
        if not path:
            pytest.fail(
                f"the singleton_flags fixture needs your declarations: override the fixture "
                f"'singleton_flags_declarations' in conftest.py, or set {ENV_DECLARATIONS}"
            )
        return path

    @pytest.fixture
    def singleton_flags(singleton_flags_declarations: Declarations | str) -> InMemoryFlags:
        """An ``InMemoryFlags`` at the declared initial values; ``set`` changes them for the next read."""
        return InMemoryFlags(singleton_flags_declarations)
