"""The embedded client: read the flags from any Lambda function, in-process, with the read function's own reader.

Created once at module scope (``FLAGS = Flags.from_env(os.environ, declarations="flags.json")``), so its cache
lives as long as the execution environment. ``from_env`` never raises: when the environment is complete (a
deployed function) the client is built at once, as ``Flags(...)`` builds it; when it is not (a test importing a
handler in a bare environment, or a misconfigured deployment), its configuration waits for the first read, which
reads the environment again. Should it still fail then, every read serves the declared fallbacks with reason
DEFAULT and the log names the cause (``ReadCause``: no region, the missing variable...); only without any
declarations to fall back on does a read raise ``FlagsConfigError``.

Every read goes through ``FlagReader`` over ``SingletonProvider``, the code the read function runs: one GetItem
per cache age, the last good values for at most ``max_stale`` seconds while DynamoDB fails, back-off after a
failure, the declared fallbacks after that (features off, maintenance ON), the maintenance deadline honoured.
The DynamoDB client fails fast (``READ_CLIENT_CONFIG``: one attempt, 0.5 s to connect, 1 s to read), so a dead
DynamoDB costs a read at most ~1.5 s, then nothing until the back-off ends.

What this module never does: create a Powertools Logger, Metrics or Tracer, write to the application's logs on
a cached read (warnings go to the standard library's ``singleton_flags`` logger, on a failed or degraded fetch
only), or print metrics unless asked (``metrics=True``: EMF blobs on stdout, as the read function prints them:
reads by reason, and at most once per flush interval while it serves reads the version it serves,
``ServedVersion``, with its reads counted per flag; a read of one flag counts one for its name, a read of them
all (``all``, ``all_details``, ``state``) one for ``*``).

The declarations are the application's (a path to its declarations file or a ``Declarations``), never the
sample flags bundled with the package. When the application's copy and the table differ: attributes of the
item that the application does not declare are ignored; a declared flag missing from the item, or holding a
value its declaration refuses, is served as its fallback with reason DEFAULT (the other flags keep theirs).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from singleton_flags.aws import READ_CLIENT_CONFIG
from singleton_flags.declarations import Declarations, FlagValue, load_declarations
from singleton_flags.emf import NO_COUNT, Counter, EmfPrinter, ReadCounter
from singleton_flags.errors import DeclarationError
from singleton_flags.keys import SINGLETON_SK
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from singleton_flags.settings import (
    DEFAULT_MAX_AGE_SECONDS,
    DEFAULT_MAX_STALE_SECONDS,
    MAX_AGE_LIMIT_SECONDS,
    MAX_STALE_LIMIT_SECONDS,
    SettingsError,
    int_setting,
)
from singleton_flags.snapshot import FlagState, flag_reason
from singleton_flags.vocabulary import ALL_FLAGS, DEFAULT_NAMESPACE, DEFAULT_SERVICE, ReadCause, Reason

__all__ = [
    "ENV_DECLARATIONS",
    "ENV_MAX_AGE",
    "ENV_MAX_STALE",
    "ENV_REGION",
    "ENV_SORT_KEY",
    "ENV_TABLE",
    "FlagDetails",
    "FlagTypeMismatch",
    "Flags",
    "FlagsConfigError",
    "UndeclaredFlag",
]

# The variables the CDK construct sets on a bound function (``SingletonFlags.bind``), read by ``from_env``.
ENV_TABLE = "SINGLETON_FLAGS_TABLE"
ENV_SORT_KEY = "SINGLETON_FLAGS_SORT_KEY"
ENV_MAX_AGE = "SINGLETON_FLAGS_MAX_AGE"
ENV_MAX_STALE = "SINGLETON_FLAGS_MAX_STALE"
ENV_REGION = "SINGLETON_FLAGS_REGION"
ENV_DECLARATIONS = "SINGLETON_FLAGS_DECLARATIONS"  # optional: the path of the declarations file


_T = TypeVar("_T")


REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")


class FlagsConfigError(SettingsError):
    """The client was configured wrongly (a missing table name, a bad number, no region), naming what.

    ``Flags(...)`` raises it at creation; a client from ``from_env`` tells it at its first read (``read_cause``: the
    cause its log message names while it serves the declared fallbacks).
    """

    def __init__(self, message: str, *, read_cause: ReadCause = ReadCause.MISCONFIGURED) -> None:
        super().__init__(message)
        self.read_cause = read_cause


class UndeclaredFlag(LookupError):
    """The name is not a declared flag. Never answered with a fallback: a typo must not read as "off"."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no flag named {name!r} is declared")
        self.name = name


class FlagTypeMismatch(TypeError):
    """A typed read (``get_bool``, ...) of a flag declared with another type."""

    def __init__(self, name: str, declared: str, asked: str) -> None:
        super().__init__(f"flag {name!r} is declared as {declared}, not {asked}")
        self.name, self.declared, self.asked = name, declared, asked


@dataclass(frozen=True, slots=True)
class FlagDetails:
    """One flag's value and where it came from: STATIC (fetched by this read), CACHED, STALE (DynamoDB failed,
    the last good value) or DEFAULT (its declared fallback); ``version`` and ``fetched_at`` (epoch seconds) of
    the item read, None when nothing was read."""

    name: str
    value: FlagValue
    reason: Reason
    version: int | None
    fetched_at: float | None


class Flags:
    """Typed reads of the application's declared flags, through the read function's reader."""

    def __init__(
        self,
        *,
        table_name: str,
        declarations: Declarations | str | os.PathLike[str],
        sort_key: str = SINGLETON_SK,
        max_age: int = DEFAULT_MAX_AGE_SECONDS,
        max_stale: float = DEFAULT_MAX_STALE_SECONDS,
        region: str | None = None,
        client: Any = None,
        metrics: bool = False,
        metrics_namespace: str = DEFAULT_NAMESPACE,
        service: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not table_name:
            raise FlagsConfigError("table_name is required")
        if not sort_key.startswith("FLAGS#V"):
            raise FlagsConfigError(f"sort_key must look like FLAGS#V<n>, got {sort_key!r}")
        self.declarations = _declarations(declarations)
        self._names = frozenset(self.declarations)  # a set lookup: ``in`` on the Mapping costs a __getitem__ call
        if client is None:
            client = _dynamodb_client(region)
        counter: Counter = NO_COUNT
        self._flag_reads: dict[str, int] | None = None  # reads per flag, counted only when metrics are printed
        if metrics:
            printer = EmfPrinter(
                metrics_namespace,
                service or os.environ.get("POWERTOOLS_SERVICE_NAME") or DEFAULT_SERVICE,
                item=sort_key,  # what this client is configured for, even while it follows a migration pointer
            )
            counter = ReadCounter(printer, served=printer.served)
            self._flag_reads = counter.flag_reads
        provider = SingletonProvider(client=client, table_name=table_name, declarations=self.declarations, clock=clock)
        self._reader = FlagReader(
            provider,
            self.declarations,
            sort_key=sort_key,
            max_age=max_age,
            max_stale=max_stale,
            clock=clock,
            counter=counter,
        )

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str],
        *,
        declarations: Declarations | str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Flags:
        """A client configured by the variables ``SingletonFlags.bind`` sets (``SINGLETON_FLAGS_*``).

        ``declarations`` defaults to the file named by ``SINGLETON_FLAGS_DECLARATIONS``. Never raises: an
        environment that cannot configure the client now (no table name, no region, no declarations, a bad number)
        is read again at the first read; if it still cannot, reads serve the declared fallbacks (DEFAULT) and the
        log names the cause, or raise ``FlagsConfigError`` when there are no declarations at all.
        """
        try:
            return cls(**_settings(env, declarations), **options)
        except (FlagsConfigError, DeclarationError):
            deferred: Flags = _Deferred.__new__(_Deferred)
            deferred.__dict__["_pending"] = (cls, env, declarations, options)
            return deferred

    # -- reads ----------------------------------------------------------------------------------------------

    def state(self) -> FlagState:
        """One read of every flag (cached, fresh, stale or fallbacks), as the read function answers it."""
        self._count(ALL_FLAGS)
        return self._reader.read()

    def details(self, name: str) -> FlagDetails:
        self._check(name)
        self._count(name)
        return _details(self._reader.read(), name)

    def all(self) -> dict[str, FlagValue]:
        self._count(ALL_FLAGS)
        return dict(self._reader.read().values)

    def all_details(self) -> dict[str, FlagDetails]:
        self._count(ALL_FLAGS)
        state = self._reader.read()
        return {name: _details(state, name) for name in self.declarations}

    def get(self, name: str) -> FlagValue:
        if name not in self._names:  # _check, inlined: this is the hot read
            raise UndeclaredFlag(name)
        if self._flag_reads is not None:  # _count, inlined
            self._flag_reads[name] += 1
        return self._reader.read().values[name]

    def get_bool(self, name: str) -> bool:
        return self._typed(name, "bool", bool)

    def get_int(self, name: str) -> int:
        return self._typed(name, "int", int)

    def get_float(self, name: str) -> float:
        return self._typed(name, "float", float)

    def get_str(self, name: str) -> str:
        return self._typed(name, "string", str)

    def _check(self, name: str) -> None:
        if name not in self._names:
            raise UndeclaredFlag(name)

    def _count(self, name: str) -> None:
        if self._flag_reads is not None:
            self._flag_reads[name] += 1

    def _typed(self, name: str, flag_type: str, python_type: type[_T]) -> _T:
        self._check(name)
        declared = self.declarations[name].type
        if declared != flag_type:
            raise FlagTypeMismatch(name, declared, flag_type)
        self._count(name)
        # the snapshot holds only values of the declared type (a stored value of another type is its fallback)
        return cast(_T, self._reader.read().values[name])


class _Deferred(Flags):
    """A ``from_env`` client whose environment could not configure it at creation: configured at its first use.

    Its configured attributes are missing until then; asking for one (every read does) configures it, after
    which they are plain attributes and this hook is never called again: the hot read costs what it always did.
    """

    def __getattr__(self, name: str) -> Any:
        if name not in _CONFIGURED:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        with _CONFIGURING:  # two threads' first reads configure it once
            pending = self.__dict__.pop("_pending", None)
            if pending is not None:
                try:
                    self._configure(*pending)
                except FlagsConfigError:  # no declarations at all: every read says so, nothing to fall back on
                    self.__dict__["_pending"] = pending
                    raise
        if name not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.__dict__[name]

    def _configure(
        self,
        cls: type[Flags],
        env: Mapping[str, str],
        declarations: Declarations | str | os.PathLike[str] | None,
        options: dict[str, Any],
    ) -> None:
        try:
            cls.__init__(self, **_settings(env, declarations), **options)
        except (FlagsConfigError, DeclarationError) as exc:
            loaded = _declarations(_declared(env, declarations))  # none at all: raise, nothing to fall back on
            error = exc if isinstance(exc, FlagsConfigError) else FlagsConfigError(str(exc))
            kept = {key: value for key, value in options.items() if key not in ("client", "region")}
            cls.__init__(self, table_name="unconfigured", declarations=loaded, client=_Unconfigured(error), **kept)
        object.__setattr__(self, "__class__", cls)


_CONFIGURING = threading.Lock()
_CONFIGURED = frozenset({"_reader", "_names", "_flag_reads", "declarations"})


class _Unconfigured:
    """The DynamoDB client of a client its environment could not configure: every GetItem raises why."""

    def __init__(self, error: FlagsConfigError) -> None:
        self.error = error

    def get_item(self, **_: Any) -> dict[str, Any]:
        raise self.error


def _declared(env: Mapping[str, str], declarations: Declarations | str | os.PathLike[str] | None) -> Any:
    if declarations is None:
        declarations = env.get(ENV_DECLARATIONS) or None
    if declarations is None:
        raise FlagsConfigError(f"declarations are required: pass them, or set {ENV_DECLARATIONS} to their path")
    return declarations


def _settings(env: Mapping[str, str], declarations: Declarations | str | os.PathLike[str] | None) -> dict[str, Any]:
    """``Flags``' arguments from the environment; raises ``FlagsConfigError`` naming what is missing or wrong."""
    table_name = env.get(ENV_TABLE, "")
    if not table_name:
        raise FlagsConfigError(f"{ENV_TABLE} is required")
    declared = _declared(env, declarations)
    try:
        max_age = int_setting(env, ENV_MAX_AGE, DEFAULT_MAX_AGE_SECONDS, 0, MAX_AGE_LIMIT_SECONDS)
        max_stale = int_setting(env, ENV_MAX_STALE, DEFAULT_MAX_STALE_SECONDS, 0, MAX_STALE_LIMIT_SECONDS)
    except SettingsError as exc:
        raise FlagsConfigError(str(exc)) from exc
    return {
        "table_name": table_name,
        "declarations": declared,
        "sort_key": env.get(ENV_SORT_KEY) or SINGLETON_SK,
        "max_age": max_age,
        "max_stale": max_stale,
        "region": env.get(ENV_REGION) or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
    }


def _dynamodb_client(region: str | None) -> Any:
    """The read client (fail fast); no region anywhere is a ``FlagsConfigError`` naming the variables."""
    import boto3  # deferred: a client given a DynamoDB client of its own never builds one
    from botocore.exceptions import NoRegionError

    try:
        return boto3.client("dynamodb", region_name=region, config=READ_CLIENT_CONFIG)
    except NoRegionError as exc:
        raise FlagsConfigError(
            f"no AWS region: set {' or '.join(REGION_VARIABLES)} (or {ENV_REGION} for the table's own)",
            read_cause=ReadCause.NO_REGION,
        ) from exc


def _details(state: FlagState, name: str) -> FlagDetails:
    return FlagDetails(
        name=name,
        value=state.values[name],
        reason=flag_reason(state, name),
        version=state.version,
        fetched_at=state.fetched_at,
    )


def _declarations(declarations: Declarations | str | os.PathLike[str]) -> Declarations:
    if isinstance(declarations, Declarations):
        return declarations
    return load_declarations(Path(declarations))
