"""What a reader is served, and why: fresh, cached, stale or fail-closed fallbacks.

Reasons follow OpenFeature's vocabulary:
- STATIC: fetched from the table by this read;
- CACHED: served from the warm environment's cache (younger than max_age);
- STALE: the table failed; the last good value, younger than ``max_stale``, is served;
- DEFAULT: the declared fallbacks (item missing, or no usable value): features off, maintenance ON.

A cached read that can only repeat the previous one (same cached item, still within its age, no maintenance
deadline that could pass meanwhile) returns the previous state object itself: no call into the provider's
cache, no new state (``_Repeat``).

After a failed fetch the reader backs off (exponential with jitter, capped) instead of calling DynamoDB
on every request. A window whose end never arrived still ends: a maintenance switched on by a window is
reported off once the deadline stored with it has passed (``maintenance_deadline_passed``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from singleton_flags.codec import iso_time
from singleton_flags.declarations import Declarations, FlagValue
from singleton_flags.emf import NO_COUNT, Counter
from singleton_flags.keys import MAINTENANCE_FLAG, SINGLETON_SK
from singleton_flags.provider import SingletonProvider
from singleton_flags.snapshot import Snapshot
from singleton_flags.vocabulary import CACHED, DEFAULT, STALE, STATIC

logger = logging.getLogger(__name__)  # the library's logger (stdlib); the functions attach Powertools' handler


@dataclass(frozen=True, slots=True)
class FlagState:
    values: Mapping[str, FlagValue]
    version: int | None
    reason: str
    fetched_at: float | None
    maintenance_deadline_passed: bool = False
    fallen_back: tuple[str, ...] = ()  # flags served as their fallback although the item was read (missing, wrong type)
    maintenance_owner: str | None = None  # the window the item says switched maintenance on
    maintenance_deadline: float | None = None  # epoch seconds: when that window's hold ends

    def maintenance(self) -> dict[str, bool | str | None]:
        """Who holds maintenance: ``held_by`` "window" (the item names a window whose deadline has not passed),
        "manual" (on otherwise: by hand, or as the fail-closed fallback) or None (off), with that window and its
        deadline (RFC 3339, UTC) when a window holds it."""
        on = self.values.get(MAINTENANCE_FLAG) is True
        held_by_window = on and self.maintenance_owner is not None
        deadline = self.maintenance_deadline if held_by_window else None
        return {
            "on": on,
            "held_by": ("window" if held_by_window else "manual") if on else None,
            "window": self.maintenance_owner if held_by_window else None,
            "deadline": iso_time(deadline) if deadline is not None else None,
        }


@dataclass(frozen=True, slots=True)
class _Repeat:
    """A CACHED state that every read may return while the provider's cache entry it was built from is the one
    cached (``store[key] is entry``: a refresh, a prime, a cleared or expired-by-hand cache all replace or drop
    it) and younger than its age (``expires``, monotonic). Only made for a snapshot whose maintenance has no
    deadline to pass, so the state does not depend on the time of the read."""

    state: FlagState
    key: tuple[object, ...]
    entry: object
    expires: float


def flag_reason(state: FlagState, name: str) -> str:
    """The reason of one flag: DEFAULT when that flag fell back, whatever the reason of the others."""
    return DEFAULT if name in state.fallen_back else state.reason


class FlagReader:
    def __init__(
        self,
        provider: SingletonProvider,
        declarations: Declarations,
        *,
        sort_key: str = SINGLETON_SK,
        max_age: int | None = None,
        max_stale: float = 300.0,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
        counter: Counter | None = None,
    ) -> None:
        self.provider = provider
        self._declarations = declarations
        self._sort_key = sort_key
        self._max_age = max_age
        self._max_stale = max_stale
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._clock = clock
        self._jitter = jitter
        self._counter = counter or NO_COUNT  # the functions pass observability's ReadCounter
        self._last_good: Snapshot | None = None
        self._failures = 0
        self._retry_at = 0.0
        self._repeat: _Repeat | None = None

    def read(self) -> FlagState:
        repeat = self._repeat
        if repeat is not None:
            if self.provider.store.get(repeat.key) is repeat.entry and time.monotonic() < repeat.expires:
                self._counter.record(CACHED)
                return repeat.state
            self._repeat = None
        now = self._clock()
        if self._failures and now < self._retry_at and not self.provider.is_fresh(self._sort_key):
            state = self._degraded(now)  # backing off: do not call DynamoDB again yet
            self._counter.record(state.reason)
            return state
        fetches_before = self.provider.fetches
        try:
            snapshot = self.provider.get(self._sort_key, max_age=self._max_age)
        except GetParameterError as exc:
            self._failures += 1
            failed_at = self._clock()  # the window starts when the call gave up, not when it started
            delay = min(self._backoff_max, self._backoff_base * 2 ** (self._failures - 1))
            self._retry_at = failed_at + delay * (0.5 + self._jitter() / 2)
            state = self._degraded(failed_at)
            logger.warning(
                "cannot read the flags item, serving degraded values",
                extra={
                    "reason": state.reason,
                    "version": state.version,
                    "error": str(exc),
                    "consecutive_failures": self._failures,
                    "retry_in_seconds": round(self._retry_at - failed_at, 3),
                },
            )
            self._counter.record(state.reason, refresh_failed=True)
            return state
        refreshed = self.provider.fetches != fetches_before
        self._failures = 0
        if snapshot.found:
            self._last_good = snapshot
        elif refreshed:
            logger.warning("the flags item is missing, serving declared fallbacks", extra={"sort_key": self._sort_key})
        reason = DEFAULT if not snapshot.found else (STATIC if refreshed else CACHED)
        state = self._state(snapshot, reason, now)
        if reason == CACHED and not _has_window_deadline(snapshot):
            self._repeat = self._repeatable(snapshot, state)
        self._counter.record(reason, refreshed=refreshed)
        return state

    def _repeatable(self, snapshot: Snapshot, state: FlagState) -> _Repeat | None:
        cached = self.provider.cached_entry(self._sort_key, snapshot)
        return None if cached is None else _Repeat(state, *cached)

    def prime(self, snapshot: Snapshot) -> None:
        """This environment just wrote ``snapshot``: serve it from now on (read-your-writes)."""
        self.provider.prime(self._sort_key, snapshot, self._max_age)  # a new cache entry: ends any repeat
        self._last_good = snapshot
        self._failures = 0

    def _degraded(self, now: float) -> FlagState:
        last = self._last_good
        if last is not None and now - last.fetched_at <= self._max_stale:
            return self._state(last, STALE, now)
        return FlagState(values=self._declarations.fallbacks(), version=None, reason=DEFAULT, fetched_at=None)

    def _state(self, snapshot: Snapshot, reason: str, now: float) -> FlagState:
        values = snapshot.effective_values(now)
        if reason == DEFAULT:
            return FlagState(values=values, version=None, reason=reason, fetched_at=snapshot.fetched_at)
        return FlagState(
            values=values,
            version=snapshot.version,
            reason=reason,
            fetched_at=snapshot.fetched_at,
            maintenance_deadline_passed=snapshot.window_ended(now),
            fallen_back=snapshot.fallen_back,
            maintenance_owner=snapshot.maintenance_owner,  # FlagState.maintenance reads them against the values
            maintenance_deadline=snapshot.maintenance_deadline,
        )


def _has_window_deadline(snapshot: Snapshot) -> bool:
    """Maintenance is on with an owner and a deadline: ``window_ended`` may turn true between two reads."""
    return (
        snapshot.values.get(MAINTENANCE_FLAG) is True
        and snapshot.maintenance_owner is not None
        and snapshot.maintenance_deadline is not None
    )
