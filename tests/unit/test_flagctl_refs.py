"""``flagctl refs PATH``: the flag names a source tree reads (the embedded client, the OpenFeature SDKs, OFREP
paths), against the declarations: undeclared names used, declared flags not referenced; exit 0 when they agree, 1
when not, 2 on a usage error."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from flagctl.cli import main
from flagctl.client import Answer, Outgoing

DECLARATIONS = {
    "flags": [
        {"name": "signup_enabled", "type": "bool", "initial": True, "fallback": False},
        {"name": "maintenance_mode", "type": "bool", "initial": False, "fallback": True},
        {"name": "search_ranking", "type": "string", "initial": "classic", "fallback": "classic"},
        {"name": "trace_sample_rate", "type": "float", "initial": 0.05, "fallback": 0.0},
        {"name": "api_rate_limit_per_minute", "type": "int", "initial": 600, "fallback": 60},
        {"name": "checkout_v2", "type": "bool", "initial": False, "fallback": False, "owner": "payments"},
        {
            "name": "old_banner",
            "type": "bool",
            "initial": False,
            "fallback": False,
            "state": "removed",
            "deprecated_on": "2026-01-10",
        },
    ]
}

PYTHON_APP = """
import os
from singleton_flags import Flags

FLAGS = Flags.from_env(os.environ, declarations="flags.json")
settings = {"ghost": 1}


def handler(event, context):
    if not FLAGS.get_bool("signup_enabled"):
        return 403
    settings.get("not_a_flag")  # a mapping's get: not a flag read
    name = "dynamic"
    FLAGS.get(name)  # a name built at run time: not seen
    return FLAGS.get("ghost_flag")


def ranking(client):
    return client.get_string_value("search_ranking", "classic")


OFREP = "/ofrep/v1/evaluate/flags/api_rate_limit_per_minute"
"""

TYPESCRIPT_APP = """
import { OpenFeature } from "@openfeature/web-sdk";
const client = OpenFeature.getClient();
export const down = client.getBooleanValue('maintenance_mode', true);
export const limit = await client.getNumberValue("old_limit", 5);
"""

GO_APP = """
package main

func rate(ctx context.Context, client *openfeature.Client) float64 {
    value, _ := client.FloatValue(ctx, "trace_sample_rate", 0.0, openfeature.EvaluationContext{})
    return value
}
"""


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def declarations(tmp_path: Path) -> Path:
    path = tmp_path / "declarations.json"
    path.write_text(json.dumps(DECLARATIONS), encoding="utf-8")
    return path


def refs(*argv: str, transport: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), transport=transport, out=out, err=err), out.getvalue(), err.getvalue()


def test_refs_finds_the_planted_undeclared_and_unreferenced_names_and_exits_1(tmp_path, declarations):
    # Given a source tree reading flags through the client, OpenFeature (Python, TypeScript, Go) and OFREP, with two
    # undeclared names planted (ghost_flag, old_limit) and one declared flag no code names (checkout_v2)
    files = {"app/handler.py": PYTHON_APP, "web/flags.ts": TYPESCRIPT_APP, "svc/main.go": GO_APP}
    source = tree(tmp_path / "src", files)
    # When
    code, out, err = refs("refs", str(source), "--declarations", str(declarations), "--json")
    # Then
    assert code == 1, err
    answer = json.loads(out)
    assert sorted(answer["undeclared"]) == ["ghost_flag", "old_limit"]
    assert answer["undeclared"]["ghost_flag"] == [f"{source / 'app' / 'handler.py'}:15"]
    assert answer["unreferenced"] == ["checkout_v2"]  # the removed flag is expected to be gone: not listed
    assert sorted(answer["referenced"]) == [
        "api_rate_limit_per_minute",
        "maintenance_mode",
        "search_ranking",
        "signup_enabled",
        "trace_sample_rate",
    ]
    assert "not_a_flag" not in json.dumps(answer) and "dynamic" not in json.dumps(answer)
    assert answer["agree"] is False


def test_refs_says_not_referenced_in_the_scanned_paths_never_remove(tmp_path, declarations):
    source = tree(tmp_path / "src", {"app.py": "FLAGS.get('signup_enabled')\n"})
    code, out, _ = refs("refs", str(source), "--declarations", str(declarations))
    assert code == 1
    assert "not referenced in the scanned paths: checkout_v2" in out
    assert "remove" not in out.replace("removed", "")


def test_refs_exits_0_when_code_and_declarations_agree(tmp_path):
    # Given declarations of two flags, both read by the code
    path = tmp_path / "flags.json"
    path.write_text(json.dumps({"flags": DECLARATIONS["flags"][:2]}), encoding="utf-8")
    files = {"a.py": "flags.details('signup_enabled')\n", "b.js": "client.getBooleanDetails(`maintenance_mode`, true)"}
    source = tree(tmp_path / "src", files)
    # When
    code, out, err = refs("refs", str(source), "--declarations", str(path))
    # Then
    assert code == 0, out + err
    assert "code and declarations agree (2 flag(s) referenced)" in out


def test_a_reference_to_a_flag_declared_removed_is_a_disagreement(tmp_path, declarations):
    flags = DECLARATIONS["flags"]
    used = "".join(f"FLAGS.get({spec['name']!r})\n" for spec in flags)
    source = tree(tmp_path / "src", {"all.py": used})
    code, out, _ = refs("refs", str(source), "--declarations", str(declarations), "--json")
    assert code == 1
    assert list(json.loads(out)["removed_but_referenced"]) == ["old_banner"]


def test_a_python_file_that_does_not_parse_is_named_and_its_ofrep_paths_still_read(tmp_path, declarations):
    source = tree(tmp_path / "src", {"broken.py": 'def (:\n  url = "/ofrep/v1/evaluate/flags/ghost_flag"\n'})
    code, out, _ = refs("refs", str(source), "--declarations", str(declarations), "--json")
    answer = json.loads(out)
    assert code == 1
    assert list(answer["undeclared"]) == ["ghost_flag"]
    assert "not parsed as Python" in answer["skipped"][0]


def test_without_a_declarations_file_refs_reads_the_apis_declarations(tmp_path):
    # Given an API whose GET /flags/declarations names one flag
    sent: list[Outgoing] = []

    def transport(outgoing: Outgoing) -> Answer:
        sent.append(outgoing)
        return Answer(200, {}, {"declarations": [{"name": "signup_enabled", "state": "active", "permanent": True}]})

    source = tree(tmp_path / "src", {"app.py": "FLAGS.get_bool('signup_enabled')\n"})
    # When
    code, _, err = refs("--url", "http://127.0.0.1:3000", "refs", str(source), transport=transport)
    # Then
    assert code == 0, err
    assert [(o.method, o.url) for o in sent] == [("GET", "http://127.0.0.1:3000/flags/declarations")]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["refs"], "the following arguments are required: PATH"),
        (["refs", "/no/such/tree", "--declarations", "{declarations}"], "no such file or directory: /no/such/tree"),
        (["refs", ".", "--declarations", "/no/such.json"], "--declarations: cannot read declarations"),
    ],
)
def test_a_usage_error_exits_2_and_says_what(argv, message, declarations, capsys):
    argv = [item.replace("{declarations}", str(declarations)) for item in argv]
    try:
        code, _, err = refs(*argv)
    except SystemExit as exit_:
        code, err = int(exit_.code or 0), capsys.readouterr().err
    assert code == 2
    assert message in err
