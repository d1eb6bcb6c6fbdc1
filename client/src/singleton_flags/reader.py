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

An item marked superseded (its table was replaced, ``keys.SUPERSEDED_BY_ATTR``) is read, never served: every
read of it answers the declared fallbacks (DEFAULT), never its values (not even as STALE); the cause SUPERSEDED,
with the successor, is told once per environment and counted with every fetch that finds it, as a fetch of an
environment that has never read a live item.

A failed fetch is told in words (``ReadCause``: table not found, access denied, no credentials, no region, ...),
once per cause per execution environment, in the log message itself; every failed fetch is counted, and one made
before any successful read is counted apart (``never_read``: a deployment that cannot read its table at all, not
a table that failed after serving). The cause changes nothing that is served.

After a failed fetch the reader backs off (exponential with jitter, capped) instead of calling DynamoDB
on every request. A window whose end never arrived still ends: a maintenance switched on by a window is
reported off once the deadline stored with it has passed (``maintenance_deadline_passed``). The jitter comes from
the reader's own generator, seeded from the operating system.

A flag declared deprecated is still served; the reader warns once per execution environment, at its first
successful fetch, naming each deprecated flag with its date and note (the log of every environment that serves
it, whether the application reads it or not: the hot read path checks nothing).

An item migrated to a later one (the pointer ``keys.MIGRATED_TO_ATTR``) is followed by the provider's fetch, so a
cached read costs what it did. The reader says once per environment that it should be switched to the later item,
each flag its declarations cannot express there (served as its fallback, reason DEFAULT for that flag) with the
cause, and why a pointer could not be followed (every flag its fallback, reason DEFAULT).

A SnapStart restore resumes many environments from one snapshot of an initialized one: where the runtime offers
restore hooks, every reader registers ``reset`` (``singleton_flags.snapstart``), which forgets what the snapshot
made them share (the cached item, the lookup's expiry, the back-off, the generator's state).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from singleton_flags.declarations import Declarations
from singleton_flags.emf import NO_COUNT, Counter
from singleton_flags.keys import SINGLETON_SK
from singleton_flags.provider import SingletonProvider
from singleton_flags.snapshot import FlagState, Snapshot, flag_reason
from singleton_flags.snapstart import register_reset
from singleton_flags.vocabulary import CACHED, DEFAULT, STALE, STATIC, ReadCause

__all__ = ["FlagReader", "FlagState", "failure_cause", "flag_reason"]

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
        jitter: Callable[[], float] | None = None,
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
        self._random = random.Random()  # noqa: S311 - jitter, not a secret: its own, reseeded after a restore
        self._jitter = jitter or self._random.random
        self._counter = counter or NO_COUNT  # the functions pass observability's ReadCounter
        self._counting = self._counter is not NO_COUNT  # a cached read skips the call when nothing counts
        self._cache_lookup = provider.cache_lookup(sort_key)
        self._last_good: Snapshot | None = None  # served only as STALE, after a failed fetch
        self._failures = 0
        self._retry_at = 0.0
        self._read_once = False  # a fetch has succeeded in this environment (the item found or not)
        self._told: set[ReadCause] = set()  # causes already told in the log: each once per environment
        self._deprecation_due = bool(declarations.deprecated())  # deprecated flags not yet told in this environment
        self._told_migration: set[str] = set()  # what the migration pointer made this environment say, once each
        register_reset(self)  # a SnapStart restore: forget what the snapshot shared (no-op outside Lambda)

    def read(self) -> FlagState:
        cached = self._cache_lookup()
        if cached is not None:
            state = cached.as_cached
            if state is None:  # a window's deadline may pass between two reads: built for this one
                state = cached.state(CACHED, self._clock())
            if self._counting:
                self._counter.record(state.reason, version=state.version)
            return state
        now = self._clock()
        if self._failures and now < self._retry_at:
            state = self._degraded(now)  # backing off: do not call DynamoDB again yet
            self._counter.record(state.reason, version=state.version)
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
            cause = self._tell(exc, state, failed_at)
            self._counter.record(
                state.reason, version=state.version, refresh_failed=True, never_read=None if self._read_once else cause
            )
            return state
        refreshed = self.provider.fetches != fetches_before  # else another thread's fetch filled the cache
        self._failures = 0
        self._read_once = True
        if self._deprecation_due:
            self._tell_deprecated()
        if snapshot.superseded_by is not None:
            self._last_good = None  # a replaced item's values are never served, not even as STALE
            self._read_once = False  # no live item read: a later failure counts as never read, too
            state = snapshot.state(DEFAULT, now)
            if refreshed:
                self._tell_superseded(snapshot)
            self._counter.record(
                state.reason, version=state.version, refreshed=refreshed, never_read=ReadCause.SUPERSEDED
            )
            return state
        if (snapshot.migrated_to is not None or snapshot.migration_problem is not None) and refreshed:
            self._tell_migrated(snapshot)
        if snapshot.migration_problem is not None:
            pass  # a pointer that cannot be followed: the fallbacks, never kept as the last good values
        elif snapshot.found:
            self._last_good = snapshot
        elif refreshed:
            logger.warning("the flags item is missing, serving declared fallbacks", extra={"sort_key": self._sort_key})
        # not refreshed: another thread's fetch filled the cache meanwhile, a cached read
        state = snapshot.state(STATIC, now) if refreshed else snapshot.as_cached or snapshot.state(CACHED, now)
        self._counter.record(state.reason, version=state.version, refreshed=refreshed)
        return state

    def prime(self, snapshot: Snapshot) -> None:
        """This environment just wrote ``snapshot``: serve it from now on (read-your-writes)."""
        self.provider.prime(self._sort_key, snapshot, self._max_age)
        self._last_good = snapshot
        self._failures = 0
        self._read_once = True

    def reset(self) -> None:
        """Forget what a snapshot of this environment shares with every environment restored from it: the cached
        item (through the provider's public ``clear_cache``), the lookup's remembered expiry, the back-off, the
        causes already told (a restored environment is a new one), what the counter last published, and the
        generator's state (reseeded from the operating system). No I/O: the next read fetches. The last good
        values stay, served as STALE only while younger than ``max_stale`` by the wall clock, as before."""
        self.provider.clear_cache()  # type: ignore[no-untyped-call]  # Powertools' clear_cache is unannotated
        self._cache_lookup = self.provider.cache_lookup(self._sort_key)
        self._failures = 0
        self._retry_at = 0.0
        self._told = set()
        self._told_migration = set()
        self._deprecation_due = bool(self._declarations.deprecated())
        self._counter.restart()
        self._random.seed()

    def _tell(self, exc: BaseException, state: FlagState, failed_at: float) -> ReadCause:
        """Log a failed fetch: a warning naming its cause in words the first time that cause is seen in this
        environment, a debug line after that (the metrics count every one). Returns the cause."""
        cause, detail = failure_cause(exc)
        if state.reason == STALE:
            served = f"serving the last good values (STALE, version {state.version})"
        else:
            served = "serving the declared fallbacks (DEFAULT: maintenance on, features off)"
        first = cause not in self._told
        self._told.add(cause)
        never = "" if self._read_once else ", never read in this environment"
        words = cause.words if cause is not ReadCause.MISCONFIGURED else f"{cause.words} ({detail.partition(': ')[2]})"
        message = f"cannot read the flags item: {words}{never}; {served}"
        (logger.warning if first else logger.debug)(
            message,
            extra={
                "cause": cause.value,
                "never_read": not self._read_once,
                "reason": state.reason,
                "version": state.version,
                "error": detail,
                "consecutive_failures": self._failures,
                "retry_in_seconds": round(self._retry_at - failed_at, 3),
            },
        )
        return cause

    def _tell_deprecated(self) -> None:
        """Warn once per environment of each deprecated flag: still served, its date and note named."""
        self._deprecation_due = False
        for name, spec in self._declarations.deprecated().items():
            note = f": {spec.note}" if spec.note else ""
            logger.warning(
                f"flag '{name}' is deprecated since {spec.deprecated_on}{note}; it is still served",
                extra={"flag": name, "deprecated_on": spec.deprecated_on, "note": spec.note, "owner": spec.owner},
            )

    def _tell_migrated(self, snapshot: Snapshot) -> None:
        """Say once per environment each thing the migration pointer changes: that this reader should be switched
        to the later item, each flag served as its fallback because the mapping cannot express it, or why the
        pointer could not be followed (every flag its fallback)."""
        target = snapshot.migrated_to
        said = self._told_migration
        fields = {"sort_key": self._sort_key, "migrated_to": target}
        if snapshot.migration_problem is not None:
            if snapshot.migration_problem not in said:
                said.add(snapshot.migration_problem)
                logger.warning(
                    f"cannot follow the flags item's migration pointer ({self._sort_key} -> {target}): "
                    f"{snapshot.migration_problem}; serving the declared fallbacks (DEFAULT: maintenance on, "
                    "features off)",
                    extra={**fields, "problem": snapshot.migration_problem, "reason": DEFAULT},
                )
            return
        if "switch" not in said:
            said.add("switch")
            logger.warning(
                f"the flags item {self._sort_key} was migrated to {target}: serving {target}'s values through the "
                f"migration's mapping; switch this reader to {target} and its declarations",
                extra=fields,
            )
        for name, cause in snapshot.migration_causes:
            if name not in said:
                said.add(name)
                logger.warning(
                    f"flag '{name}' cannot be expressed under this reader's declaration: {cause}; serving its "
                    "declared fallback (DEFAULT)",
                    extra={**fields, "flag": name, "cause": cause, "reason": DEFAULT},
                )

    def _tell_superseded(self, snapshot: Snapshot) -> None:
        """Log that the item is superseded, naming its successor: a warning once per environment, then debug."""
        cause = ReadCause.SUPERSEDED
        first = cause not in self._told
        self._told.add(cause)
        message = (
            f"cannot read the flags item: {cause.words}; superseded by {snapshot.superseded_by}"
            f"{f' at {snapshot.superseded_at}' if snapshot.superseded_at else ''}; "
            "serving the declared fallbacks (DEFAULT: maintenance on, features off)"
        )
        (logger.warning if first else logger.debug)(
            message,
            extra={
                "cause": cause.value,
                "superseded_by": snapshot.superseded_by,
                "superseded_at": snapshot.superseded_at,
                "reason": DEFAULT,
                "sort_key": self._sort_key,
            },
        )

    def _degraded(self, now: float) -> FlagState:
        last = self._last_good
        if last is not None and now - last.fetched_at <= self._max_stale:
            return last.state(STALE, now)
        return FlagState(values=self._declarations.fallbacks(), version=None, reason=DEFAULT, fetched_at=None)


_UNREACHABLE = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)
_CLIENT_ERROR_CAUSES = {
    "ResourceNotFoundException": ReadCause.TABLE_NOT_FOUND,
    "AccessDeniedException": ReadCause.ACCESS_DENIED,
    "UnrecognizedClientException": ReadCause.INVALID_CREDENTIALS,
    "InvalidSignatureException": ReadCause.INVALID_CREDENTIALS,
    "ExpiredTokenException": ReadCause.INVALID_CREDENTIALS,
    "MissingAuthenticationTokenException": ReadCause.NO_CREDENTIALS,
    "ProvisionedThroughputExceededException": ReadCause.THROTTLED,
    "ThrottlingException": ReadCause.THROTTLED,
    "RequestLimitExceeded": ReadCause.THROTTLED,
}


def failure_cause(exc: BaseException) -> tuple[ReadCause, str]:
    """Why a fetch failed, and the error's own text. Powertools wraps the failure (``GetParameterError``): the
    error it wraps decides. An error may name its own cause (a ``read_cause`` attribute)."""
    origin = (exc.__cause__ or exc.__context__ or exc) if isinstance(exc, GetParameterError) else exc
    own = getattr(origin, "read_cause", None)
    if isinstance(own, ReadCause):
        cause = own
    elif isinstance(origin, ClientError):
        cause = _CLIENT_ERROR_CAUSES.get(origin.response.get("Error", {}).get("Code", ""), ReadCause.UNEXPECTED)
    elif isinstance(origin, (NoCredentialsError, PartialCredentialsError)):
        cause = ReadCause.NO_CREDENTIALS
    elif isinstance(origin, NoRegionError):
        cause = ReadCause.NO_REGION
    elif isinstance(origin, _UNREACHABLE):
        cause = ReadCause.UNREACHABLE
    else:
        cause = ReadCause.UNEXPECTED
    return cause, f"{type(origin).__name__}: {origin}"
