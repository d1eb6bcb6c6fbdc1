"""docs/reading-flags.md's Python examples run as written, in page order, against moto and the in-memory table."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openfeature import api

from singleton_flags.testing import InMemoryFlags
from singleton_flags_service.contract import DECLARATIONS_FILE
from tests.support.doc_examples import examples


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_name: str) -> Iterator[Path]:
    """An application's folder: its flags.json (the sample declarations) and my_function.py (the client example),
    with the variables a bound function gets."""
    shutil.copy(DECLARATIONS_FILE, tmp_path / "flags.json")
    (tmp_path / "my_function.py").write_text(examples()["client"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SINGLETON_FLAGS_TABLE", table_name)
    api.clear_providers()
    yield tmp_path
    api.clear_providers()
    sys.modules.pop("my_function", None)


def test_every_python_block_is_a_named_example() -> None:
    assert list(examples()) == ["client", "openfeature", "cdk", "testing", "pytest"]


def test_the_examples_run_in_page_order(
    workdir: Path, ddb: Any, put_flags: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code = examples()
    # Given the seeded flags item, rate limit 900
    put_flags(version=4, api_rate_limit_per_minute=900)
    page: dict[str, Any] = {}
    # When the client example runs (moto answers its GetItem) and its handler is invoked
    exec(compile(code["client"], "reading-flags.md#client", "exec"), page)  # noqa: S102 - the page's own example
    # Then it answers with the stored values and the reason
    assert page["handler"]({}, None) == {"statusCode": 200, "body": "limit 900, signup True (CACHED)"}
    # When the OpenFeature example runs with that client
    exec(compile(code["openfeature"], "reading-flags.md#openfeature", "exec"), page)  # noqa: S102
    # Then it prints maintenance off, cached, with the version
    printed = capsys.readouterr().out
    assert printed.startswith("False CACHED {'flagSetId': 'singleton-flags', 'version': 4, 'fetchedAt': ")
    # And the testing examples run as written (their asserts are the page's)
    exec(compile(code["testing"], "reading-flags.md#testing", "exec"), {})  # noqa: S102
    exec(compile(code["pytest"], "reading-flags.md#pytest", "exec"), page)  # noqa: S102
    page["test_maintenance_answers_503"](InMemoryFlags("flags.json"), monkeypatch)
