"""What a reader is served, and why: fresh, cached, stale or fail-closed fallbacks.

Reasons follow OpenFeature's vocabulary (``Reason``):
- STATIC: fetched from the table by this read;
- CACHED: served from the provider's cache (younger than max_age);
- STALE: the table failed; the last good value, younger than ``max_stale``, is served;
- DEFAULT: the declared fallbacks (item missing, or no usable value): features off, maintenance ON.

The item is cached in one place: the provider's, Powertools' own cache. Every read asks it first
(``SingletonProvider.cache_lookup``), and a cached read answers with what the cached snapshot carries
(``Snapshot.as_cached``); the reader keeps no copy of its own of what it served. The last good snapshot it keeps is
served only as STALE, once a fetch has failed.

After a failed fetch the reader backs off (exponential with jitter, capped) instead of calling DynamoDB
on every request. A window whose end never arrived still ends: a maintenance switched on by a window is
reported off once the deadline stored with it has passed (``maintenance_deadline_passed``).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

from singleton_flags.declarations import Declarations
from singleton_flags.emf import NO_COUNT, Counter
from singleton_flags.keys import SINGLETON_SK
from singleton_flags.provider import SingletonProvider
from singleton_flags.snapshot import FlagState, Snapshot, flag_reason
from singleton_flags.vocabulary import CACHED, DEFAULT, STALE, STATIC

__all__ = ["FlagReader", "FlagState", "flag_reason"]

logger = logging.getLogger(__name__)  # the library's logger (stdlib); the functions attach Powertools' handler


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
        self._counting = self._counter is not NO_COUNT  # a cached read skips the call when nothing counts
        self._cache_lookup = provider.cache_lookup(sort_key)
        self._last_good: Snapshot | None = None  # served only as STALE, after a failed fetch
        self._failures = 0
        self._retry_at = 0.0

    def read(self) -> FlagState:
        cached = self._cache_lookup()
        if cached is not None:
            state = cached.as_cached
            if state is None:  # a window's deadline may pass between two reads: built for this one
                state = cached.state(CACHED, self._clock())
            if self._counting:
                self._counter.record(state.reason)
            return state
        now = self._clock()
        if self._failures and now < self._retry_at:
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
        refreshed = self.provider.fetches != fetches_before  # else another thread's fetch filled the cache
        self._failures = 0
        if snapshot.found:
            self._last_good = snapshot
        elif refreshed:
            logger.warning("the flags item is missing, serving declared fallbacks", extra={"sort_key": self._sort_key})
        # not refreshed: another thread's fetch filled the cache meanwhile, a cached read
        state = snapshot.state(STATIC, now) if refreshed else snapshot.as_cached or snapshot.state(CACHED, now)
        self._counter.record(state.reason, refreshed=refreshed)
        return state

    def prime(self, snapshot: Snapshot) -> None:
        """This environment just wrote ``snapshot``: serve it from now on (read-your-writes)."""
        self.provider.prime(self._sort_key, snapshot, self._max_age)
        self._last_good = snapshot
        self._failures = 0

    def _degraded(self, now: float) -> FlagState:
        last = self._last_good
        if last is not None and now - last.fetched_at <= self._max_stale:
            return last.state(STALE, now)
        return FlagState(values=self._declarations.fallbacks(), version=None, reason=DEFAULT, fetched_at=None)
