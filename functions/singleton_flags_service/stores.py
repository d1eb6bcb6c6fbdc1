"""The store every writer of the service uses: the write kernel (``singleton_flags_service.writes``), which knows
no feature, with the service's policies plugged in. A function, the local runner and the seed build their store
here, so no writer of the flags can leave a policy out.

The policies, each re-taken on every attempt on the state it read: protection (a gated kind of version never
changes a protected flag: ``singleton_flags_service.approvals.rules``).
"""

from __future__ import annotations

from typing import Any

from singleton_flags.declarations import Declarations
from singleton_flags_service.approvals.rules import protection_policy
from singleton_flags_service.contract import Settings
from singleton_flags_service.writes.store import FlagStore, WritePolicy


def service_policies(declarations: Declarations) -> tuple[WritePolicy, ...]:
    """The policies every store of the service obeys, for its declarations."""
    return (protection_policy(declarations),)


def function_store(client: Any, settings: Settings, declarations: Declarations, **options: Any) -> FlagStore:
    """A writing function's store (``FlagStore.for_function``: its table, bounds and published versions) with the
    service's policies."""
    return FlagStore.for_function(client, settings, declarations, policies=service_policies(declarations), **options)


def service_store(client: Any, table_name: str, declarations: Declarations, **options: Any) -> FlagStore:
    """A store of the service outside a function (the local runner's seed, scripts), with the service's
    policies; ``options`` as for ``FlagStore``."""
    return FlagStore(client, table_name, declarations, policies=service_policies(declarations), **options)
