"""flagctl as a user installs it: the CLI's wheel, with the client's and the service's wheels (each by its path,
never by name from an index), in an empty virtual environment; its console script answers `--help`, and the
console's pages came with it.

Selected with ``-m install`` (also part of the e2e tier): it builds the three distributions and installs them
with their dependencies, from pip's cache or PyPI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from flagctl.static import CONSOLE_DIR
from tests.support.packaging import install_into_empty_venv

pytestmark = pytest.mark.install

PAGES = """
import json
from flagctl.static import CONSOLE_DIR, console_page
answers = {path: console_page("GET", path).status for path in ("/", "/console/console.js", "/console/console.css")}
print(json.dumps({"answers": answers, "pages": sorted(p.name for p in CONSOLE_DIR.glob("*")), "dir": str(CONSOLE_DIR)}))
"""


def test_the_installed_flagctl_answers_help_and_serves_its_console_pages(tmp_path: Path, wheelhouse: Path) -> None:
    # Given an empty virtual environment with the CLI's wheel and the client's and service's wheels, by path
    python = install_into_empty_venv(tmp_path, "singleton-flags-cli", wheelhouse=wheelhouse)
    venv = python.parents[1]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    # When its console script is asked for help, outside any checkout
    out = subprocess.run(
        [str(venv / "bin" / "flagctl"), "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # Then it exits 0 and prints its usage and its commands
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: flagctl")
    assert all(command in out.stdout for command in ("get", "set", "history", "revert", "console", "schedule"))
    # And the console's pages are installed with it, and served
    pages = subprocess.run(
        [str(python), "-c", PAGES], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    found = json.loads(pages.stdout)
    assert found["dir"].startswith(str(venv))
    assert found["pages"] == sorted(path.name for path in CONSOLE_DIR.iterdir())
    assert found["answers"] == {"/": 200, "/console/console.js": 200, "/console/console.css": 200}
