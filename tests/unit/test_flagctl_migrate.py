"""``flagctl migrate --dry-run``: the plan of FLAGS#V1 -> FLAGS#V2 checked against the current declarations and
values, read-only; without ``--dry-run`` it says the write is not offered yet (exit 2) and sends nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from flagctl.cli import main
from flagctl.client import Answer, Outgoing
from singleton_flags.declarations import Declarations
from tests.support.migration import GOOD, new_declarations

LOCAL = "http://127.0.0.1:3000"


class Api:
    """GET /flags/declarations and GET /flags; records every request (a write would be one)."""

    def __init__(self, declarations: Declarations, values: dict[str, Any], version: int = 7) -> None:
        self.answers = {
            "/flags/declarations": {"declarations": declarations.as_documents()},
            "/flags": {"flags": values, "version": version, "reason": "STATIC"},
        }
        self.sent: list[Outgoing] = []

    def __call__(self, outgoing: Outgoing) -> Answer:
        self.sent.append(outgoing)
        return Answer(200, {}, self.answers[urlsplit(outgoing.url).path])


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


def test_without_dry_run_the_write_is_not_offered_and_nothing_is_sent(
    declarations: Declarations, files: tuple[Path, Path]
) -> None:
    api = Api(declarations, declarations.initials())
    code, _, err = migrate(api, files)
    assert code == 2 and "not offered yet" in err
    assert api.sent == []


def test_a_bad_mapping_is_bad_input_naming_the_problem(declarations: Declarations, files: tuple[Path, Path]) -> None:
    bad = {**GOOD, "flags": {**GOOD["flags"], "search_ranking": {"rename": "nowhere"}}}
    files[1].write_text(json.dumps(bad), encoding="utf-8")
    code, _, err = migrate(Api(declarations, declarations.initials()), files, "--dry-run")
    assert code == 2
    assert "--mapping: flags.search_ranking: 'search_ranking' is renamed to 'nowhere'" in err
