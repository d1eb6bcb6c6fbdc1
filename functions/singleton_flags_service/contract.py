"""The contract between the stack and the functions, declared once: every setting the stack hands a function (its
name, limits and default), the deployment document it writes into the functions' asset, and the payload Scheduler
delivers for a maintenance window.

One writer, one reader per function. The stack (``singleton_flags_infra``) and the local runner build each
function's environment with ``function_environment`` (and the one-time schedule targets with
``SCHEDULED_CHANGE_TARGET`` / ``GUARD_CLOSE_TARGET``) and its document with ``deployment_document``; a handler
calls its function's reader (``READERS``) once, at module scope, which validates everything and raises
``SettingsError`` naming the variable, or the document and the key. A writer refuses at synth what the reader
would refuse at cold start: both use the limits below.

Where a value travels:

- the environment: names, ARNs and small numbers, whose size does not grow with the deployment (Lambda allows
  4 KB for all of a function's variables; the stack checks its estimate at synth);
- the deployment document (``DEPLOYMENT_FILE``: ``deployment.json`` beside this module in the functions' asset,
  written by the stack at synth): the maintenance windows' definitions, which grow with cdk.json.

The read function's part (the functions' names and handlers, the declarations, ``Settings``) is defined in
``singleton_flags_service.reader_contract`` and re-exported here, so that the read function's cold start builds its
own settings only.

The limits a reader shares with the embedded client (cache age, max stale) are ``singleton_flags.settings``'s.
The library below never reads ``os.environ`` itself: a handler passes what each part needs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The read function's part (it imports that module alone), re-exported: this module is the contract's public home.
from singleton_flags.keys import SINGLETON_SK
from singleton_flags.settings import MAX_AGE_LIMIT_SECONDS, MAX_STALE_LIMIT_SECONDS
from singleton_flags_service import vocabulary
from singleton_flags_service.reader_contract import (
    AUDIT_RETENTION_DAYS,
    CHANGE_EVENTS_FUNCTION,
    CHANGE_EVENTS_HANDLER,
    DECLARATIONS_FILE,
    DEFAULT_AUDIT_RETENTION_DAYS,
    GUARD_ALARM_PREFIX,
    GUARD_ALARM_PREFIX_PATTERN,
    GUARD_ALARM_PREFIX_RULE,
    GUARD_FUNCTION,
    HANDLERS,
    ITEM_SORT_KEY,
    LOCAL_ACTOR,
    MAINTENANCE_FUNCTION,
    MAX_AGE,
    MAX_STALE,
    READ_FUNCTION,
    RECONCILE_FUNCTION,
    RECONCILE_HANDLER,
    SEED_FUNCTION,
    SEED_HANDLER,
    TABLE_NAME,
    WRITE_FUNCTION,
    Integer,
    Settings,
    SettingsError,
    load_service_declarations,
)

__all__ = [
    "AUDIT_RETENTION_DAYS",
    "CHANGE_EVENTS_FUNCTION",
    "CHANGE_EVENTS_HANDLER",
    "DECLARATIONS_FILE",
    "DEFAULT_AUDIT_RETENTION_DAYS",
    "DEPLOYMENT_FILE",
    "GUARD_ALARM_PREFIX",
    "GUARD_ALARM_PREFIX_PATTERN",
    "GUARD_ALARM_PREFIX_RULE",
    "GUARD_CLOSE_TARGET",
    "GUARD_FUNCTION",
    "HANDLERS",
    "ITEM_SORT_KEY",
    "LOCAL_ACTOR",
    "MAINTENANCE_FUNCTION",
    "MAX_AGE",
    "MAX_AGE_LIMIT_SECONDS",
    "MAX_STALE",
    "MAX_STALE_LIMIT_SECONDS",
    "MAX_WINDOWS",
    "READERS",
    "READ_FUNCTION",
    "RECONCILE_FUNCTION",
    "RECONCILE_HANDLER",
    "SCHEDULED_CHANGE_TARGET",
    "SEED_FUNCTION",
    "SEED_HANDLER",
    "TABLE_NAME",
    "WRITE_FUNCTION",
    "ChangeEventSettings",
    "Deployment",
    "Integer",
    "OneTimeTarget",
    "ReconcileConfiguration",
    "Settings",
    "SettingsError",
    "WindowDefinition",
    "WindowsConfiguration",
    "WriteConfiguration",
    "deployment_document",
    "function_environment",
    "load_service_declarations",
    "read_deployment_document",
    "window_payload",
]

# What the stack writes into the functions' asset at synth (``deployment_document``), read at cold start.
DEPLOYMENT_FILE = Path(__file__).with_name("deployment.json")

EVENT_BUS_NAME = "EVENT_BUS_NAME"
STAGE = "FLAGS_STAGE"
SERVICE_NAME = "POWERTOOLS_SERVICE_NAME"  # Powertools' own: read by its logger, metrics and tracer
METRICS_NAMESPACE = "POWERTOOLS_METRICS_NAMESPACE"  # Powertools' own
# Another deployment document than DEPLOYMENT_FILE: the local runner's (it runs the functions from the checkout).
# Never set by the stack.
DEPLOYMENT_FILE_VARIABLE = "FLAGS_DEPLOYMENT_FILE"

# A stage names the stack, its bus and its metrics' namespace: lowercase, at most 21 characters.
STAGE_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,20}$")


@dataclass(frozen=True, slots=True)
class ChangeEventSettings:
    """The change-events function's configuration: the bus it publishes to, the stage its events name, and the
    table whose audit records it reads (the flags item's writes are checked against them)."""

    event_bus_name: str
    stage: str
    table_name: str

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ChangeEventSettings:
        bus, stage, table = env.get(EVENT_BUS_NAME, ""), env.get(STAGE, ""), env.get(TABLE_NAME, "")
        if not bus:
            raise SettingsError(f"{EVENT_BUS_NAME} is required")
        if not stage:
            raise SettingsError(f"{STAGE} is required")
        if not STAGE_PATTERN.match(stage):
            raise SettingsError(f"{STAGE} must match {STAGE_PATTERN.pattern}, got {stage!r}")
        if not table:
            raise SettingsError(f"{TABLE_NAME} is required")
        return cls(event_bus_name=bus, stage=stage, table_name=table)


# ---------------------------------------------------------------------------------------------- one-time targets

# EventBridge Scheduler's limits on a target's retry policy: retries 0-185, event age 60-86400 s.
MAX_RETRY_ATTEMPTS = 185
MIN_EVENT_AGE_SECONDS = 60
MAX_EVENT_AGE_SECONDS = 86400


@dataclass(frozen=True, slots=True)
class OneTimeTarget:
    """Where one kind of one-time schedule lives and what it invokes, as the stack configured it."""

    group: str
    target_arn: str
    role_arn: str
    dead_letter_arn: str
    retry_attempts: int
    max_event_age_seconds: int


@dataclass(frozen=True, slots=True)
class ScheduleTargetVariables:
    """The six variables that name a ``OneTimeTarget``, all starting with ``prefix``."""

    prefix: str
    retry_attempts: Integer = field(init=False)
    max_event_age: Integer = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "retry_attempts", Integer(f"{self.prefix}RETRY_ATTEMPTS", 0, MAX_RETRY_ATTEMPTS))
        object.__setattr__(
            self,
            "max_event_age",
            Integer(f"{self.prefix}MAX_EVENT_AGE_SECONDS", MIN_EVENT_AGE_SECONDS, MAX_EVENT_AGE_SECONDS),
        )

    @property
    def group(self) -> str:
        return f"{self.prefix}GROUP"

    @property
    def target_arn(self) -> str:
        return f"{self.prefix}TARGET_ARN"

    @property
    def role_arn(self) -> str:
        return f"{self.prefix}ROLE_ARN"

    @property
    def dead_letter_arn(self) -> str:
        return f"{self.prefix}DLQ_ARN"

    @property
    def names(self) -> tuple[str, ...]:
        return (
            self.group,
            self.target_arn,
            self.role_arn,
            self.dead_letter_arn,
            self.retry_attempts.name,
            self.max_event_age.name,
        )

    def environment(self, target: OneTimeTarget) -> dict[str, str]:
        """The writer: the target's variables (its names and ARNs may be the stack's unresolved tokens)."""
        return {
            self.group: target.group,
            self.target_arn: target.target_arn,
            self.role_arn: target.role_arn,
            self.dead_letter_arn: target.dead_letter_arn,
            self.retry_attempts.name: self.retry_attempts.write(target.retry_attempts),
            self.max_event_age.name: self.max_event_age.write(target.max_event_age_seconds),
        }

    def read(self, env: Mapping[str, str]) -> OneTimeTarget | None:
        """The reader: the target, None when none of its variables is set, ``SettingsError`` naming what is
        missing or wrong otherwise."""
        if not any(env.get(name) for name in self.names):
            return None
        missing = [name for name in self.names if not env.get(name)]
        if missing:
            raise SettingsError(f"one-time schedules need {', '.join(missing)} in the environment")
        return OneTimeTarget(
            group=env[self.group],
            target_arn=env[self.target_arn],
            role_arn=env[self.role_arn],
            dead_letter_arn=env[self.dead_letter_arn],
            retry_attempts=self.retry_attempts.read(env),
            max_event_age_seconds=self.max_event_age.read(env),
        )


# The scheduled changes' schedules (to the maintenance function) and the guards' close schedules (to the guard
# function): one shape, in different groups and targets.
SCHEDULED_CHANGE_TARGET = ScheduleTargetVariables("ONE_TIME_SCHEDULE_")
GUARD_CLOSE_TARGET = ScheduleTargetVariables("GUARD_SCHEDULE_")


# ---------------------------------------------------------------------------------------------- windows

# A window's name: what its schedules deliver and the owner it stores on the item.
WINDOW_NAME_PATTERN = re.compile(r"^[a-z0-9-]{1,40}$")
MAX_WINDOW_SECONDS = 24 * 3600
# Each window is two CloudFormation resources (its start and end schedules) of the 500 a stack may declare: 50
# windows keep the whole stack under 350, leaving at least 150 for an application that embeds it
# (docs/decisions.md). The window definitions travel in the deployment document, so the functions' environments
# do not grow with them.
MAX_WINDOWS = 50
WINDOW_ACTIONS = ("start", "end")
WINDOW_PAYLOAD_KEYS = frozenset({"action", "window", "scheduled_time"})
# EventBridge Scheduler's context attribute, replaced by the time the occurrence was scheduled for
# (e.g. 2022-03-22T18:59:43Z) in each delivery's input.
SCHEDULED_TIME_ATTRIBUTE = "<aws.scheduler.scheduled-time>"


def window_payload(window: str, action: str, scheduled_time: str = SCHEDULED_TIME_ATTRIBUTE) -> dict[str, str]:
    """What a window's schedule delivers to the maintenance function. Deployed, Scheduler substitutes the
    occurrence's scheduled time; the local runner passes the current time."""
    if action not in WINDOW_ACTIONS:
        raise ValueError(f"action must be one of {WINDOW_ACTIONS}, got {action!r}")
    return {"action": action, "window": window, "scheduled_time": scheduled_time}


@dataclass(frozen=True, slots=True)
class WindowDefinition:
    """A maintenance window as deployed: its schedules (EventBridge ``cron(...)`` in an IANA time zone) and its
    wall-clock length (the deadline a start stores), computed at synth."""

    name: str
    start: str
    end: str
    timezone: str
    duration_seconds: int

    def problems(self) -> list[str]:
        """What the reader refuses in this definition (the crons are evaluated by the write function only)."""
        found = [f"name must match {WINDOW_NAME_PATTERN.pattern}"] if not WINDOW_NAME_PATTERN.match(self.name) else []
        found += [
            f"{key} must be an EventBridge cron(...) expression"
            for key in ("start", "end")
            if not re.fullmatch(r"cron\([^()]*\)", getattr(self, key))
        ]
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only the functions that read windows need it

        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            found.append(f"unknown IANA time zone {self.timezone!r}")
        if not 1 <= self.duration_seconds <= MAX_WINDOW_SECONDS:
            found.append(f"duration_seconds must be an integer 1-{MAX_WINDOW_SECONDS}")
        return found


_WINDOW_KEYS = ("name", "start", "end", "timezone", "duration_seconds")
_DOCUMENT_KEYS = frozenset({"maintenance_windows"})


def longest_window_name(windows: Sequence[WindowDefinition]) -> str:
    """The longest owner a window start may store on the item: every write keeps room for it."""
    return max((window.name for window in windows), key=len, default="")


def _window_problems(windows: Sequence[WindowDefinition]) -> list[str]:
    problems = [] if len(windows) <= MAX_WINDOWS else [f"at most {MAX_WINDOWS} windows, got {len(windows)}"]
    seen: set[str] = set()
    for index, window in enumerate(windows):
        problems += [f"maintenance_windows[{index}] ({window.name!r}): {problem}" for problem in window.problems()]
        if window.name in seen:
            problems.append(f"maintenance_windows[{index}]: duplicate window name {window.name!r}")
        seen.add(window.name)
    return problems


# ---------------------------------------------------------------------------------------------- the writers


@dataclass(frozen=True, slots=True)
class Deployment:
    """What the stack hands the functions of one stage: the writers' input (the table's name may be a token)."""

    table_name: str
    stage: str
    max_age_seconds: int
    max_stale_seconds: int
    audit_retention_days: int
    guard_alarm_prefix: str
    event_bus_name: str
    metrics_namespace: str
    service_name: str = vocabulary.DEFAULT_SERVICE
    flags_item: str = SINGLETON_SK  # the flags item's sort key (FLAGS#V2 once the service is switched to it)


def function_environment(deployment: Deployment, function: str) -> dict[str, str]:
    """The environment the stack gives ``function`` when it creates it (the write function's one-time schedule
    targets are added by the constructs that own them: ``SCHEDULED_CHANGE_TARGET``, ``GUARD_CLOSE_TARGET``).

    The change-events function gets the bus, the stage and the table (it reads audit records only, never the
    flags), not the readers' limits.
    """
    if function not in READERS:
        raise ValueError(f"no function {function!r}; functions: {sorted(READERS)}")
    if not STAGE_PATTERN.match(deployment.stage):
        raise ValueError(f"the stage must match {STAGE_PATTERN.pattern}, got {deployment.stage!r}")
    observability = {
        SERVICE_NAME: deployment.service_name,
        # One namespace per stage: two stages in one account and region never count each other's metrics.
        METRICS_NAMESPACE: deployment.metrics_namespace,
    }
    if function == CHANGE_EVENTS_FUNCTION:
        return {
            EVENT_BUS_NAME: deployment.event_bus_name,
            STAGE: deployment.stage,
            TABLE_NAME: deployment.table_name,
            **observability,
        }
    environment = {
        TABLE_NAME: deployment.table_name,
        MAX_AGE.name: MAX_AGE.write(deployment.max_age_seconds),
        MAX_STALE.name: MAX_STALE.write(deployment.max_stale_seconds),
        AUDIT_RETENTION_DAYS.name: AUDIT_RETENTION_DAYS.write(deployment.audit_retention_days),
        **observability,
    }
    if function == WRITE_FUNCTION:
        # it checks a guard's alarm names against the prefix the stack's rule matches
        if not GUARD_ALARM_PREFIX_PATTERN.match(deployment.guard_alarm_prefix):
            raise ValueError(
                f"the guards' alarm prefix must be {GUARD_ALARM_PREFIX_RULE}, got {deployment.guard_alarm_prefix!r}"
            )
        environment[GUARD_ALARM_PREFIX] = deployment.guard_alarm_prefix
    if deployment.flags_item != SINGLETON_SK:  # said only when switched: the default stack's template is unchanged
        environment[ITEM_SORT_KEY] = deployment.flags_item
    return environment


def deployment_document(windows: Sequence[WindowDefinition]) -> str:
    """The deployment document's text (``DEPLOYMENT_FILE``): the windows in cdk.json's order, each with its crons
    as its schedules are deployed and its length. ``ValueError`` for what the reader would refuse."""
    problems = _window_problems(windows)
    if problems:
        raise ValueError(f"{DEPLOYMENT_FILE.name}: {'; '.join(problems)}")
    document = {"maintenance_windows": [{key: getattr(window, key) for key in _WINDOW_KEYS} for window in windows]}
    return json.dumps(document, indent=1, sort_keys=False) + "\n"


# ---------------------------------------------------------------------------------------------- the readers


def deployment_file(env: Mapping[str, str]) -> Path:
    """The deployment document a function reads: ``DEPLOYMENT_FILE``, unless FLAGS_DEPLOYMENT_FILE names another."""
    named = env.get(DEPLOYMENT_FILE_VARIABLE, "")
    return Path(named) if named else DEPLOYMENT_FILE


def _document_object(path: Path, env: Mapping[str, str]) -> Mapping[str, Any] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if env.get(DEPLOYMENT_FILE_VARIABLE):
            raise SettingsError(f"{DEPLOYMENT_FILE_VARIABLE} names {path}, which does not exist") from None
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read the deployment document {path}: {exc}") from exc
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"the deployment document {path} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict) or set(document) != _DOCUMENT_KEYS:
        raise SettingsError(f"the deployment document {path} must be an object of exactly {sorted(_DOCUMENT_KEYS)}")
    return document


def read_deployment_document(env: Mapping[str, str]) -> tuple[WindowDefinition, ...]:
    """The windows of the deployment document (``deployment_file``), in cdk.json's order.

    A function outside a stack's asset (tests, the OpenAPI printer) has no document: no windows. Anything the
    stack would not have written raises ``SettingsError`` naming the document and the window, so a function
    deployed with a broken document fails at cold start.
    """
    path = deployment_file(env)
    document = _document_object(path, env)
    if document is None:
        return ()
    raw = document["maintenance_windows"]
    if not isinstance(raw, list):
        raise SettingsError(f"the deployment document {path}: maintenance_windows must be a list")
    windows = []
    for index, spec in enumerate(raw):
        valid = (
            isinstance(spec, dict)
            and set(spec) == set(_WINDOW_KEYS)
            and all(isinstance(spec[key], str) for key in _WINDOW_KEYS[:-1])
            and type(spec["duration_seconds"]) is int
        )
        if not valid:
            raise SettingsError(
                f"the deployment document {path}: maintenance_windows[{index}] must be exactly "
                f"{list(_WINDOW_KEYS)} (strings, and an integer duration), got {spec!r}"
            )
        windows.append(WindowDefinition(**spec))
    problems = _window_problems(windows)
    if problems:
        raise SettingsError(f"the deployment document {path}: {'; '.join(problems)}")
    return tuple(windows)


@dataclass(frozen=True, slots=True)
class WindowsConfiguration:
    """A function that writes the item and knows the windows: the maintenance and guard functions."""

    settings: Settings
    windows: tuple[WindowDefinition, ...]

    @property
    def longest_window_name(self) -> str:
        return longest_window_name(self.windows)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WindowsConfiguration:
        return cls(Settings.from_env(env), read_deployment_document(env))


@dataclass(frozen=True, slots=True)
class WriteConfiguration:
    """The write function's: its settings, the windows (GET /flags/windows, the room kept for a window's owner),
    where its scheduled changes' schedules go, and where its guards' close schedules go (None: not configured,
    the local runner records them instead)."""

    settings: Settings
    windows: tuple[WindowDefinition, ...]
    scheduled_changes: OneTimeTarget
    guard_closes: OneTimeTarget | None

    @property
    def longest_window_name(self) -> str:
        return longest_window_name(self.windows)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WriteConfiguration:
        settings, windows = Settings.from_env(env), read_deployment_document(env)
        scheduled_changes = SCHEDULED_CHANGE_TARGET.read(env)
        if scheduled_changes is None:
            needed = ", ".join(SCHEDULED_CHANGE_TARGET.names)
            raise SettingsError(f"one-time schedules need {needed} in the environment")
        return cls(settings, windows, scheduled_changes, GUARD_CLOSE_TARGET.read(env))


@dataclass(frozen=True, slots=True)
class ReconcileConfiguration:
    """The reconcile function's: its settings and both kinds of one-time schedule it re-creates (the write
    function's own targets: the same groups, targets and roles)."""

    settings: Settings
    scheduled_changes: OneTimeTarget
    guard_closes: OneTimeTarget

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ReconcileConfiguration:
        settings = Settings.from_env(env)
        scheduled_changes, guard_closes = SCHEDULED_CHANGE_TARGET.read(env), GUARD_CLOSE_TARGET.read(env)
        if scheduled_changes is None or guard_closes is None:
            variables = SCHEDULED_CHANGE_TARGET if scheduled_changes is None else GUARD_CLOSE_TARGET
            raise SettingsError(f"one-time schedules need {', '.join(variables.names)} in the environment")
        return cls(settings, scheduled_changes, guard_closes)


# What each function's handler reads at module scope, by function name (the stack's writers take the same names).
READERS: dict[str, Callable[[Mapping[str, str]], object]] = {
    READ_FUNCTION: Settings.from_env,
    WRITE_FUNCTION: WriteConfiguration.from_env,
    MAINTENANCE_FUNCTION: WindowsConfiguration.from_env,
    GUARD_FUNCTION: WindowsConfiguration.from_env,
    SEED_FUNCTION: Settings.from_env,
    CHANGE_EVENTS_FUNCTION: ChangeEventSettings.from_env,
    RECONCILE_FUNCTION: ReconcileConfiguration.from_env,
}
