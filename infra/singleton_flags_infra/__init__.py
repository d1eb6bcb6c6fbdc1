"""The CDK app of singleton-flags: a thin stack composing one construct per concern, and ``FlagsService``, the same
service in another stack.

The stack builds the routes, the handler names and the functions' environment from the very code that runs in
Lambda (the installed ``singleton_flags_service`` package), never retyped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from singleton_flags_infra.service import FlagsService

__all__ = ["FlagsService"]


def __getattr__(name: str) -> Any:
    # On first use: the local runner imports the configuration (pure Python) without loading aws-cdk-lib.
    if name == "FlagsService":
        from singleton_flags_infra.service import FlagsService

        return FlagsService
    raise AttributeError(f"module 'singleton_flags_infra' has no attribute {name!r}")
