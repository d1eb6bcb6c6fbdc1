"""singleton-flags: application-wide flags in one DynamoDB item, read in-process.

For applications: ``from singleton_flags import Flags`` (the embedded client, ``singleton_flags.client``),
``singleton_flags.testing`` (an in-memory table and a pytest fixture), ``singleton_flags.openfeature`` (an
OpenFeature provider, extra ``[openfeature]``) and ``singleton_flags_cdk.construct`` (the CDK construct, extra
``[cdk]``).
The names below are imported on first use, so that importing the package costs nothing, and a function that
imports one module (``from singleton_flags.reader import FlagReader``) loads only what that module uses: the read
function never imports the write path, pydantic or the client; no function imports the CDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from singleton_flags.client import FlagDetails, Flags, FlagsConfigError, FlagTypeMismatch, UndeclaredFlag
    from singleton_flags.declarations import Declarations, load_declarations

__all__ = [
    "Declarations",
    "FlagDetails",
    "FlagTypeMismatch",
    "Flags",
    "FlagsConfigError",
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
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'singleton_flags' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
