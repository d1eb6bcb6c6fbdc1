"""The project's distributions as pip sees them: each built into a wheel from the checkout, and installed by path
into an empty virtual environment (never by name from an index: the names are not registered on PyPI)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_SECONDS = 600
# Each distribution's project directory, by its name.
PROJECTS = {
    "singleton-flags": ROOT / "client",
    "singleton-flags-service": ROOT,
    "singleton-flags-cli": ROOT / "flagctl",
}


def build_wheel(name: str, out: Path) -> Path:
    """The wheel `make dist` builds for the distribution ``name`` (pip wheel, build isolation)."""
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
            str(out),
            str(PROJECTS[name]),
        ],
        check=True,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    [wheel] = out.glob(f"{name.replace('-', '_')}-*.whl")
    return wheel


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if ".dist-info/" not in name}


def wheel_package_files(tmp_path: Path) -> set[str]:
    """The paths under ``singleton_flags/`` in the client's wheel."""
    files = wheel_files(build_wheel("singleton-flags", tmp_path / "dist"))
    return {name for name in files if name.startswith("singleton_flags/")}


def install_into_empty_venv(tmp_path: Path, *requirements: str) -> Path:
    """A new virtual environment holding the wheels of ``requirements`` (``singleton-flags[openfeature]``,
    ``singleton-flags-service[cdk]``, ...) and of the project's distributions they need, each installed by its
    path; their other dependencies from pip's cache or PyPI. Returns its python."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    wanted = {requirement.split("[")[0]: requirement for requirement in requirements}
    needs = {
        "singleton-flags-service": ["singleton-flags"],
        "singleton-flags-cli": ["singleton-flags", "singleton-flags-service"],
    }
    for name in list(wanted):
        for dependency in needs.get(name, []):
            wanted.setdefault(dependency, dependency)
    dist = tmp_path / "dist"
    arguments = []
    for name, requirement in wanted.items():
        wheel = build_wheel(name, dist)
        arguments.append(f"{wheel}{requirement[len(name) :]}")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *arguments],
        check=True,
        timeout=BUILD_TIMEOUT_SECONDS * 2,
    )
    return python
