"""The package as pip sees it: a minimal source tree of a checkout, and its wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_SECONDS = 600


def source_tree(target: Path) -> Path:
    """What `pip install .` reads from a checkout: the project file, the readme, the package, and the CDK app and
    the handlers it carries for the ``[cdk]`` extra; nothing else (no tests, no local runner, no node_modules)."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    shutil.copy(ROOT / "README.md", target / "README.md")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "infra", target / "infra", ignore=ignore)
    for folder in (ROOT / "functions").iterdir():
        if (folder / "__init__.py").is_file():
            shutil.copytree(folder, target / "functions" / folder.name, ignore=ignore)
    return target


def wheel_package_files(tmp_path: Path) -> set[str]:
    """The paths under ``singleton_flags/`` in the wheel that `make dist` builds (pip wheel, build isolation)."""
    source = source_tree(tmp_path / "source")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        check=True,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    [wheel] = (tmp_path / "dist").glob("singleton_flags-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if name.startswith("singleton_flags/")}


def install_into_empty_venv(tmp_path: Path, extra: str) -> Path:
    """A new virtual environment holding the package with ``extra``, installed from a checkout's source tree;
    returns its python."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    source = source_tree(tmp_path / "checkout")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{source}[{extra}]"],
        check=True,
        timeout=BUILD_TIMEOUT_SECONDS * 2,
    )
    return python
