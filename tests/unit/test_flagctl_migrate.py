"""``flagctl migrate``: with ``--dry-run`` the plan of FLAGS#V1 -> FLAGS#V2 checked against the current declarations
and values, read-only; without it ``POST /flags/migration`` and what it wrote (a refusal: each cause, exit 3);
``--status`` what ``GET /flags/migration`` answers; ``finalise`` posts the finalising."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from flagctl.cli import main
from flagctl.client import Answer, FlagsClient, Outgoing
from flagctl.errors import FlagctlError
from flagctl.migrate import finalise
from singleton_flags.declarations import Declarations
from tests.support.migration import GOOD, new_declarations

LOCAL = "http://127.0.0.1:3000"


RECORD = {
    "item": "FLAGS#V1",
    "source": "FLAGS#V1",
    "target": "FLAGS#V2",
    "state": "expanding",
    "migrated_at": 8,
    "at": "2027-03-01T08:00:00.000+00:00",
    "actor": "arn:aws:iam::123456789012:user/alice",
    "reason": "v2",
    "mapping": GOOD,
    "finalised_at": None,
    "finalised_by": None,
    "finalise_reason": None,
}
MIGRATED = {
    "migration": RECORD,
    "version": 8,
    "item": "FLAGS#V2",
    "flags": {"ranking_strategy": "hybrid", "api_rate_limit_per_minute": 1200.0, "assistant_enabled": True},
    "v1_reader_fallbacks": [{"flag": "ai_search_enabled", "fallback": False, "why": "removed by the migration"}],
    "attempts": 1,
}
REFUSED = {
    "error": {
        "code": "MIGRATION_REFUSED",
        "message": "the migration is refused, nothing was written",
        "refused": [
            {"cause": "not_convertible", "flag": "trace_sample_rate", "value": 0.05, "why": "0.05 has a fraction"},
            {"cause": "scheduled_change_pending", "schedule": "20270301T090000Z-3f9a1c2b", "why": "let it apply"},
        ],
    }
}


class Api:
    """GET /flags/declarations and GET /flags, and the migration's routes; records every request."""

    def __init__(self, declarations: Declarations, values: dict[str, Any], version: int = 7) -> None:
        self.answers: dict[tuple[str, str], tuple[int, Any]] = {
            ("GET", "/flags/declarations"): (200, {"declarations": declarations.as_documents()}),
            ("GET", "/flags"): (200, {"flags": values, "version": version, "reason": "STATIC"}),
            ("POST", "/flags/migration"): (201, MIGRATED),
            ("GET", "/flags/migration"): (200, {"migration": RECORD}),
        }
        self.sent: list[Outgoing] = []

    def __call__(self, outgoing: Outgoing) -> Answer:
        self.sent.append(outgoing)
        status, body = self.answers[(outgoing.method, urlsplit(outgoing.url).path)]
        return Answer(status, {}, body)


@pytest.fixture
def files(tmp_path: Path, declarations: Declarations) -> tuple[Path, Path]:
    new, mapping = tmp_path / "new.json", tmp_path / "map.json"
    new.write_text(json.dumps(new_declarations(declarations).document()), encoding="utf-8")
    mapping.write_text(json.dumps(GOOD), encoding="utf-8")
    return new, mapping


def migrate(api: Api, files: tuple[Path, Path], *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["--url", LOCAL, "migrate", "--declarations", str(files[0]), "--mapping", str(files[1]), "--reason", "v2"]
    code = main([*argv, *extra], transport=api, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_dry_run_prints_what_v2_holds_and_what_v1_readers_serve(
    declarations: Declarations, files: tuple[Path, Path]
) -> None:
    # Given live values, the rate limit at 1200 and the search ranking hybrid
    api = Api(declarations, {**declarations.initials(), "api_rate_limit_per_minute": 1200, "search_ranking": "hybrid"})
    # When the dry run plans the migration
    code, out, _ = migrate(api, files, "--dry-run", "--json")
    plan = json.loads(out)
    # Then V2 would be written at L+1 with the renamed and converted values, and only reads were sent
    assert code == 0 and plan["would_apply"] and plan["v2_version"] == 8 and plan["written"] is False
    by_flag = {entry["flag"]: entry for entry in plan["flags"]}
    assert by_flag["search_ranking"]["v2_flag"] == "ranking_strategy"
    assert by_flag["search_ranking"]["v2_value"] == "hybrid"
    assert by_flag["api_rate_limit_per_minute"]["v2_value"] == 1200.0
    assert by_flag["api_rate_limit_per_minute"]["v1_readers"] == {"value": 1200}
    # And the removed flag is listed as one a V1 reader serves as its fallback; the added flag with its initial
    assert plan["v1_reader_fallbacks"] == ["ai_search_enabled"]
    assert plan["added"] == [{"flag": "assistant_enabled", "initial": True}]
    assert {sent.method for sent in api.sent} == {"GET"}


def test_the_dry_run_table_names_the_flags_a_v1_reader_serves_as_fallbacks(
    declarations: Declarations, files: tuple[Path, Path]
) -> None:
    code, out, _ = migrate(Api(declarations, declarations.initials()), files, "--dry-run")
    assert code == 0
    assert "a V1 reader serves the fallback of ai_search_enabled: removed" in out
    assert "plan: FLAGS#V2 at version 8" in out and "nothing written" in out


def test_a_value_that_does_not_convert_is_refused_in_the_plan(
    declarations: Declarations, files: tuple[Path, Path], tmp_path: Path
) -> None:
    # Given a mapping that turns the float sample rate into an int, exactly, and a live rate of 0.05
    new = new_declarations(
        declarations, trace_sample_rate={"name": "trace_sample_rate", "type": "int", "initial": 0, "fallback": 0}
    )
    files[0].write_text(json.dumps(new.document()), encoding="utf-8")
    mapping = {**GOOD, "flags": {**GOOD["flags"], "trace_sample_rate": {"convert": "float_to_int"}}}
    files[1].write_text(json.dumps(mapping), encoding="utf-8")
    code, out, _ = migrate(Api(declarations, declarations.initials()), files, "--dry-run")
    # Then the plan says the migration would be refused, naming the value, and exits 1
    assert code == 1
    assert "refused: trace_sample_rate = 0.05: 0.05 has a fraction and the rounding is 'exact'" in out
    assert "the migration would be refused" in out


def test_without_dry_run_the_migration_is_posted_and_what_it_wrote_is_printed(
    declarations: Declarations, files: tuple[Path, Path]
) -> None:
    api = Api(declarations, declarations.initials())
    # When flagctl migrate runs without --dry-run
    code, out, _ = migrate(api, files)
    # Then one POST /flags/migration carries the new declarations, the mapping as written and the reason
    (sent,) = api.sent
    body = json.loads(sent.body or b"{}")
    assert (sent.method, urlsplit(sent.url).path) == ("POST", "/flags/migration")
    assert body == {"declarations": new_declarations(declarations).document(), "mapping": GOOD, "reason": "v2"}
    # And it says the new version and the flag a V1 reader serves as its fallback, exit 0
    assert code == 0
    assert "FLAGS#V2 written at version 8" in out
    assert "a reader configured for FLAGS#V1 serves the fallback of ai_search_enabled (false): removed" in out


def test_a_refused_migration_prints_each_cause_and_exits_as_a_conflict(
    declarations: Declarations, files: tuple[Path, Path]
) -> None:
    api = Api(declarations, declarations.initials())
    api.answers[("POST", "/flags/migration")] = (409, REFUSED)
    code, out, err = migrate(api, files)
    assert code == 3 and out == ""
    assert "HTTP 409 MIGRATION_REFUSED" in err
    assert "refused (not_convertible): flag trace_sample_rate: 0.05 has a fraction" in err
    assert "refused (scheduled_change_pending): schedule 20270301T090000Z-3f9a1c2b: let it apply" in err


def test_status_prints_the_migration_the_flags_item_takes_part_in(declarations: Declarations) -> None:
    api = Api(declarations, declarations.initials())
    out, err = io.StringIO(), io.StringIO()
    code = main(["--url", LOCAL, "migrate", "--status"], transport=api, out=out, err=err)
    assert code == 0
    assert [(sent.method, urlsplit(sent.url).path) for sent in api.sent] == [("GET", "/flags/migration")]
    assert "migration FLAGS#V1 -> FLAGS#V2: expanding" in out.getvalue()
    assert "migrated at version 8" in out.getvalue()


def test_status_without_a_migration_is_not_found(declarations: Declarations) -> None:
    api = Api(declarations, declarations.initials())
    missing = {"error": {"code": "MIGRATION_NOT_FOUND", "message": "no migration", "item": "FLAGS#V1"}}
    api.answers[("GET", "/flags/migration")] = (404, missing)
    err = io.StringIO()
    code = main(["--url", LOCAL, "migrate", "--status"], transport=api, out=io.StringIO(), err=err)
    assert code == 2 and "MIGRATION_NOT_FOUND" in err.getvalue()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["migrate"], "migrate needs --declarations, --mapping, --reason (or --status)"),
        (["migrate", "--reason", "v2"], "migrate needs --declarations, --mapping"),
        (["migrate", "--status", "--reason", "v2"], "migrate --status takes no"),
        (["migrate", "--status", "--dry-run"], "migrate --status takes no"),
    ],
)
def test_migrate_usage_is_checked_before_anything_is_sent(
    declarations: Declarations, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    api = Api(declarations, declarations.initials())
    with pytest.raises(SystemExit) as exited:
        main(["--url", LOCAL, *argv], transport=api, out=io.StringIO(), err=io.StringIO())
    assert exited.value.code == 2 and says in capsys.readouterr().err
    assert api.sent == []


def test_finalise_posts_the_reason_and_returns_the_finalised_migration(declarations: Declarations) -> None:
    api = Api(declarations, declarations.initials())
    finalised = {"migration": {**RECORD, "state": "finalised"}}
    api.answers[("POST", "/flags/migration/finalise")] = (200, finalised)
    assert finalise(FlagsClient(LOCAL, transport=api), "every reader on V2") == finalised
    (sent,) = api.sent
    assert urlsplit(sent.url).path == "/flags/migration/finalise"
    assert json.loads(sent.body or b"{}") == {"reason": "every reader on V2"}


def test_a_refused_finalising_is_an_error_with_its_causes_and_exit_code(declarations: Declarations) -> None:
    api = Api(declarations, declarations.initials())
    refused = {"error": {**REFUSED["error"], "refused": [{"cause": "no_migration", "item": "FLAGS#V1", "why": ""}]}}
    api.answers[("POST", "/flags/migration/finalise")] = (409, refused)
    with pytest.raises(FlagctlError) as raised:
        finalise(FlagsClient(LOCAL, transport=api), "too early")
    assert (raised.value.exit_code, raised.value.code) == (3, "MIGRATION_REFUSED")
    assert "refused (no_migration): item FLAGS#V1" in str(raised.value)


def test_a_bad_mapping_is_bad_input_naming_the_problem(declarations: Declarations, files: tuple[Path, Path]) -> None:
    bad = {**GOOD, "flags": {**GOOD["flags"], "search_ranking": {"rename": "nowhere"}}}
    files[1].write_text(json.dumps(bad), encoding="utf-8")
    code, _, err = migrate(Api(declarations, declarations.initials()), files, "--dry-run")
    assert code == 2
    assert "--mapping: flags.search_ranking: 'search_ranking' is renamed to 'nowhere'" in err
