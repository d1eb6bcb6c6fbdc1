"""What a console reads from the write function: GET /flags/declarations and GET /flags/windows (on moto)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from singleton_flags.declarations import parse_declarations
from singleton_flags_service.contract import (
    DECLARATIONS_FILE,
    DEPLOYMENT_FILE_VARIABLE,
    SettingsError,
    WindowDefinition,
    deployment_document,
)
from singleton_flags_service.maintenance.windows import window_schedules
from tests.support.unit import WriteApi, body_of, headers_of

CONSTRAINT_KEYS = {"min", "max", "enum", "max_length"}


def schedules(*windows: dict[str, str]) -> Any:
    """The write function's schedules of these windows, as its cold start parses them from the deployment document."""
    return window_schedules(WindowDefinition(**window, duration_seconds=3600) for window in windows)


# Operational flags, permanent by default (maintenance, and a fallback unlike the initial value)
PERMANENT = {"maintenance_mode", "signup_enabled", "api_rate_limit_per_minute", "trace_sample_rate"}


class TestDeclarations:
    def test_every_flag_in_declaration_order_with_its_type_values_and_description(self, seeded_api: WriteApi) -> None:
        # Given the bundled declarations file
        declared = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))["flags"]
        # When GET /flags/declarations
        response = seeded_api("GET", "/flags/declarations")
        # Then 200, one entry per flag, in the file's order, each as declared (a float's 0 as 0.0)
        assert response["statusCode"] == 200
        assert headers_of(response)["Content-Type"] == "application/json"
        answered = body_of(response)["declarations"]
        assert [entry["name"] for entry in answered] == [flag["name"] for flag in declared]
        for entry, flag in zip(answered, declared, strict=True):
            lifecycle = {"state": "active", "permanent": flag["name"] in PERMANENT}
            assert entry == {"description": "", **flag, **lifecycle}

    def test_only_the_constraints_a_flag_has(self, seeded_api: WriteApi) -> None:
        answered = {entry["name"]: entry for entry in body_of(seeded_api("GET", "/flags/declarations"))["declarations"]}
        # a bool has none; an int its bounds; a string with an enum its enum; no key is ever null
        assert not set(answered["signup_enabled"]) & CONSTRAINT_KEYS
        assert set(answered["api_rate_limit_per_minute"]) & CONSTRAINT_KEYS == {"min", "max"}
        assert set(answered["search_ranking"]) & CONSTRAINT_KEYS == {"enum"}
        assert all(value is not None for entry in answered.values() for value in entry.values())

    def test_a_string_with_a_max_length_carries_it(self, seeded_api: WriteApi, monkeypatch: pytest.MonkeyPatch) -> None:
        # Given declarations with a string limited to 40 characters and a float bounded below only
        declarations = parse_declarations(
            {
                "flags": [
                    {"name": "banner", "type": "string", "initial": "", "fallback": "", "max_length": 40},
                    {"name": "ratio", "type": "float", "initial": 1, "fallback": 0, "min": 0, "description": "r"},
                ]
            }
        )
        monkeypatch.setattr(seeded_api.module, "DECLARATION_LIST", {"declarations": declarations.as_documents()})
        # When GET /flags/declarations / Then exactly what each declares, floats as floats
        assert body_of(seeded_api("GET", "/flags/declarations"))["declarations"] == [
            {"name": "banner", "type": "string", "initial": "", "fallback": "", "max_length": 40, "description": ""}
            | {"state": "active", "permanent": False},
            {"name": "ratio", "type": "float", "initial": 1.0, "fallback": 0.0, "min": 0, "description": "r"}
            | {"state": "active", "permanent": True},
        ]


class TestWindows:
    def test_no_window_declared_is_an_empty_list(self, seeded_api: WriteApi, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(seeded_api.module, "WINDOW_SCHEDULES", ())
        response = seeded_api("GET", "/flags/windows")
        assert response["statusCode"] == 200
        assert body_of(response) == {"windows": []}

    def test_each_window_with_its_crons_zone_and_next_start_and_end(
        self, seeded_api: WriteApi, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Given a weekly window on Sundays 03:00-04:00 Paris time, and a nightly one in Tokyo
        monkeypatch.setattr(
            seeded_api.module,
            "WINDOW_SCHEDULES",
            schedules(
                {
                    "name": "weekly",
                    "start": "cron(0 3 ? * SUN *)",
                    "end": "cron(0 4 ? * SUN *)",
                    "timezone": "Europe/Paris",
                },
                {
                    "name": "nightly",
                    "start": "cron(0 22 * * ? *)",
                    "end": "cron(30 0 * * ? *)",
                    "timezone": "Asia/Tokyo",
                },
            ),
        )
        before = datetime.now(UTC)
        # When GET /flags/windows
        response = seeded_api("GET", "/flags/windows")
        # Then both, in declared order, each next start and end in the future, within a week (a day), at the
        # declared wall-clock time in its zone, with that zone's offset; the UTC forms name the same instants
        assert response["statusCode"] == 200
        weekly, nightly = body_of(response)["windows"]
        assert (weekly["name"], weekly["start"], weekly["end"], weekly["timezone"]) == (
            "weekly",
            "cron(0 3 ? * SUN *)",
            "cron(0 4 ? * SUN *)",
            "Europe/Paris",
        )
        for window, horizon, wall_clock in (
            (weekly, timedelta(days=7), {"next_start": (6, 3, 0), "next_end": (6, 4, 0)}),
            (nightly, timedelta(days=1), {"next_start": (None, 22, 0), "next_end": (None, 0, 30)}),
        ):
            zone = ZoneInfo(window["timezone"])
            for key, (weekday, hour, minute) in wall_clock.items():
                local = datetime.fromisoformat(window[key])
                utc_text = window[f"{key}_utc"]
                assert utc_text.endswith("Z")
                assert datetime.fromisoformat(utc_text) == local
                assert before < local <= before + horizon
                assert local.utcoffset() == local.astimezone(zone).utcoffset()
                assert (local.hour, local.minute) == (hour, minute)
                assert weekday is None or local.weekday() == weekday

    def test_inside_a_window_the_next_end_comes_before_the_next_start(self) -> None:
        # Given Sunday's 03:00-04:00 Paris window, and now 03:30 Paris time that Sunday (inside it)
        (weekly,) = schedules(
            {"name": "weekly", "start": "cron(0 3 ? * SUN *)", "end": "cron(0 4 ? * SUN *)", "timezone": "Europe/Paris"}
        )
        now = datetime(2026, 12, 6, 2, 30, tzinfo=UTC)
        # When its next times are computed / Then the end is today's, the start next Sunday's
        assert weekly.upcoming(now) == {
            "name": "weekly",
            "start": "cron(0 3 ? * SUN *)",
            "end": "cron(0 4 ? * SUN *)",
            "timezone": "Europe/Paris",
            "next_start": "2026-12-13T03:00:00+01:00",
            "next_end": "2026-12-06T04:00:00+01:00",
            "next_start_utc": "2026-12-13T02:00:00Z",
            "next_end_utc": "2026-12-06T03:00:00Z",
        }

    def test_a_window_that_never_fires_again_has_no_next_time(self) -> None:
        (once,) = schedules(
            {"name": "once", "start": "cron(0 3 1 1 ? 2020)", "end": "cron(0 4 1 1 ? 2020)", "timezone": "UTC"}
        )
        window = once.upcoming(datetime(2026, 1, 1, tzinfo=UTC))
        assert [window[key] for key in ("next_start", "next_end", "next_start_utc", "next_end_utc")] == [None] * 4


@pytest.mark.parametrize(
    ("start", "names"),
    [
        ("cron(0 3 * * 0)", "'w'"),  # five fields
        ("cron(0 3 * * SUN *)", "'w'"),  # day-of-month and day-of-week both set
        ("cron(61 3 ? * SUN *)", "minutes"),
    ],
)
def test_a_window_whose_crons_do_not_parse_fails_the_cold_start_naming_the_document_and_the_window(
    start: str, names: str
) -> None:
    with pytest.raises(SettingsError, match=r"deployment\.json") as raised:
        schedules({"name": "w", "start": start, "end": "cron(0 4 ? * SUN *)", "timezone": "UTC"})
    assert "maintenance_windows[0]" in str(raised.value) and names in str(raised.value)


def test_only_the_write_function_imports_croniter_which_only_it_has_as_a_layer(tmp_path: Path) -> None:
    # Given a fresh interpreter in the functions' asset root, each function's module loaded with a window deployed
    script = (
        "import sys, json, importlib; importlib.import_module(sys.argv[1]); "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'croniter' or m.endswith('.cron'))))"
    )
    document = tmp_path / "deployment.json"
    document.write_text(
        deployment_document([WindowDefinition("w", "cron(0 3 ? * SUN *)", "cron(0 4 ? * SUN *)", "UTC", 3600)])
    )
    env = {
        **os.environ,
        "TABLE_NAME": "t",
        "AWS_DEFAULT_REGION": "us-east-1",
        DEPLOYMENT_FILE_VARIABLE: str(document),
    }
    functions = Path(__file__).resolve().parents[2] / "functions"
    loaded = {}
    for module in (
        "singleton_flags_service.handlers.read_api",
        "singleton_flags_service.handlers.maintenance",
        "singleton_flags_service.handlers.write_api",
    ):
        out = subprocess.run(
            [sys.executable, "-c", script, module], env=env, cwd=functions, capture_output=True, text=True, check=True
        )
        loaded[module] = json.loads(out.stdout)
    # Then the maintenance and read functions cold-start without it (they have no croniter layer); the write one uses it
    assert (
        loaded["singleton_flags_service.handlers.read_api"]
        == loaded["singleton_flags_service.handlers.maintenance"]
        == []
    )
    assert (
        "croniter" in loaded["singleton_flags_service.handlers.write_api"]
        and "singleton_flags_service.maintenance.cron" in loaded["singleton_flags_service.handlers.write_api"]
    )
