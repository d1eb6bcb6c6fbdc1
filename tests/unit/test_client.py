"""The embedded client: an application reads its declared flags in-process, with the read function's reader."""

from __future__ import annotations

import importlib
import json
import logging
import pkgutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber

from singleton_flags import Flags, FlagsConfigError, FlagTypeMismatch, UndeclaredFlag
from singleton_flags.aws import READ_CLIENT_CONFIG, worst_call_seconds
from singleton_flags.client import ENV_MAX_AGE, ENV_MAX_STALE, ENV_REGION, ENV_SORT_KEY, ENV_TABLE
from singleton_flags.declarations import Declarations, load_declarations
from singleton_flags_service.vocabulary import CACHED, DEFAULT, STALE, STATIC
from tests.support.unit import START, CallCount, Clock, expire, flags_item

ROOT = Path(__file__).resolve().parents[2]
APP_DECLARATIONS = {
    "flags": [
        {"name": "maintenance_mode", "type": "bool", "initial": False, "fallback": True},
        {"name": "beta_banner", "type": "bool", "initial": False, "fallback": False},
    ]
}


@pytest.fixture
def flags(ddb: Any, table_name: str, declarations: Declarations, clock: Clock) -> Flags:
    """The client over the moto table, with the sample declarations, on the fake clock (max stale 60 s)."""
    return Flags(table_name=table_name, declarations=declarations, client=ddb, clock=clock, max_stale=60)


def expire_cache(flags: Flags) -> None:
    expire(flags._reader.provider)


class TestTypedReads:
    def test_each_declared_flag_reads_as_its_type(self, flags: Flags, put_flags: Any, declarations: Any) -> None:
        # Given a seeded item with a few values changed
        put_flags(version=3, signup_enabled=False, api_rate_limit_per_minute=42, search_ranking="hybrid")
        # When the application reads them
        # Then each comes back typed, as stored
        assert flags.get_bool("signup_enabled") is False
        assert flags.get_int("api_rate_limit_per_minute") == 42
        assert flags.get_float("trace_sample_rate") == 0.05
        assert flags.get_str("search_ranking") == "hybrid"
        assert flags.get("maintenance_mode") is False
        assert flags.all() == {
            **declarations.initials(),
            "signup_enabled": False,
            "api_rate_limit_per_minute": 42,
            "search_ranking": "hybrid",
        }

    def test_details_say_where_the_value_came_from(self, flags: Flags, put_flags: Any) -> None:
        # Given version 7 in the table
        put_flags(version=7)
        # When read twice
        first, second = flags.details("signup_enabled"), flags.details("signup_enabled")
        # Then the first was fetched, the second cached, both of version 7 fetched at the clock's time
        assert (first.value, first.reason, first.version, first.fetched_at) == (True, STATIC, 7, START)
        assert (second.reason, second.version) == (CACHED, 7)

    def test_an_undeclared_name_is_an_error_never_a_fallback(self, flags: Flags, put_flags: Any) -> None:
        put_flags()
        for read in (flags.get, flags.get_bool, flags.details):
            with pytest.raises(UndeclaredFlag, match="signup_enabeld"):
                read("signup_enabeld")

    def test_a_typed_read_of_another_type_is_an_error(self, flags: Flags, put_flags: Any) -> None:
        put_flags()
        with pytest.raises(FlagTypeMismatch, match="declared as bool, not int"):
            flags.get_int("signup_enabled")
        with pytest.raises(FlagTypeMismatch):
            flags.get_bool("trace_sample_rate")


class TestLikeTheReadFunction:
    def test_one_get_item_per_cache_age(
        self, flags: Flags, put_flags: Any, get_item_calls: CallCount, ddb: Any, table_name: str, declarations: Any
    ) -> None:
        # Given a seeded item
        put_flags(version=1)
        # When the application reads 100 times within one cache age
        for _ in range(100):
            flags.get_bool("signup_enabled")
        # Then DynamoDB was asked once
        assert get_item_calls.calls == 1
        # And once the cache age has passed, a change is seen with one more GetItem
        ddb.put_item(TableName=table_name, Item=flags_item(declarations, 2, signup_enabled=False))
        expire_cache(flags)
        assert flags.details("signup_enabled").value is False
        assert (get_item_calls.calls, flags.details("signup_enabled").version) == (2, 2)

    def test_a_failing_table_serves_stale_values_then_fails_closed(
        self, flags: Flags, put_flags: Any, ddb: Any, clock: Clock, get_item_calls: CallCount
    ) -> None:
        # Given a warm client holding version 5 with maintenance off
        put_flags(version=5)
        flags.get("maintenance_mode")
        with Stubber(ddb) as failing:
            for _ in range(10):
                failing.add_client_error("get_item", service_error_code="InternalServerError", http_status_code=500)
            # When DynamoDB fails after the cache age
            expire_cache(flags)
            clock.advance(10)
            stale = flags.details("maintenance_mode")
            # Then the last good value is served as STALE, and during the back-off no call is made
            assert (stale.value, stale.reason, stale.version) == (False, STALE, 5)
            calls_before = get_item_calls.calls
            flags.get("maintenance_mode")
            assert get_item_calls.calls == calls_before
            # And once max_stale has passed, the fallbacks: maintenance ON, reason DEFAULT
            clock.advance(61)
            fallen = flags.details("maintenance_mode")
        assert (fallen.value, fallen.reason, fallen.version) == (True, DEFAULT, None)

    def test_a_missing_item_serves_the_fallbacks(self, flags: Flags, declarations: Any) -> None:
        # Given an empty table
        # When read
        # Then every flag is its fallback with reason DEFAULT: features off, maintenance ON
        assert flags.all() == declarations.fallbacks()
        assert flags.details("maintenance_mode").reason == DEFAULT
        assert flags.get_bool("maintenance_mode") is True

    def test_a_maintenance_window_past_its_deadline_reads_off(self, flags: Flags, put_flags: Any, clock: Clock) -> None:
        # Given maintenance switched on by a window whose deadline passed (its end never arrived)
        put_flags(
            maintenance_mode=True,
            maintenance_owner={"S": "nightly"},
            maintenance_deadline={"N": str(int(clock() - 1))},
        )
        # Then the application reads maintenance off, as the read function serves it
        assert flags.get_bool("maintenance_mode") is False

    def test_a_dead_dynamodb_costs_at_most_two_seconds_per_read(self, table_name: str, declarations: Any) -> None:
        # Given a client built by the application (no client of its own)
        flags = Flags(table_name=table_name, declarations=declarations, region="us-east-1")
        config = flags._reader.provider._client.meta.config
        # Then it uses the read function's fail-fast configuration: one attempt, 0.5 s + 1 s
        assert (config.connect_timeout, config.read_timeout) == (0.5, 1.0)
        assert config.retries["total_max_attempts"] == 1
        assert worst_call_seconds(READ_CLIENT_CONFIG) <= 2.0


class TestPerFlagReasons:
    def test_a_flag_that_fell_back_is_default_while_the_others_are_static(self, flags: Flags, put_flags: Any) -> None:
        # Given an item where maintenance_mode is missing and signup_enabled holds a string (hand edits)
        put_flags(version=4, maintenance_mode=None, signup_enabled={"S": "yes"})
        # When the application reads them
        details = flags.all_details()
        maintenance, signup, search = (details[n] for n in ("maintenance_mode", "signup_enabled", "ai_search_enabled"))
        # Then the two that fell back are their fallbacks with reason DEFAULT, the others STATIC
        assert (maintenance.value, maintenance.reason) == (True, DEFAULT)
        assert (signup.value, signup.reason) == (False, DEFAULT)
        assert (search.reason, search.version) == (STATIC, 4)
        # And cached reads keep the per-flag reason
        assert flags.details("maintenance_mode").reason == DEFAULT
        assert flags.details("ai_search_enabled").reason == CACHED


class TestTheApplicationsDeclarations:
    def test_the_applications_copy_decides_what_is_read(
        self, ddb: Any, table_name: str, put_flags: Any, tmp_path: Path
    ) -> None:
        # Given the table holds the sample flags, and the application declares maintenance_mode and beta_banner
        put_flags(version=9, maintenance_mode=False)
        path = tmp_path / "flags.json"
        path.write_text(json.dumps(APP_DECLARATIONS))
        flags = Flags(table_name=table_name, declarations=str(path), client=ddb)
        # When it reads all its flags
        # Then attributes it does not declare are ignored, and beta_banner (not in the item) is its fallback
        details = flags.all_details()
        assert {name: d.value for name, d in details.items()} == {"maintenance_mode": False, "beta_banner": False}
        assert (details["maintenance_mode"].reason, details["beta_banner"].reason) == (STATIC, DEFAULT)
        with pytest.raises(UndeclaredFlag):
            flags.get("signup_enabled")

    def test_declarations_are_required_never_the_sample_flags(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # Given a client from an environment naming no declarations (created: its configuration waits)
        monkeypatch.delenv("SINGLETON_FLAGS_DECLARATIONS", raising=False)
        flags = Flags.from_env({ENV_TABLE: "t"})
        # When read
        # Then there is nothing declared to fall back on: the read raises, naming what is missing
        with pytest.raises(FlagsConfigError, match="declarations are required"):
            flags.get("maintenance_mode")
        # And so does every later read
        with pytest.raises(FlagsConfigError, match="declarations are required"):
            flags.get("maintenance_mode")


class TestFromEnv:
    def test_the_constructs_variables_configure_the_client(
        self, ddb: Any, table_name: str, declarations: Any, get_item_calls: CallCount
    ) -> None:
        # Given the variables a bound function gets, naming the V2 item and a 30 s cache age
        env = {ENV_TABLE: table_name, ENV_SORT_KEY: "FLAGS#V2", ENV_MAX_AGE: "30", ENV_MAX_STALE: "120"}
        env[ENV_REGION] = "us-east-1"
        ddb.put_item(TableName=table_name, Item={**flags_item(declarations, 3), "SK": {"S": "FLAGS#V2"}})
        flags = Flags.from_env(env, declarations=declarations, client=ddb)
        # When read
        # Then the V2 item is what it reads, with those ages
        assert flags.details("signup_enabled").version == 3
        reader = flags._reader
        assert (reader._sort_key, reader._max_age, reader._max_stale) == ("FLAGS#V2", 30, 120)

    @pytest.mark.parametrize(
        ("env", "message"),
        [
            pytest.param({}, ENV_TABLE, id="no-table"),
            pytest.param({ENV_TABLE: "t", ENV_MAX_AGE: "five"}, ENV_MAX_AGE, id="age-not-a-number"),
            pytest.param({ENV_TABLE: "t", ENV_MAX_STALE: "99999"}, ENV_MAX_STALE, id="stale-too-long"),
            pytest.param({ENV_TABLE: "t", ENV_SORT_KEY: "AUDIT#APP"}, "sort_key", id="not-a-flags-item"),
        ],
    )
    def test_a_bad_environment_serves_the_fallbacks_and_says_why_at_the_first_read(
        self, declarations: Any, env: dict[str, str], message: str, caplog: pytest.LogCaptureFixture
    ) -> None:
        # Given a client created from an environment that cannot configure it (creation never raises)
        flags = Flags.from_env(env, declarations=declarations, client=object())
        # When it is read, twice
        with caplog.at_level(logging.DEBUG, logger="singleton_flags"):
            first, second = flags.details("maintenance_mode"), flags.details("signup_enabled")
        # Then the declared fallbacks, reason DEFAULT, and one warning whose message names what is wrong
        assert (first.value, first.reason, second.value, second.reason) == (True, DEFAULT, False, DEFAULT)
        warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert message in warnings[0].getMessage()
        assert "the client is misconfigured" in warnings[0].getMessage()
        assert (warnings[0].cause, warnings[0].never_read) == ("MISCONFIGURED", True)  # type: ignore[attr-defined]

    def test_the_environment_is_read_again_at_the_first_read(
        self, ddb: Any, table_name: str, declarations: Any, put_flags: Any
    ) -> None:
        # Given a client created at import in a bare environment, which a test fixture completes afterwards
        env: dict[str, str] = {}
        flags = Flags.from_env(env, declarations=declarations, client=ddb)
        put_flags(version=4)
        env.update({ENV_TABLE: table_name, ENV_REGION: "us-east-1"})
        # When read
        # Then it is configured by the environment as it is now: the table's values
        assert flags.details("signup_enabled").version == 4
        assert type(flags) is Flags

    def test_first_reads_from_many_threads_configure_the_client_once(
        self, ddb: Any, table_name: str, declarations: Any, put_flags: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Given a client whose configuration waits for its first read, and a slow configuration
        import singleton_flags.client as client_module

        env: dict[str, str] = {}
        flags = Flags.from_env(env, declarations=declarations, client=ddb)
        put_flags(version=4)
        env.update({ENV_TABLE: table_name, ENV_REGION: "us-east-1"})
        configured = []
        settings = client_module._settings

        def slow_settings(*args: Any) -> dict[str, Any]:
            configured.append(1)
            time.sleep(0.05)
            return settings(*args)

        monkeypatch.setattr(client_module, "_settings", slow_settings)
        # When eight threads read it first, at once
        start = threading.Barrier(8)
        versions: list[int | None] = []
        errors: list[BaseException] = []

        def first_read() -> None:
            start.wait()
            try:
                versions.append(flags.details("signup_enabled").version)
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=first_read) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Then it was configured once, and every read got the table's values
        assert errors == []
        assert (len(configured), versions) == (1, [4] * 8)

    def test_a_constructor_without_any_region_names_the_variables(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # Given no region anywhere (no variable, no profile)
        for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
        # When a client is built without a DynamoDB client of its own
        # Then FlagsConfigError names the variables, never botocore's NoRegionError
        with pytest.raises(FlagsConfigError, match="set AWS_REGION or AWS_DEFAULT_REGION") as raised:
            Flags(table_name="t", declarations=load_declarations(ROOT / "examples/consumer/flags.json"))
        assert raised.value.read_cause == "NO_REGION"


class TestQuiet:
    def test_a_cached_read_writes_nothing_and_no_metrics_unless_asked(
        self, flags: Flags, put_flags: Any, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
    ) -> None:
        # Given a client not asked for metrics, whose first read fetched the item: nothing printed, not even EMF
        put_flags()
        capsys.readouterr()
        flags.all()
        assert capsys.readouterr() == ("", "")
        # When the application reads 100 times
        with caplog.at_level(logging.DEBUG):
            for _ in range(100):
                flags.get_bool("signup_enabled")
        # Then not one log record and not one byte on stdout or stderr
        assert caplog.records == []
        assert capsys.readouterr() == ("", "")

    def test_metrics_true_prints_read_counts_as_emf(
        self, ddb: Any, table_name: str, declarations: Any, put_flags: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        # Given a client asked for metrics
        put_flags()
        flags = Flags(table_name=table_name, declarations=declarations, client=ddb, metrics=True)
        # When its first read fetches the item
        flags.all()
        blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        # Then one EMF blob per count: Reads{reason=STATIC} and CacheRefreshes, then the version it serves
        assert [(b["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"], b.get("reason")) for b in blobs] == [
            ("Reads", STATIC),
            ("CacheRefreshes", None),
            ("ServedVersion", STATIC),
        ]
        assert blobs[0]["Reads"] == 1 and blobs[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
            ["service", "reason"]
        ]
        # And a cached read prints nothing
        flags.all()
        assert capsys.readouterr().out == ""


def test_importing_the_client_creates_no_powertools_logger() -> None:
    """An application importing the package gets no Powertools Logger, Metrics or Tracer instance and no handler
    added to any logger (which modules it loads: test_import_closures.py)."""
    script = (
        "import json, logging, sys; import singleton_flags; from singleton_flags import Flags; "
        "import singleton_flags.testing; "
        "print(json.dumps({"
        "'loggers': sorted(n for n, l in logging.Logger.manager.loggerDict.items() "
        "if isinstance(l, logging.Logger) and any(type(h) is not logging.NullHandler for h in l.handlers)), "
        "'root_handlers': len(logging.getLogger().handlers)}))"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT / "tests", capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    assert found["loggers"] == [] and found["root_handlers"] == 0


def test_the_package_names_its_public_api() -> None:
    import singleton_flags

    assert set(singleton_flags.__all__) >= {"Flags", "FlagDetails", "UndeclaredFlag", "FlagTypeMismatch"}
    assert all(getattr(singleton_flags, name) is not None for name in singleton_flags.__all__)
    assert load_declarations is singleton_flags.load_declarations


class TestPublicSurface:
    """What an application imports is the root's ``__all__`` (and the extras' modules): every other module is
    internal, and says what it shares in its own ``__all__``."""

    def test_the_root_names_exactly_the_public_api_and_resolves_each_name(self) -> None:
        import singleton_flags

        assert sorted(singleton_flags.__all__) == [
            "Declarations",
            "FlagDetails",
            "FlagState",
            "FlagTypeMismatch",
            "Flags",
            "FlagsConfigError",
            "Reason",
            "UndeclaredFlag",
            "load_declarations",
        ]
        for name in singleton_flags.__all__:
            assert getattr(singleton_flags, name).__name__ == name

    def test_every_module_of_the_client_declares_what_it_shares(self) -> None:
        import singleton_flags

        for module_info in pkgutil.iter_modules(singleton_flags.__path__):
            module = importlib.import_module(f"singleton_flags.{module_info.name}")
            names = getattr(module, "__all__", None)
            assert names is not None, f"singleton_flags.{module_info.name} has no __all__"
            missing = [name for name in names if not hasattr(module, name)]
            assert missing == [], f"singleton_flags.{module_info.name}.__all__ names {missing}, which it lacks"

    def test_reason_and_flag_state_come_from_the_root_and_a_reason_reads_as_its_name(
        self, flags: Flags, put_flags: Any
    ) -> None:
        from singleton_flags import FlagState, Reason

        # Given the four reasons, each its own name as a string
        assert [reason.value for reason in Reason] == ["STATIC", "CACHED", "STALE", "DEFAULT"]
        assert Reason("CACHED") is Reason.CACHED and Reason.CACHED == "CACHED"
        assert (str(Reason.STALE), f"{Reason.DEFAULT}") == ("STALE", "DEFAULT")
        assert json.dumps({"reason": Reason.STATIC}) == '{"reason": "STATIC"}'
        # When the application reads
        put_flags(version=2)
        state, details = flags.state(), flags.details("signup_enabled")
        # Then the state is a FlagState, and each reason a Reason
        assert isinstance(state, FlagState)
        assert state.reason is Reason.STATIC and details.reason is Reason.CACHED

    def test_the_reader_behind_the_client_is_private(self, flags: Flags) -> None:
        assert not hasattr(flags, "source")
        assert [name for name in vars(flags) if not name.startswith("_")] == ["declarations"]

    def test_importing_the_root_loads_nothing_until_a_name_is_used(self) -> None:
        script = (
            "import json, sys; import singleton_flags; before = sorted(sys.modules); singleton_flags.Reason; "
            "print(json.dumps([sorted(n for n in before if n.startswith('singleton_flags')), "
            "sorted(n for n in sys.modules if n.startswith('singleton_flags'))]))"
        )
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        before, after = json.loads(out.stdout)
        assert before == ["singleton_flags"]
        assert after == ["singleton_flags", "singleton_flags.vocabulary"]
