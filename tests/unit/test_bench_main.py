"""``python -m bench``: a name that is no bench (``--help``, a typo) runs nothing and says what there is."""

from __future__ import annotations

import importlib

import pytest

from bench.__main__ import BENCHES, main


def test_a_name_that_is_no_bench_runs_nothing_and_lists_the_benches(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    monkeypatch.setattr(importlib, "import_module", lambda name: ran.append(name))
    assert main(["--help"]) == 2
    said = capsys.readouterr()
    assert ran == [] and said.out == ""
    assert "not a bench: --help" in said.err and all(f"[{name}]" in said.err for name in BENCHES)
