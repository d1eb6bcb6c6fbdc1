"""singleton_flags_infra.config: cdk.json's `singleton-flags` context validated at synth, each bad value named by its
key.

No synth here: the config is pure Python.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

import pytest

from singleton_flags_infra.config import (
    CACHE_MAX_AGE_SECONDS,
    ConfigError,
    MaintenanceWindow,
    deployment_document,
    function_environment,
    load_config,
    parse_config,
    schedule_payload,
)
from singleton_flags_service import contract
from tests.support.packaging import ROOT as REPO_ROOT

pytestmark = pytest.mark.infra

KEY = "singleton-flags"


def settings(**changes: Any) -> dict[str, Any]:
    """cdk.json's settings, with top-level keys replaced."""
    raw = copy.deepcopy(json.loads((REPO_ROOT / "cdk.json").read_text())["context"][KEY])
    raw.update(changes)
    return raw


def one_window(**window: Any) -> dict[str, Any]:
    base = {"name": "w", "timezone": "UTC"}
    return settings(maintenance_windows=[{**base, **window}])


def window_of(raw: dict[str, Any]) -> MaintenanceWindow:
    (window,) = parse_config(raw).maintenance_windows
    return window


def assert_refused(raw: Any, key_path: str, *fragments: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    message = str(caught.value)
    assert message.startswith(f"{key_path}: "), message
    assert caught.value.path == key_path
    for fragment in fragments:
        assert fragment in message, message


# ---------------------------------------------------------------------------------------------- the shipped cdk.json


def test_shipped_cdk_json_is_valid_and_typed() -> None:
    # Given the repository's cdk.json / When loaded / Then every setting is typed as declared there
    config = load_config()
    assert config.stage == "prod"
    assert (config.cache_max_age_seconds, config.max_stale_seconds) == (5, 300)
    assert (config.audit_retention_days, config.log_retention_days) == (365, 30)
    assert (config.api_throttling.read.rate_limit, config.api_throttling.read.burst_limit) == (200, 400)
    assert (config.api_throttling.write.rate_limit, config.api_throttling.write.burst_limit) == (5, 10)
    assert config.alarm_email == ""
    assert config.system_log_level == "WARN"  # the default: START/END/REPORT lines are not billed
    (window,) = config.maintenance_windows
    assert window == MaintenanceWindow(
        name="weekly-patching",
        start="cron(0 3 ? * SUN *)",
        end="cron(0 4 ? * SUN *)",
        timezone="Europe/Paris",
        duration_seconds=3600,
        description="Database and dependency patching, Sundays 03:00-04:00 Paris time.",
    )


def test_load_config_reads_a_given_file(tmp_path: Any) -> None:
    # Given another cdk.json with a different stage / When loaded from its path / Then that file is used
    document = json.loads((REPO_ROOT / "cdk.json").read_text())
    document["context"][KEY]["stage"] = "dev"
    (tmp_path / "cdk.json").write_text(json.dumps(document))
    assert load_config(tmp_path / "cdk.json").stage == "dev"


def test_guard_alarm_prefix_defaults_to_the_stages_and_may_be_set() -> None:
    assert parse_config(settings()).guard_prefix == "singleton-flags-prod-guard-"
    assert parse_config(settings(), stage="dev").guard_prefix == "singleton-flags-dev-guard-"
    assert parse_config(settings(guard_alarm_prefix="payments-guard-")).guard_prefix == "payments-guard-"


def test_config_is_frozen() -> None:
    config = load_config()
    with pytest.raises(AttributeError):
        config.stage = "other"  # type: ignore[misc]


def test_config_module_does_not_import_cdk() -> None:
    # The local runner imports singleton_flags_infra.config: it must not drag in aws_cdk (jsii starts a Node process)
    import subprocess

    code = (
        "import sys, singleton_flags_infra.config; "
        "sys.exit(1 if any(m.startswith('aws_cdk') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=False).returncode == 0


def test_system_log_level_can_bring_platform_lines_back() -> None:
    assert parse_config(settings(system_log_level="INFO")).system_log_level == "INFO"


def test_context_given_as_json_text_is_accepted() -> None:
    # `cdk synth -c singleton-flags='{...}'` hands the object over as a string
    assert parse_config(json.dumps(settings(stage="cli"))).stage == "cli"


# ---------------------------------------------------------------------------------------------- payload and env


def test_schedule_payload_is_action_window_and_scheduled_time() -> None:
    at = "<aws.scheduler.scheduled-time>"
    assert schedule_payload("weekly-patching", "start") == {
        "action": "start",
        "window": "weekly-patching",
        "scheduled_time": at,
    }
    assert schedule_payload("weekly-patching", "end") == {
        "action": "end",
        "window": "weekly-patching",
        "scheduled_time": at,
    }
    # the local runner delivers now as the scheduled time
    assert (
        schedule_payload("weekly-patching", "end", "2026-03-22T18:59:43Z")["scheduled_time"] == "2026-03-22T18:59:43Z"
    )
    with pytest.raises(ValueError, match="action"):
        schedule_payload("weekly-patching", "stop")


def test_the_deployment_document_gives_each_window_its_crons_and_its_duration() -> None:
    raw = settings(
        maintenance_windows=[
            {"name": "a", "start": "cron(0 3 ? * SUN *)", "duration_minutes": 90, "timezone": "UTC"},
            {"name": "b", "start": "cron(0 22 * * ? *)", "end": "cron(30 0 * * ? *)", "timezone": "Asia/Tokyo"},
        ]
    )
    assert json.loads(deployment_document(parse_config(raw))) == {
        "maintenance_windows": [
            {
                "name": "a",
                "start": "cron(0 3 ? * SUN *)",
                "end": "cron(30 4 ? * SUN *)",
                "timezone": "UTC",
                "duration_seconds": 5400,
            },
            {
                "name": "b",
                "start": "cron(0 22 * * ? *)",
                "end": "cron(30 0 * * ? *)",
                "timezone": "Asia/Tokyo",
                "duration_seconds": 9000,
            },
        ]
    }
    assert json.loads(deployment_document(parse_config(settings(maintenance_windows=[])))) == {
        "maintenance_windows": []
    }


def test_at_most_max_windows_windows() -> None:
    # Given as many windows as a deployment may declare / Then accepted; one more / Then refused, saying why
    daily = [
        {"name": f"w{index}", "start": f"cron({index} 3 * * ? *)", "duration_minutes": 1, "timezone": "UTC"}
        for index in range(contract.MAX_WINDOWS + 1)
    ]
    assert len(parse_config(settings(maintenance_windows=daily[:-1])).maintenance_windows) == contract.MAX_WINDOWS
    assert_refused(
        settings(maintenance_windows=daily),
        f"{KEY}.maintenance_windows",
        f"at most {contract.MAX_WINDOWS} windows, got {contract.MAX_WINDOWS + 1}",
        "500 resources",
    )


@pytest.mark.parametrize(
    ("key", "variable"),
    [("max_stale_seconds", contract.MAX_STALE), ("audit_retention_days", contract.AUDIT_RETENTION_DAYS)],
)
def test_cdk_json_takes_exactly_what_the_functions_accept(key: str, variable: contract.Integer) -> None:
    # Given a setting the functions read from a variable / Then cdk.json takes the variable's limits, no more
    assert getattr(parse_config(settings(**{key: variable.low})), key) == variable.low
    assert getattr(parse_config(settings(**{key: variable.high})), key) == variable.high
    for outside in (variable.low - 1, variable.high + 1):
        assert_refused(settings(**{key: outside}), f"{KEY}.{key}", f"between {variable.low} and {variable.high}")


def test_cdk_json_cache_age_is_within_what_the_functions_accept() -> None:
    # Given the cache age a deployment settles for (narrower on purpose: infra/config.py says why)
    low, high = CACHE_MAX_AGE_SECONDS
    # Then every value it takes is one the read function takes at cold start, and written as it reads it
    assert contract.MAX_AGE.low <= low <= high <= contract.MAX_AGE.high
    for seconds in (low, high):
        config = parse_config(settings(cache_max_age_seconds=seconds))
        environment = function_environment(config, "t", "read")
        assert contract.Settings.from_env(environment).max_age_seconds == seconds


# ---------------------------------------------------------------------------------------------- windows: good


@pytest.mark.parametrize(
    ("window", "end", "seconds"),
    [
        ({"start": "cron(0 3 ? * SUN *)", "duration_minutes": 60}, "cron(0 4 ? * SUN *)", 3600),
        ({"start": "cron(45 3 ? * MON-FRI *)", "duration_minutes": 30}, "cron(15 4 ? * MON-FRI *)", 1800),
        # every day, crossing midnight: the shifted end is still every day
        ({"start": "cron(0 22 * * ? *)", "duration_minutes": 180}, "cron(0 1 * * ? *)", 10800),
        # an explicit end on the next day of the week
        ({"start": "cron(0 22 ? * SAT *)", "end": "cron(0 2 ? * SUN *)"}, "cron(0 2 ? * SUN *)", 14400),
        # weekdays: each night's window closes the next morning
        ({"start": "cron(0 22 ? * MON-FRI *)", "end": "cron(0 6 ? * TUE-SAT *)"}, "cron(0 6 ? * TUE-SAT *)", 28800),
        # last Friday of the month and the first Monday (EventBridge's L and #)
        ({"start": "cron(0 1 ? * 6L *)", "duration_minutes": 120}, "cron(0 3 ? * 6L *)", 7200),
        ({"start": "cron(0 1 ? * 2#1 *)", "duration_minutes": 15}, "cron(15 1 ? * 2#1 *)", 900),
    ],
)
def test_window_end_and_duration_are_derived(window: dict[str, Any], end: str, seconds: int) -> None:
    parsed = window_of(one_window(**window))
    assert parsed.end == end
    assert parsed.duration_seconds == seconds


def test_window_length_is_wall_clock_across_dst() -> None:
    # Given a window in a zone with DST / Then its length is what the operator wrote, not a UTC difference
    parsed = window_of(one_window(start="cron(0 1 * * ? *)", end="cron(0 4 * * ? *)", timezone="Europe/Paris"))
    assert parsed.duration_seconds == 3 * 3600


# ---------------------------------------------------------------------------------------------- windows: refused


@pytest.mark.parametrize(
    ("window", "key", "fragment"),
    [
        ({"start": "rate(1 day)", "duration_minutes": 5}, "start", "EventBridge cron"),
        ({"start": "0 3 * * 0", "duration_minutes": 5}, "start", "EventBridge cron"),
        ({"start": "cron(0 3 ? * SUN)", "duration_minutes": 5}, "start", "6 fields"),
        ({"start": "cron(61 3 ? * SUN *)", "duration_minutes": 5}, "start", "minutes value 61"),
        ({"start": "cron(0 24 ? * SUN *)", "duration_minutes": 5}, "start", "hours value 24"),
        ({"start": "cron(0 3 ? * FUNDAY *)", "duration_minutes": 5}, "start", "FUNDAY"),
        ({"start": "cron(0 3 ? * 0 *)", "duration_minutes": 5}, "start", "outside 1-7"),
        ({"start": "cron(0 3 * * SUN *)", "duration_minutes": 5}, "start", "exactly one of day-of-month"),
        ({"start": "cron(0 3 ? * ? *)", "duration_minutes": 5}, "start", "exactly one of day-of-month"),
        ({"start": "cron(0 ? * * ? *)", "duration_minutes": 5}, "start", "'?' is only allowed"),
        ({"start": "cron(0 5-3 * * ? *)", "duration_minutes": 5}, "start", "backwards"),
        ({"start": "cron(0 3 ? * SUN 2020)", "duration_minutes": 5}, "start", "never fires"),
        ({"start": "cron(0 3 ? * SUN *)", "end": "cron(0 3 ? * SUN *)"}, "end", "at the moment it starts"),
        # end before start on the same day: the next end is six days later
        ({"start": "cron(0 4 ? * SUN *)", "end": "cron(0 3 ? * SUN *)"}, "end", "within 24 h"),
        ({"start": "cron(0 22 ? * FRI *)", "end": "cron(0 6 ? * MON *)"}, "end", "within 24 h"),
        ({"start": "cron(0 * * * ? *)", "end": "cron(30 */2 * * ? *)"}, "end", "starts again"),
        ({"start": "cron(0 3 ? * SUN,WED *)", "end": "cron(0 4 ? * SUN *)"}, "end", "within 24 h"),
        ({"start": "cron(0 3 ? * SUN *)", "end": "cron(0 4 ? * SUN 1)"}, "end", "year value 1"),
        ({"start": "cron(0 * ? * SUN *)", "duration_minutes": 30}, "duration_minutes", "fixed minute and hour"),
        ({"start": "cron(0 22 ? * SUN *)", "duration_minutes": 180}, "duration_minutes", "crosses midnight"),
        ({"start": "cron(0 22 1 * ? *)", "duration_minutes": 180}, "duration_minutes", "crosses midnight"),
        ({"start": "cron(0 3 ? * SUN *)", "duration_minutes": 0}, "duration_minutes", "between 1 and 1440"),
        ({"start": "cron(0 3 ? * SUN *)", "duration_minutes": 1441}, "duration_minutes", "between 1 and 1440"),
        ({"start": "cron(0 3 ? * SUN *)", "duration_minutes": "60"}, "duration_minutes", "integer"),
        (
            {"start": "cron(0 3 ? * SUN *)", "duration_minutes": 60, "timezone": "Mars/Olympus"},
            "timezone",
            "unknown IANA time zone",
        ),
        (
            {"start": "cron(0 3 ? * SUN *)", "duration_minutes": 60, "timezone": ""},
            "timezone",
            "unknown IANA time zone",
        ),
        ({"start": "cron(0 3 ? * SUN *)", "duration_minutes": 60, "name": "Weekly Patching"}, "name", "must match"),
        ({"start": "cron(0 3 ? * SUN *)", "duration_minutes": 60, "name": "x" * 41}, "name", "must match"),
        ({"start": "cron(0 3 ? * SUN *)", "duration_minutes": 60, "description": 7}, "description", "string"),
    ],
)
def test_bad_window_is_refused_naming_its_key(window: dict[str, Any], key: str, fragment: str) -> None:
    assert_refused(one_window(**window), f"{KEY}.maintenance_windows[0].{key}", fragment)


@pytest.mark.parametrize(
    ("window", "fragment"),
    [
        ({"start": "cron(0 3 ? * SUN *)"}, "exactly one of 'end'"),
        ({"start": "cron(0 3 ? * SUN *)", "end": "cron(0 4 ? * SUN *)", "duration_minutes": 60}, "exactly one of"),
        ({"start": "cron(0 3 ? * SUN *)", "duration_minutes": 60, "owner": "me"}, "unknown key(s) ['owner']"),
    ],
)
def test_window_shape_is_refused_naming_the_window(window: dict[str, Any], fragment: str) -> None:
    assert_refused(one_window(**window), f"{KEY}.maintenance_windows[0]", fragment)


def test_missing_window_field_is_named() -> None:
    raw = settings(maintenance_windows=[{"name": "w", "start": "cron(0 3 ? * SUN *)", "duration_minutes": 5}])
    assert_refused(raw, f"{KEY}.maintenance_windows[0].timezone", "is required")


def test_duplicate_window_name_is_refused_at_the_second() -> None:
    window = {"name": "nightly", "start": "cron(0 3 * * ? *)", "duration_minutes": 30, "timezone": "UTC"}
    raw = settings(maintenance_windows=[window, {**window, "start": "cron(0 5 * * ? *)"}])
    assert_refused(raw, f"{KEY}.maintenance_windows[1].name", "duplicate window name 'nightly'")


def test_windows_must_be_a_list() -> None:
    assert_refused(settings(maintenance_windows={"name": "w"}), f"{KEY}.maintenance_windows", "must be a list")


# ---------------------------------------------------------------------------------------------- scalars refused


@pytest.mark.parametrize(
    ("changes", "key", "fragment"),
    [
        ({"stage": "Prod"}, "stage", "must match"),
        ({"stage": "a" * 22}, "stage", "must match"),
        ({"stage": "1st"}, "stage", "must match"),
        ({"cache_max_age_seconds": 0}, "cache_max_age_seconds", "between 1 and 300"),
        ({"cache_max_age_seconds": 301}, "cache_max_age_seconds", "between 1 and 300"),
        ({"cache_max_age_seconds": True}, "cache_max_age_seconds", "integer"),
        ({"max_stale_seconds": -1}, "max_stale_seconds", "between 0 and 3600"),
        ({"max_stale_seconds": 3601}, "max_stale_seconds", "between 0 and 3600"),
        ({"audit_retention_days": 0}, "audit_retention_days", "between 1 and 3650"),
        ({"log_retention_days": 31}, "log_retention_days", "CloudWatch"),
        ({"log_retention_days": 0}, "log_retention_days", "between"),
        ({"alarm_email": "not-an-email"}, "alarm_email", "email"),
        ({"alarm_email": None}, "alarm_email", "string"),
        ({"system_log_level": "ERROR"}, "system_log_level", "one of ['DEBUG', 'INFO', 'WARN']"),
        ({"guard_alarm_prefix": ""}, "guard_alarm_prefix", "8-200 characters"),
        ({"guard_alarm_prefix": "short-"}, "guard_alarm_prefix", "8-200 characters"),  # would match too many alarms
        ({"guard_alarm_prefix": "app guard-"}, "guard_alarm_prefix", "8-200 characters"),
        ({"guard_alarm_prefix": "app-guard-*"}, "guard_alarm_prefix", "8-200 characters"),
        ({"guard_alarm_prefix": "-app-guard-"}, "guard_alarm_prefix", "starting with a letter or digit"),
        ({"guard_alarm_prefix": "a" * 201}, "guard_alarm_prefix", "8-200 characters"),
        ({"guard_alarm_prefix": 7}, "guard_alarm_prefix", "string"),
    ],
)
def test_bad_setting_is_refused_naming_its_key(changes: dict[str, Any], key: str, fragment: str) -> None:
    assert_refused(settings(**changes), f"{KEY}.{key}", fragment)


@pytest.mark.parametrize(
    ("throttling", "key", "fragment"),
    [
        (
            {"read": {"rate_limit": -1, "burst_limit": 10}, "write": {"rate_limit": 1, "burst_limit": 1}},
            "read.rate_limit",
            "positive",
        ),
        (
            {"read": {"rate_limit": 10, "burst_limit": 0}, "write": {"rate_limit": 1, "burst_limit": 1}},
            "read.burst_limit",
            "positive integer",
        ),
        (
            {"read": {"rate_limit": 10, "burst_limit": 10}, "write": {"rate_limit": 0, "burst_limit": 1}},
            "write.rate_limit",
            "positive",
        ),
        (
            {"read": {"rate_limit": 10, "burst_limit": 10}, "write": {"rate_limit": "5", "burst_limit": 1}},
            "write.rate_limit",
            "number",
        ),
        (
            {"read": {"rate_limit": 10, "burst_limit": 10}, "write": {"rate_limit": 11, "burst_limit": 1}},
            "write.rate_limit",
            "must not exceed read.rate_limit",
        ),
        (
            {"read": {"rate_limit": 10, "burst_limit": 10}, "write": {"rate_limit": 5, "burst_limit": 20}},
            "write.burst_limit",
            "must not exceed read.burst_limit",
        ),
        ({"read": {"rate_limit": 10, "burst_limit": 10}}, "", "is required"),
    ],
)
def test_bad_throttling_is_refused_naming_its_key(throttling: dict[str, Any], key: str, fragment: str) -> None:
    path = f"{KEY}.api_throttling" + (f".{key}" if key else ".write")
    assert_refused(settings(api_throttling=throttling), path, fragment)


def test_missing_and_unknown_top_level_keys_are_named() -> None:
    raw = settings()
    del raw["stage"]
    assert_refused(raw, f"{KEY}.stage", "is required")
    assert_refused(settings(stages="prod"), KEY, "unknown key(s) ['stages']")
    assert_refused(None, KEY, "missing")
    assert_refused("{not json", KEY, "not valid JSON")


# ---------------------------------------------------------------------------------------------- change events


def test_change_events_forwarding_is_off_unless_asked() -> None:
    assert parse_config(settings()).change_events.sns_topic is False
    assert parse_config(settings(change_events={})).change_events.sns_topic is False
    assert parse_config(settings(change_events={"sns_topic": True})).change_events.sns_topic is True


@pytest.mark.parametrize(
    ("value", "key", "fragment"),
    [
        ({"sns_topic": "true"}, "change_events.sns_topic", "must be true"),
        ({"sns_topic": 1}, "change_events.sns_topic", "must be true"),
        ({"sns_topic": "arn:aws:sns:us-east-1:123456789012:flags"}, "change_events.sns_topic", "or false"),
        ({"topic": True}, "change_events", "unknown key(s) ['topic']"),
        (True, "change_events", "must be an object"),
    ],
)
def test_bad_change_events_setting_is_refused_naming_its_key(value: Any, key: str, fragment: str) -> None:
    assert_refused(settings(change_events=value), f"{KEY}.{key}", fragment)


def test_the_change_events_function_gets_its_bus_stage_and_table_for_the_unaudited_write_check() -> None:
    config = parse_config(settings(stage="staging"))
    assert function_environment(config, "flags-table", "change_events") == {
        "EVENT_BUS_NAME": "singleton-flags-staging",
        "FLAGS_STAGE": "staging",
        "TABLE_NAME": "flags-table",
        "POWERTOOLS_SERVICE_NAME": "singleton-flags",
        "POWERTOOLS_METRICS_NAMESPACE": "SingletonFlags/staging",
    }


def test_the_flags_item_is_said_to_every_function_of_the_flags_only_once_switched() -> None:
    # Given the default stage / Then no function is told an item: the template is what it was
    default = parse_config(settings())
    assert default.flags_item == "FLAGS#V1"
    assert all(contract.ITEM_SORT_KEY not in function_environment(default, "t", name) for name in contract.READERS)
    # Given a stage switched to FLAGS#V2 after a migration / Then every function of the flags reads and writes it
    switched = parse_config(settings(flags_item="FLAGS#V2"))
    told = {name: function_environment(switched, "t", name).get(contract.ITEM_SORT_KEY) for name in contract.READERS}
    assert told.pop("change_events") is None  # it reads the audit records and the migration's, never the flags
    assert set(told.values()) == {"FLAGS#V2"}
    # And anything but an item's key is refused, naming the setting
    for bad in ("FLAGS#V0", "flags#v2", "SETTINGS#APP", 2):
        assert_refused(settings(flags_item=bad), "singleton-flags.flags_item", "FLAGS#V<n>")
