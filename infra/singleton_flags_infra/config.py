"""The deployment settings: the ``singleton-flags`` object of cdk.json's context, read and validated once.

Pure Python (no aws_cdk import): the stack and the local runner both read it. Any bad value raises
``ConfigError`` naming its key path (``singleton-flags.maintenance_windows[0].timezone``), so ``cdk synth``
stops before anything is deployed.

Maintenance windows are EventBridge Scheduler ``cron(...)`` expressions (6 fields, evaluated in the window's
IANA time zone). Every window is given a ``duration_seconds`` (wall-clock length: what the maintenance
function stores as the deadline after a start) and an end schedule, derived from ``duration_minutes`` when
no explicit ``end`` is given.

What the functions are told of it is written by ``singleton_flags_service.contract`` (``deployment``,
``function_environment``, ``deployment_document``): the limits a function checks at cold start are the ones
checked here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from singleton_flags.keys import SINGLETON_SK
from singleton_flags_service import contract, vocabulary
from singleton_flags_service.contract import (
    GUARD_ALARM_PREFIX_PATTERN,
    GUARD_ALARM_PREFIX_RULE,
    MAX_WINDOWS,
    SCHEDULED_TIME_ATTRIBUTE,
    STAGE_PATTERN,
    WINDOW_ACTIONS,
    WINDOW_NAME_PATTERN,
)
from singleton_flags_service.maintenance import cron
from singleton_flags_service.maintenance.cron import Cron, CronError, fires_at, occurrences

from .constants import LAMBDA_RUNTIME, event_bus_name, metrics_namespace

__all__ = [
    "ACTIONS",
    "CACHE_MAX_AGE_SECONDS",
    "CONTEXT_KEY",
    "GUARD_ALARM_PREFIX_PATTERN",
    "MAX_WINDOWS",
    "SCHEDULED_TIME_ATTRIBUTE",
    "STAGE_PATTERN",
    "WINDOW_NAME_PATTERN",
    "ApiThrottling",
    "ChangeEventsConfig",
    "ConfigError",
    "FlagsConfig",
    "MaintenanceWindow",
    "Throttle",
    "deployment",
    "deployment_document",
    "function_environment",
    "load_config",
    "parse_config",
    "schedule_payload",
]

CONTEXT_KEY = "singleton-flags"
# cdk.json's cache age is narrower than what a function accepts (contract.MAX_AGE, the readers' limits shared with
# the embedded client): the read function's cache is how long a change (the kill switch, maintenance mode) takes
# to reach every API reader, so a deployment keeps it within five minutes; and at least a second, so that the read
# function makes one GetItem per cache age and not one per request (docs/decisions.md).
CACHE_MAX_AGE_SECONDS = contract.MAX_AGE.within(1, 300)
EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# The retention periods CloudWatch Logs accepts (PutRetentionPolicy), in days.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
ACTIONS = WINDOW_ACTIONS
# Windows are evaluated from a fixed instant, so the same cdk.json always synthesizes the same template.
REFERENCE_TIME = datetime(2026, 1, 1)
OCCURRENCES_CHECKED = 400  # a window's length must be the same for each of its next starts (within a year)
MAX_WINDOW = timedelta(seconds=contract.MAX_WINDOW_SECONDS)

_WINDOW_FIELDS = {"name", "start", "end", "duration_minutes", "timezone", "description"}
_TOP_FIELDS = {
    "stage",
    "cache_max_age_seconds",
    "max_stale_seconds",
    "audit_retention_days",
    "log_retention_days",
    "api_throttling",
    "alarm_email",
    "maintenance_windows",
    "system_log_level",
    "apigw_account_logging_role",
    "powertools",
    "termination_protection",
    "guard_alarm_prefix",
    "change_events",
    "region",
    "api_resource_policy",
    "read_reserved_concurrency",
    "read_snapstart",
    "flags_item",
}
_CHANGE_EVENTS_FIELDS = {"sns_topic"}
FLAGS_ITEM_PATTERN = re.compile(r"^FLAGS#V[1-9][0-9]{0,5}$")  # the migration mapping's rule for an item's key
_RESOURCE_POLICY_FIELDS = {"account", "organization_id", "vpc_endpoint_ids"}
# `-c stage=<name>` on the command line: overrides the object's `stage` (a key inside a context object cannot
# be overridden with -c).
STAGE_CONTEXT_KEY = "stage"
# API Gateway's account-level CloudWatch Logs role (needed by the stage's access logging):
# auto = create one and set it where the account has none; existing = the account already has one;
# or the ARN of a role to set where the account has none. A role already set is never overwritten.
LOGGING_ROLE_AUTO = "auto"
LOGGING_ROLE_EXISTING = "existing"
ROLE_ARN_PATTERN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
# Powertools: AWS's public layer (resolved from its SSM parameter), or installed into a layer asset at synth.
POWERTOOLS_LAYER = "layer"
POWERTOOLS_BUNDLED = "bundled"
POWERTOOLS_MODES = (POWERTOOLS_LAYER, POWERTOOLS_BUNDLED)
# The regions where Powertools' publishing workflow writes the public parameter the `layer` mode resolves
# (/aws/service/powertools/python/<arch>/<runtime>/<version>): its SSM workflow's region matrix. Elsewhere
# (GovCloud and China, where Powertools publishes layers but no parameter; any region launched after the matrix
# was last extended) CloudFormation fails the change set before any resource exists.
POWERTOOLS_PARAMETER_REGIONS = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-7",
        "ca-central-1",
        "ca-west-1",
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "il-central-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    }
)
REGION_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
# Where the stage's region came from: cdk.json's `region`, or the CDK CLI's CDK_DEFAULT_REGION (the region of the
# credentials it runs with), or nowhere (an environment-agnostic synth: the Powertools mode cannot be checked).
REGION_FROM_CONFIG = "cdk.json"
REGION_FROM_ENVIRONMENT = "CDK_DEFAULT_REGION"
REGION_UNKNOWN = "unknown"
# A stage whose name has a `-guard` segment would sit under the guard prefix of the stage named by its start: the
# alarms of `prod-guard-x` (named `singleton-flags-prod-guard-x-...` by CloudFormation) would guard `prod`'s changes.
GUARD_SEGMENT = re.compile(r"-guard(-|$)")
# The read function's reserved concurrency: off by default (on a new account, reserving any is what fails a deploy:
# Lambda keeps at least 100 unreserved); at most Lambda's default regional quota.
READ_RESERVED_CONCURRENCY = (1, 1000)
VPC_ENDPOINT_PATTERN = re.compile(r"^vpce-[0-9a-f]{8,17}$")
ORGANIZATION_ID_PATTERN = re.compile(r"^o-[a-z0-9]{10,32}$")
# SnapStart for Python (``read_snapstart``): Lambda's "Improving startup performance with Lambda SnapStart"
# (https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html) lists Python 3.12 and later, refuses provisioned
# concurrency, and names the regions: every commercial region except Asia Pacific (New Zealand) and Asia Pacific
# (Taipei). Other partitions (GovCloud, China, ISO, the European Sovereign Cloud) are not commercial regions: refused
# too, as is a stage whose region is unknown at synth (nothing to check it against).
SNAPSTART_MIN_PYTHON = (3, 12)
SNAPSTART_UNAVAILABLE_REGIONS = frozenset({"ap-southeast-6", "ap-east-2"})
SNAPSTART_OTHER_PARTITIONS = ("us-gov-", "cn-", "us-iso", "eusc-")
# Lambda's platform (START/END/REPORT) log level. WARN keeps those lines out of the bill; INFO brings them back.
SYSTEM_LOG_LEVELS = ("DEBUG", "INFO", "WARN")
DEFAULT_SYSTEM_LOG_LEVEL = "WARN"


class ConfigError(ValueError):
    """A bad value in cdk.json's ``singleton-flags`` context; the message starts with the key path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True, slots=True)
class Throttle:
    rate_limit: float  # requests per second, steady state
    burst_limit: int


@dataclass(frozen=True, slots=True)
class ApiThrottling:
    read: Throttle
    write: Throttle


@dataclass(frozen=True, slots=True)
class MaintenanceWindow:
    name: str
    start: str  # EventBridge cron(...) as declared
    end: str  # EventBridge cron(...): declared, or derived from duration_minutes
    timezone: str
    duration_seconds: int
    description: str = ""

    @property
    def definition(self) -> contract.WindowDefinition:
        """What the functions are told of the window (the deployment document)."""
        return contract.WindowDefinition(
            name=self.name,
            start=self.start,
            end=self.end,
            timezone=self.timezone,
            duration_seconds=self.duration_seconds,
        )


@dataclass(frozen=True, slots=True)
class ChangeEventsConfig:
    """``change_events``: ``sns_topic: true`` adds a rule forwarding the stage's events to a topic of the stack."""

    sns_topic: bool = False


@dataclass(frozen=True, slots=True)
class ApiResourcePolicy:
    """``api_resource_policy``: who may call the API at all, besides what their IAM policy allows (one of the three).

    ``account``: principals of the stack's account only; ``organization_id``: principals of that AWS Organization;
    ``vpc_endpoint_ids``: the API becomes PRIVATE, reachable only through those interface VPC endpoints.
    """

    account: bool = False
    organization_id: str = ""
    vpc_endpoint_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FlagsConfig:
    stage: str
    cache_max_age_seconds: int
    max_stale_seconds: int
    audit_retention_days: int
    log_retention_days: int
    api_throttling: ApiThrottling
    alarm_email: str
    maintenance_windows: tuple[MaintenanceWindow, ...]
    system_log_level: str = DEFAULT_SYSTEM_LOG_LEVEL
    apigw_account_logging_role: str = LOGGING_ROLE_AUTO
    powertools: str = POWERTOOLS_LAYER
    termination_protection: bool = True
    guard_alarm_prefix: str = ""  # as given in cdk.json; "" means the stage's default (guard_prefix)
    change_events: ChangeEventsConfig = ChangeEventsConfig()
    region: str = ""  # the region the stage deploys to, when known at synth ("" otherwise)
    region_source: str = REGION_UNKNOWN
    api_resource_policy: ApiResourcePolicy | None = None
    read_reserved_concurrency: int | None = None
    read_snapstart: bool = False  # the read function as a published version + alias, restored from a snapshot
    flags_item: str = SINGLETON_SK  # the flags item the functions read and write (FLAGS#V2 after a migration)

    @property
    def guard_prefix(self) -> str:
        """The start of the alarm names that may guard a change: as configured, else the stage's default."""
        return self.guard_alarm_prefix or default_guard_alarm_prefix(self.stage)

    def window(self, name: str) -> MaintenanceWindow:
        for window in self.maintenance_windows:
            if window.name == name:
                return window
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------- scalar readers


def _require(raw: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in raw:
        raise ConfigError(f"{path}.{key}", "is required")
    return raw[key]


def _object(value: Any, path: str, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be an object, got {type(value).__name__}")
    unknown = set(value) - allowed
    if unknown:
        raise ConfigError(path, f"unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    return value


def _int(value: Any, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(path, f"must be between {low} and {high}, got {value}")
    return value


def _positive_number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ConfigError(path, f"must be a number, got {value!r}")
    if value <= 0:
        raise ConfigError(path, f"must be positive, got {value}")
    return value


def _string(value: Any, path: str, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, f"must be a string, got {value!r}")
    if pattern is not None and not pattern.match(value):
        raise ConfigError(path, f"must match {pattern.pattern}, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------- throttling


def _throttle(raw: Any, path: str) -> Throttle:
    raw = _object(raw, path, {"rate_limit", "burst_limit"})
    rate = _positive_number(_require(raw, "rate_limit", path), f"{path}.rate_limit")
    burst = _require(raw, "burst_limit", path)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst <= 0:
        raise ConfigError(f"{path}.burst_limit", f"must be a positive integer, got {burst!r}")
    return Throttle(rate_limit=rate, burst_limit=burst)


def _throttling(raw: Any, path: str) -> ApiThrottling:
    raw = _object(raw, path, {"read", "write"})
    read = _throttle(_require(raw, "read", path), f"{path}.read")
    write = _throttle(_require(raw, "write", path), f"{path}.write")
    if write.rate_limit > read.rate_limit:
        raise ConfigError(f"{path}.write.rate_limit", f"must not exceed read.rate_limit ({read.rate_limit})")
    if write.burst_limit > read.burst_limit:
        raise ConfigError(f"{path}.write.burst_limit", f"must not exceed read.burst_limit ({read.burst_limit})")
    return ApiThrottling(read=read, write=write)


# ---------------------------------------------------------------------------------------------- cron


def parse_cron(value: Any, path: str) -> Cron:
    """Validate an EventBridge Scheduler ``cron(min hour dom month dow year)`` expression
    (singleton_flags_service.maintenance.cron)."""
    try:
        return cron.parse_cron(_string(value, path))
    except CronError as exc:
        raise ConfigError(path, str(exc)) from exc


def window_length(start: Cron, end: Cron, path: str) -> int:
    """The window's wall-clock length in seconds, the same for each of its next starts, else ConfigError.

    Wall-clock (the schedules' own time zone, DST ignored): a window declared 03:00-04:00 lasts an hour.
    """
    starts = occurrences(start, REFERENCE_TIME - timedelta(minutes=1))
    first = next(starts, None)
    if first is None:
        raise ConfigError(f"{path}.start", f"{start.expression} never fires after {REFERENCE_TIME:%Y-%m-%d}")
    lengths: set[timedelta] = set()
    opened = first
    for _ in range(OCCURRENCES_CHECKED):
        if fires_at(end, opened):
            raise ConfigError(f"{path}.end", f"the window ends at the moment it starts ({opened:%a %Y-%m-%d %H:%M})")
        closed = next(occurrences(end, opened), None)
        if closed is None or closed - opened > MAX_WINDOW:
            raise ConfigError(
                f"{path}.end",
                f"must come after the start and within 24 h: the window opening "
                f"{opened:%a %Y-%m-%d %H:%M} would end "
                f"{f'{closed:%a %Y-%m-%d %H:%M}' if closed else 'never'}",
            )
        following = next(starts, None)
        if following is not None and following <= closed:
            raise ConfigError(
                f"{path}.end",
                f"the window opening {opened:%a %Y-%m-%d %H:%M} starts again "
                f"({following:%a %H:%M}) before it ends ({closed:%a %H:%M})",
            )
        lengths.add(closed - opened)
        if len(lengths) > 1:
            raise ConfigError(
                f"{path}.end",
                f"the window's length varies between its occurrences "
                f"({sorted(str(item) for item in lengths)}); declare windows of one length",
            )
        if following is None or following - first > timedelta(days=366):
            break
        opened = following
    return int(lengths.pop().total_seconds())


def shifted_end(start: Cron, duration_minutes: int, path: str) -> Cron:
    """The end schedule of a window given as start + duration: the start's minute and hour moved on."""
    minute, hour, dom, month, dow, year = start.fields
    if not (minute.isdigit() and hour.isdigit()):
        raise ConfigError(
            f"{path}.duration_minutes",
            "needs a start at a fixed minute and hour "
            f"(got minutes {minute!r}, hours {hour!r}); give an explicit 'end'",
        )
    total = int(hour) * 60 + int(minute) + duration_minutes
    if total >= 24 * 60:
        every_day = dom in ("*", "?") and dow in ("*", "?") and month == "*" and year == "*"
        if not every_day:
            raise ConfigError(
                f"{path}.duration_minutes",
                "the window crosses midnight and its start names days "
                "(day-of-month, day-of-week, month or year); give an "
                "explicit 'end' cron",
            )
        total -= 24 * 60
    fields = (str(total % 60), str(total // 60), dom, month, dow, year)
    return parse_cron(f"cron({' '.join(fields)})", f"{path}.duration_minutes")


# ---------------------------------------------------------------------------------------------- windows


def _timezone(value: Any, path: str) -> str:
    name = _string(value, path)
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(path, f"unknown IANA time zone {name!r}") from exc
    return name


def _window(raw: Any, path: str) -> MaintenanceWindow:
    raw = _object(raw, path, _WINDOW_FIELDS)
    name = _string(_require(raw, "name", path), f"{path}.name", WINDOW_NAME_PATTERN)
    timezone = _timezone(_require(raw, "timezone", path), f"{path}.timezone")
    start = parse_cron(_require(raw, "start", path), f"{path}.start")
    if ("end" in raw) == ("duration_minutes" in raw):
        raise ConfigError(path, "give exactly one of 'end' (cron) and 'duration_minutes'")
    if "end" in raw:
        end = parse_cron(raw["end"], f"{path}.end")
    else:
        end = shifted_end(start, _int(raw["duration_minutes"], f"{path}.duration_minutes", 1, 1440), path)
    return MaintenanceWindow(
        name=name,
        start=start.expression,
        end=end.expression,
        timezone=timezone,
        duration_seconds=window_length(start, end, path),
        description=_string(raw.get("description", ""), f"{path}.description"),
    )


def _windows(raw: Any, path: str) -> tuple[MaintenanceWindow, ...]:
    if not isinstance(raw, list):
        raise ConfigError(path, f"must be a list, got {type(raw).__name__}")
    if len(raw) > MAX_WINDOWS:
        raise ConfigError(
            path,
            f"at most {MAX_WINDOWS} windows, got {len(raw)} (each is a start and an end schedule: two of the 500 "
            "resources a CloudFormation stack may hold)",
        )
    windows = tuple(_window(item, f"{path}[{index}]") for index, item in enumerate(raw))
    seen: set[str] = set()
    for index, window in enumerate(windows):
        if window.name in seen:
            raise ConfigError(f"{path}[{index}].name", f"duplicate window name {window.name!r}")
        seen.add(window.name)
    return windows


# ---------------------------------------------------------------------------------------------- entry points


def _logging_role(value: Any, path: str) -> str:
    if isinstance(value, str) and (
        value in (LOGGING_ROLE_AUTO, LOGGING_ROLE_EXISTING) or ROLE_ARN_PATTERN.match(value)
    ):
        return value
    raise ConfigError(
        path,
        f"must be '{LOGGING_ROLE_AUTO}', '{LOGGING_ROLE_EXISTING}' or an IAM role ARN "
        f"(arn:aws:iam::<12-digit account>:role/<name>), got {value!r}",
    )


def _change_events(raw: Any, path: str) -> ChangeEventsConfig:
    raw = _object(raw, path, _CHANGE_EVENTS_FIELDS)
    sns_topic = raw.get("sns_topic", False)
    if not isinstance(sns_topic, bool):
        raise ConfigError(
            f"{path}.sns_topic",
            f"must be true (forward the change events to an SNS topic this stack creates) or false, got {sns_topic!r}",
        )
    return ChangeEventsConfig(sns_topic=sns_topic)


def _stage(value: Any, path: str) -> str:
    stage = _string(value, path, STAGE_PATTERN)
    segment = GUARD_SEGMENT.search(stage)
    if segment is not None:
        guarded = stage[: segment.start()]
        raise ConfigError(
            path,
            f"must not contain a '-guard' segment, got {stage!r}: its alarms (named "
            f"'{vocabulary.DEFAULT_SERVICE}-{stage}-...') would match the guard prefix of stage {guarded!r} "
            f"({default_guard_alarm_prefix(guarded)!r}) and revert its changes; choose another name",
        )
    return stage


def _region(raw: Mapping[str, Any], path: str, default_region: str | None) -> tuple[str, str]:
    if "region" in raw:
        return _string(raw["region"], f"{path}.region", REGION_PATTERN), REGION_FROM_CONFIG
    if default_region:
        return default_region, REGION_FROM_ENVIRONMENT
    return "", REGION_UNKNOWN


def powertools_parameter_published(region: str) -> bool:
    """Whether Powertools publishes the public parameter the ``layer`` mode resolves in ``region``."""
    return region in POWERTOOLS_PARAMETER_REGIONS


def _powertools(raw: Mapping[str, Any], path: str, region: str, region_source: str) -> str:
    powertools = _string(raw.get("powertools", POWERTOOLS_LAYER), f"{path}.powertools")
    if powertools not in POWERTOOLS_MODES:
        raise ConfigError(f"{path}.powertools", f"must be one of {list(POWERTOOLS_MODES)}, got {powertools!r}")
    if powertools == POWERTOOLS_LAYER and region and not powertools_parameter_published(region):
        source = f"{path}.region" if region_source == REGION_FROM_CONFIG else REGION_FROM_ENVIRONMENT
        raise ConfigError(
            f"{path}.powertools",
            f"'{POWERTOOLS_LAYER}' resolves Powertools' public SSM parameter, which is not published in {region} "
            f'(the region of {source}); set "powertools": "{POWERTOOLS_BUNDLED}" (the pinned release installed '
            "at synth as a layer of the stack), or deploy to a region of Powertools' parameter matrix",
        )
    return powertools


def _api_resource_policy(raw: Any, path: str) -> ApiResourcePolicy | None:
    if raw is None:
        return None
    raw = _object(raw, path, _RESOURCE_POLICY_FIELDS)
    if len(raw) != 1:
        raise ConfigError(
            path, f"give exactly one of {sorted(_RESOURCE_POLICY_FIELDS)} (or leave the key out: no resource policy)"
        )
    if "account" in raw:
        if raw["account"] is not True:
            raise ConfigError(
                f"{path}.account", f"must be true (principals of the stack's account only), got {raw['account']!r}"
            )
        return ApiResourcePolicy(account=True)
    if "organization_id" in raw:
        return ApiResourcePolicy(
            organization_id=_string(raw["organization_id"], f"{path}.organization_id", ORGANIZATION_ID_PATTERN)
        )
    ids = raw["vpc_endpoint_ids"]
    if not isinstance(ids, list) or not ids:
        raise ConfigError(f"{path}.vpc_endpoint_ids", f"must be a non-empty list of VPC endpoint ids, got {ids!r}")
    endpoints = tuple(
        _string(item, f"{path}.vpc_endpoint_ids[{index}]", VPC_ENDPOINT_PATTERN) for index, item in enumerate(ids)
    )
    if len(set(endpoints)) != len(endpoints):
        raise ConfigError(f"{path}.vpc_endpoint_ids", f"lists an endpoint twice: {list(endpoints)}")
    return ApiResourcePolicy(vpc_endpoint_ids=endpoints)


def _reserved_concurrency(raw: Mapping[str, Any], path: str) -> int | None:
    value = raw.get("read_reserved_concurrency")
    if value is None:
        return None
    return _int(value, f"{path}.read_reserved_concurrency", *READ_RESERVED_CONCURRENCY)


def snapstart_region_problem(region: str) -> str:
    """Why SnapStart for Python cannot be turned on in ``region`` ("" when it can)."""
    if not region:
        return "the stage's region is unknown at synth: set the stage's region (or deploy with CDK_DEFAULT_REGION)"
    if region in SNAPSTART_UNAVAILABLE_REGIONS or region.startswith(SNAPSTART_OTHER_PARTITIONS):
        return f"Lambda SnapStart is not available in {region}"
    return ""


def snapstart_runtime_problem(runtime: str) -> str:
    """Why SnapStart cannot be turned on for a function of ``runtime`` (``python3.13``) ("" when it can)."""
    match = re.fullmatch(r"python(\d+)\.(\d+)", runtime)
    if match is None or (int(match[1]), int(match[2])) < SNAPSTART_MIN_PYTHON:
        low = ".".join(map(str, SNAPSTART_MIN_PYTHON))
        return f"Lambda SnapStart for Python needs python{low} or later, not {runtime}"
    return ""


def _snapstart(raw: Mapping[str, Any], path: str, region: str) -> bool:
    key = f"{path}.read_snapstart"
    value = raw.get("read_snapstart", False)
    if not isinstance(value, bool):
        raise ConfigError(key, f"must be true or false, got {value!r}")
    if value:
        problem = snapstart_region_problem(region) or snapstart_runtime_problem(LAMBDA_RUNTIME)
        if problem:
            raise ConfigError(key, f"{problem}; leave it out (off) for this stage")
    return value


def parse_config(raw: Any, stage: Any = None, default_region: str | None = None) -> FlagsConfig:
    """Validate the ``singleton-flags`` context object (a mapping, or its JSON text as given by ``-c``).

    ``stage`` (the context's top-level ``stage``, from ``-c stage=<name>``) overrides the object's ``stage``.
    ``default_region`` (the CDK CLI's ``CDK_DEFAULT_REGION``) is the stage's region when the object names none.
    """
    path = CONTEXT_KEY
    if stage is not None:
        _stage(stage, STAGE_CONTEXT_KEY)
    if raw is None:
        raise ConfigError(path, "is missing from cdk.json's context")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ConfigError(path, f"is not valid JSON: {exc}") from exc
    raw = _object(raw, path, _TOP_FIELDS)
    log_retention = _int(_require(raw, "log_retention_days", path), f"{path}.log_retention_days", 1, 3653)
    if log_retention not in LOG_RETENTION_DAYS:
        raise ConfigError(
            f"{path}.log_retention_days", f"must be one of CloudWatch's {list(LOG_RETENTION_DAYS)}, got {log_retention}"
        )
    system_log_level = _string(raw.get("system_log_level", DEFAULT_SYSTEM_LOG_LEVEL), f"{path}.system_log_level")
    if system_log_level not in SYSTEM_LOG_LEVELS:
        raise ConfigError(
            f"{path}.system_log_level", f"must be one of {list(SYSTEM_LOG_LEVELS)}, got {system_log_level!r}"
        )
    region, region_source = _region(raw, path, default_region)
    powertools = _powertools(raw, path, region, region_source)
    termination_protection = raw.get("termination_protection", True)
    if not isinstance(termination_protection, bool):
        raise ConfigError(f"{path}.termination_protection", f"must be true or false, got {termination_protection!r}")
    final_stage = stage if stage is not None else _stage(_require(raw, "stage", path), f"{path}.stage")
    guard_prefix = (
        _guard_alarm_prefix(raw["guard_alarm_prefix"], path, final_stage) if "guard_alarm_prefix" in raw else ""
    )
    alarm_email = _string(raw.get("alarm_email", ""), f"{path}.alarm_email")
    if alarm_email and not EMAIL_PATTERN.match(alarm_email):
        raise ConfigError(f"{path}.alarm_email", f"must be an email address or empty, got {alarm_email!r}")
    return FlagsConfig(
        stage=final_stage,
        cache_max_age_seconds=_int(
            _require(raw, "cache_max_age_seconds", path), f"{path}.cache_max_age_seconds", *CACHE_MAX_AGE_SECONDS
        ),
        max_stale_seconds=_setting(raw, "max_stale_seconds", path, contract.MAX_STALE),
        audit_retention_days=_setting(raw, "audit_retention_days", path, contract.AUDIT_RETENTION_DAYS),
        log_retention_days=log_retention,
        api_throttling=_throttling(_require(raw, "api_throttling", path), f"{path}.api_throttling"),
        alarm_email=alarm_email,
        maintenance_windows=_windows(raw.get("maintenance_windows", []), f"{path}.maintenance_windows"),
        system_log_level=system_log_level,
        apigw_account_logging_role=_logging_role(
            raw.get("apigw_account_logging_role", LOGGING_ROLE_AUTO), f"{path}.apigw_account_logging_role"
        ),
        powertools=powertools,
        termination_protection=termination_protection,
        guard_alarm_prefix=guard_prefix,
        change_events=_change_events(raw.get("change_events", {}), f"{path}.change_events"),
        region=region,
        region_source=region_source,
        api_resource_policy=_api_resource_policy(raw.get("api_resource_policy"), f"{path}.api_resource_policy"),
        read_reserved_concurrency=_reserved_concurrency(raw, path),
        read_snapstart=_snapstart(raw, path, region),
        flags_item=_flags_item(raw.get("flags_item", SINGLETON_SK), f"{path}.flags_item"),
    )


def _flags_item(value: Any, path: str) -> str:
    """The flags item's sort key: ``FLAGS#V<n>`` (n from 1), the item a migration made the live one."""
    if not isinstance(value, str) or not FLAGS_ITEM_PATTERN.match(value):
        raise ConfigError(path, f"must be a flags item's sort key, FLAGS#V<n> (n from 1), got {value!r}")
    return value


def _setting(raw: Mapping[str, Any], key: str, path: str, variable: contract.Integer) -> int:
    """A required integer setting, within the limits of the variable the functions read it from."""
    return _int(_require(raw, key, path), f"{path}.{key}", variable.low, variable.high)


def default_guard_alarm_prefix(stage: str) -> str:
    """Alarms named ``singleton-flags-<stage>-guard-...`` may guard a change in that stage (one rule per stage)."""
    return f"{vocabulary.DEFAULT_SERVICE}-{stage}-guard-"


def _guard_alarm_prefix(value: Any, path: str, stage: str) -> str:
    """A configured prefix, refused where it would match the alarms of another stage: within the service's names
    (``singleton-flags-...``, where every stage's stack names its alarms), only this stage's own guard prefix."""
    key = f"{path}.guard_alarm_prefix"
    prefix = _string(value, key)
    if not GUARD_ALARM_PREFIX_PATTERN.match(prefix):
        raise ConfigError(
            key,
            f"must be {GUARD_ALARM_PREFIX_RULE} (the start of the CloudWatch alarm names that may guard a change), "
            f"got {prefix!r}",
        )
    service = f"{vocabulary.DEFAULT_SERVICE}-"
    own = default_guard_alarm_prefix(stage)
    overlaps_service = prefix.startswith(service) or service.startswith(prefix)
    if overlaps_service and not prefix.startswith(own):
        raise ConfigError(
            key,
            f"{prefix!r} would match alarms of other stages (every stage's alarms are named '{service}<stage>-...'); "
            f"leave it out (the stage's default, {own!r}), start it with {own!r}, or choose a prefix outside "
            f"'{service}'",
        )
    return prefix


def load_config(path: str | Path = "cdk.json", default_region: str | None = None) -> FlagsConfig:
    """Read cdk.json (a relative path from the working directory, where the CDK CLI runs the app) and validate its
    ``singleton-flags`` context (``default_region``: as ``parse_config``'s)."""
    file = Path(path)
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(CONTEXT_KEY, f"cannot read {file}: {exc}") from exc
    return parse_config(document.get("context", {}).get(CONTEXT_KEY), default_region=default_region)


# What a window's schedule delivers to the maintenance function (the local runner passes the current time).
schedule_payload = contract.window_payload


def deployment(config: FlagsConfig, table_name: str) -> contract.Deployment:
    """What the functions of ``config``'s stage are told (``table_name``: the stack's token, or the runner's name)."""
    return contract.Deployment(
        table_name=table_name,
        stage=config.stage,
        max_age_seconds=config.cache_max_age_seconds,
        max_stale_seconds=config.max_stale_seconds,
        audit_retention_days=config.audit_retention_days,
        guard_alarm_prefix=config.guard_prefix,
        event_bus_name=event_bus_name(config.stage),
        metrics_namespace=metrics_namespace(config.stage),
        flags_item=config.flags_item,
    )


def function_environment(config: FlagsConfig, table_name: str, function: str) -> dict[str, str]:
    """The environment the stack gives a function (``contract.function_environment``); the local runner's too."""
    return contract.function_environment(deployment(config, table_name), function)


def deployment_document(config: FlagsConfig) -> str:
    """The deployment document the stack writes into the functions' asset (``contract.deployment_document``)."""
    return contract.deployment_document([window.definition for window in config.maintenance_windows])
