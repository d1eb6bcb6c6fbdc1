"""SnapStart: a reader forgets, after each restore, what its snapshot made every restored environment share.

With SnapStart, Lambda runs a function's init once, when a version is published, and resumes every new execution
environment of that version from one snapshot of its memory. What a reader kept at init is then shared by all of
them and may be hours old: the cached item, the cache lookup's expiry converted to the monotonic clock, the back-off
state, and the jitter generator's state (every restored environment would draw the same back-off delays).

Lambda's Python runtimes ship ``snapshot_restore_py``, whose ``register_after_restore`` runs a callable after each
restore, before the first invocation, inside the restore's time limit. Where it is importable, every reader is
registered (``register_reset``): after a restore it resets (``FlagReader.reset``). Where it is not (outside Lambda,
or a runtime without it) nothing is registered and nothing changes.

A hook does no I/O (the next read fetches, on the invocation's time) and never raises: a failed reset is logged and
the environment serves on (a hook's exception would fail the restore). A reader that is gone is skipped: the hook
holds it weakly.
"""

from __future__ import annotations

import logging
import weakref
from typing import Protocol

__all__ = ["RESTORE_HOOKS_MODULE", "Resettable", "register_reset"]

logger = logging.getLogger(__name__)

RESTORE_HOOKS_MODULE = "snapshot_restore_py"  # Lambda's runtime hooks for Python (SnapStart)


class Resettable(Protocol):
    def reset(self) -> None: ...


def register_reset(target: Resettable) -> bool:
    """Have the runtime call ``target.reset()`` after each SnapStart restore; False where it offers no hooks."""
    try:
        from snapshot_restore_py import register_after_restore  # type: ignore[import-not-found]  # Lambda's runtime
    except ImportError:
        return False
    held = weakref.ref(target)

    def after_restore() -> None:
        current = held()
        if current is None:
            return
        try:
            current.reset()
        except Exception:  # never fail the restore: the environment still serves, its reads still fetch
            logger.exception("resetting a flags reader after a SnapStart restore failed")

    register_after_restore(after_restore)
    return True
