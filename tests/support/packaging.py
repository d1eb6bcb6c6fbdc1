"""The project's distributions as pip sees them: each built as `make dist` builds it (an sdist, then the wheel from
that sdist, in an isolated build environment), and installed by path into an empty virtual environment (never by
name from an index: the names are not registered on PyPI, and whoever registers them there would be installed)."""

from __future__ import annotations

import ast
import fcntl
import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_SECONDS = 600
# Each distribution's project directory, by its name.
PROJECTS = {
    "singleton-flags": ROOT / "client",
    "singleton-flags-service": ROOT,
    "singleton-flags-cli": ROOT / "flagctl",
}
# The project's distributions each distribution needs (its dependencies on them, by name).
NEEDS = {
    "singleton-flags": [],
    "singleton-flags-service": ["singleton-flags"],
    "singleton-flags-cli": ["singleton-flags", "singleton-flags-service"],
}


def export_project(name: str, dest: Path) -> Path:
    """The files of the distribution ``name``'s project that git tracks or would track (committed or not, never
    ignored: no build/, no stale *.egg-info whose file list would leak into the sdist), copied under ``dest``."""
    project = PROJECTS[name]
    listed = subprocess.run(
        [  # noqa: S607 - git from PATH, as every checkout has it
            "git",
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
            "--",
            project.relative_to(ROOT).as_posix(),
        ],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    others = [directory for directory in PROJECTS.values() if directory != project and project in directory.parents]
    target = dest / name
    for relative in filter(None, listed.split("\0")):
        source = ROOT / relative
        if not source.is_file() or any(directory in source.parents for directory in others):
            continue
        copy = target / source.relative_to(project)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, copy)
    return target


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Held by one test process at a time (pytest-xdist's workers): for building into ``folder``, which the
    processes share, so that whoever waits finds the build done instead of racing it."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".tests.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def build_wheel(name: str, out: Path) -> Path:
    """The wheel `make dist` builds for the distribution ``name`` (from its project's files as a clean checkout
    holds them), built into ``out`` beside its sdist, once: ``out`` may be shared by parallel test processes
    (the ``wheelhouse`` fixture)."""
    with folder_lock(out):
        return _built_wheel(name, out)


def _built_wheel(name: str, out: Path) -> Path:
    wheel_name = f"{name.replace('-', '_')}-*.whl"
    existing = sorted(out.glob(wheel_name))
    if existing:
        return existing[0]
    source = export_project(name, out.parent / f"sources-{out.name}")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
        check=False,
    )
    assert built.returncode == 0, f"building {name} failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    [wheel] = out.glob(wheel_name)
    return wheel


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if ".dist-info/" not in name}


def wheel_package_files(wheelhouse: Path) -> set[str]:
    """The paths under ``singleton_flags/`` in the client's wheel (built into ``wheelhouse`` unless it is there)."""
    files = wheel_files(build_wheel("singleton-flags", wheelhouse))
    return {name for name in files if name.startswith("singleton_flags/")}


def install_into_empty_venv(tmp_path: Path, *requirements: str, wheelhouse: Path) -> Path:
    """A new virtual environment holding the wheels of ``requirements`` (``singleton-flags[openfeature]``,
    ``singleton-flags-service[cdk]``, ...) and of the project's distributions they need, each installed by its
    path (built into ``wheelhouse`` unless it is there); their other dependencies from pip's cache or PyPI.
    Fails unless pip installed every one of the project's distributions from its wheel's path. Returns its
    python."""
    venv = tmp_path / "venv"
    # Without a pip of its own (seeding one costs seconds): this process's pip installs into it (``--python``).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    wanted = {requirement.split("[")[0]: requirement for requirement in requirements}
    for name in list(wanted):
        for dependency in NEEDS[name]:
            wanted.setdefault(dependency, dependency)
    wheels = {name: build_wheel(name, wheelhouse) for name in wanted}
    arguments = [f"{wheels[name]}{requirement[len(name) :]}" for name, requirement in wanted.items()]
    report = tmp_path / "pip-report.json"
    subprocess.run(
        [
            sys.executable,
            *("-m", "pip", "--python", str(python), "install", "--quiet", "--disable-pip-version-check"),
            *("--report", str(report)),
            # No byte-compiling of every installed module (most of an install's time with aws-cdk-lib): a module
            # is compiled when it is first imported, and only what is imported matters here.
            "--no-compile",
            *arguments,
        ],
        check=True,
        timeout=BUILD_TIMEOUT_SECONDS * 2,
    )
    installed = {
        item["metadata"]["name"]: item["download_info"]["url"] for item in json.loads(report.read_text())["install"]
    }
    from_paths = {name: installed.get(name) for name in wanted}
    assert from_paths == {name: wheel.as_uri() for name, wheel in wheels.items()}, from_paths
    return python


def imported_modules(source: str, module: str) -> set[str]:
    """Every module the code ``source`` of the module ``module`` imports (at any depth of its body, relative
    imports resolved), as written: ``import a.b`` gives ``a.b``, ``from a import b`` gives ``a`` and ``a.b``."""
    package = module.rsplit(".", 1)[0] if "." in module else module
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def python_modules(files: Iterable[tuple[str, str]]) -> dict[str, str]:
    """(path relative to a site directory, source) of ``.py`` files -> {dotted module name: source}."""
    modules = {}
    for path, source in files:
        if not path.endswith(".py"):
            continue
        name = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        modules[name] = source
    return modules
