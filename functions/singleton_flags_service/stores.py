"""The store every writer of the service uses: the write kernel (``singleton_flags_service.writes``), which knows
no feature, with the service's policies plugged in. A function, the local runner and the seed build their store
here, so no writer of the flags can leave a policy out.

The policies, each re-taken on every attempt on the state it read: protection (a gated kind of version never
changes a protected flag: ``singleton_flags_service.approvals.rules``). A stage is seeded here too
(``seed_stage``), so the local runner seeds exactly as a deploy's seed does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from singleton_flags.declarations import Declarations
from singleton_flags_service.approvals.protection import record_protection
from singleton_flags_service.approvals.rules import protection_policy
from singleton_flags_service.contract import Settings
from singleton_flags_service.writes.store import ChangeResult, FlagStore, WritePolicy

# (actor, reason, the flags' version) -> flag -> {"old", "new"} for each protection the deploy lowered
RecordProtection = Callable[..., dict[str, dict[str, Any]]]


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


def seed_stage(
    store: FlagStore,
    *,
    actor: str,
    reason: str,
    time_budget: float | None = None,
    protection: RecordProtection | None = None,
) -> tuple[ChangeResult, dict[str, dict[str, Any]]]:
    """What seeding a stage does, the same for a deploy's seed and the local runner's start: the store's seed, then
    the declarations' protection recorded, a lowering as its own audit kind at the version the seed left
    (``approvals.protection``). ``protection`` replaces that recording (the seed function's tests)."""
    result = store.seed(actor=actor, reason=reason, time_budget=time_budget)
    version = result.snapshot.version
    if protection is not None:
        return result, protection(actor=actor, reason=reason, version=version)
    lowered = record_protection(
        store.client,
        store.table_name,
        store.declarations,
        actor=actor,
        reason=reason,
        now=time.time(),
        retention_seconds=store.audit_retention_seconds,
        version=version,
    )
    return result, lowered
