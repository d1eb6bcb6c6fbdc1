"""singleton-flags: application-wide flags in one DynamoDB item, read in-process.

What an application may import is public, and only that: the names of this module's ``__all__`` (``from
singleton_flags import Flags, Reason``), and the ``__all__`` of the two modules that need an extra's dependency,
which this module therefore never loads for you: ``singleton_flags.testing`` (an in-memory table and a pytest
fixture) and ``singleton_flags.openfeature`` (an OpenFeature provider, extra ``[openfeature]``). The CDK
helpers are their own package, ``singleton_flags_cdk`` (extra ``[cdk]``).

Every other module of the package is internal: its ``__all__`` names what the package and the service (which
pins this exact version) share, with no promise to applications; it may change in any release.

The names below are imported on first use, so that importing the package costs nothing, and a function that
imports one module (``from singleton_flags.reader import FlagReader``) loads only what that module uses: the read
function never imports the write path, pydantic or the client; no function imports the CDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from singleton_flags.client import FlagDetails, Flags, FlagsConfigError, FlagTypeMismatch, UndeclaredFlag
    from singleton_flags.declarations import Declarations, load_declarations
    from singleton_flags.snapshot import FlagState
    from singleton_flags.vocabulary import Reason

__all__ = [
    "Declarations",
    "FlagDetails",
    "FlagState",
    "FlagTypeMismatch",
    "Flags",
    "FlagsConfigError",
    "Reason",
    "UndeclaredFlag",
    "load_declarations",
]

_HOMES = {
    "Declarations": "singleton_flags.declarations",
    "load_declarations": "singleton_flags.declarations",
    "FlagDetails": "singleton_flags.client",
    "FlagTypeMismatch": "singleton_flags.client",
    "Flags": "singleton_flags.client",
    "FlagsConfigError": "singleton_flags.client",
    "UndeclaredFlag": "singleton_flags.client",
    "FlagState": "singleton_flags.snapshot",
    "Reason": "singleton_flags.vocabulary",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'singleton_flags' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
