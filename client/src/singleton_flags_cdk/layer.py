"""The client's Lambda layer, built without Docker and without a download (used by ``singleton_flags_cdk.construct``).

A layer directory holds, under ``python/``, the client package's own files (``singleton_flags``: the ones its wheel
installs, taken from the installed package; the CDK helpers are a package of their own, never in it) and the pure-Python
distributions it needs that Lambda's runtime lacks (Powertools,
without extras, and typing-extensions), copied file by file from this environment's installation, as pip
installed them; and, under ``singleton-flags/``, the application's declarations, which the client finds
through ``SINGLETON_FLAGS_DECLARATIONS``. Pure Python runs on either architecture: a distribution that is not
pure (``Root-Is-Purelib`` false) is refused rather than shipped for the wrong platform. What the runtime has
(boto3, botocore and their dependencies) is left out. Each build lands in a directory named after a hash of
everything in it, so a synth reuses an identical build.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType

import singleton_flags
from singleton_flags.declarations import Declarations, load_declarations

__all__ = [
    "LAYER_DECLARATIONS_PATH",
    "RUNTIME_PROVIDED",
    "build_client_layer",
    "distribution_files",
    "in_site",
    "package_files",
    "staged_tree",
]

# Where Lambda mounts a layer's files: /opt (a layer's python/ is on the runtime's sys.path).
LAYER_DECLARATIONS_DIR = "singleton-flags"
LAYER_DECLARATIONS_PATH = f"/opt/{LAYER_DECLARATIONS_DIR}/declarations.json"
# In every Python runtime of Lambda already: never shipped twice (the first dotted or dashed part of the entry).
RUNTIME_PROVIDED = frozenset(
    ("boto3", "botocore", "s3transfer", "urllib3", "dateutil", "python_dateutil", "six", "jmespath", "bin")
)
COMPLETE = ".complete"
# The package's files that go into the layer: its code and its package data, as the wheel carries them.
_PACKAGE_SUFFIXES = (".py", ".json", ".typed")
# The distributions the package imports at run time that Lambda's runtime lacks (pure Python, copied as installed).
LAYER_DISTRIBUTIONS = ("aws-lambda-powertools", "typing-extensions")


def distribution_files(name: str) -> list[tuple[Path, str]]:
    """An installed distribution's files, as (source, path relative to site-packages), compiled files left out.
    Refuses a distribution that is not pure Python: its files are for this machine's platform only."""
    distribution = importlib.metadata.distribution(name)
    wheel = distribution.read_text("WHEEL") or ""
    if "Root-Is-Purelib: true" not in wheel:
        raise ValueError(f"{name} is not pure Python here: it cannot go into a layer for any architecture")
    files = []
    for file in distribution.files or ():
        relative = file.as_posix()
        if relative.startswith("..") or {"__pycache__", "tests"} & set(file.parts) or relative.endswith(".pyc"):
            continue
        files.append((Path(str(distribution.locate_file(file))), relative))
    return sorted(files)


def package_files(package: ModuleType) -> list[tuple[Path, str]]:
    """An imported package's runtime files, as (source, path relative to site-packages): its code and package data,
    as its wheel installs them, wherever it is installed from (a wheel, or a checkout's editable install)."""
    root = Path(str(package.__file__)).resolve().parent
    return sorted(
        (path, f"{root.name}/{path.relative_to(root).as_posix()}")
        for path in root.rglob("*")
        if path.is_file() and path.suffix in _PACKAGE_SUFFIXES and "__pycache__" not in path.parts
    )


def _declarations_document(declarations: Declarations | Path) -> str:
    loaded = load_declarations(declarations) if isinstance(declarations, Path) else declarations
    return json.dumps(loaded.document(), indent=2, sort_keys=False) + "\n"


def _fingerprint(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


def staged_tree(
    build_dir: Path,
    prefix: str,
    files: Sequence[tuple[Path, str]],
    extra: Mapping[str, str] | None = None,
) -> Path:
    """A directory holding ``files`` (source, path inside it) and ``extra`` (path inside it -> text), named
    ``<prefix>-<hash of all of it>`` under ``build_dir``, built now unless an identical one is already there."""
    added = dict(extra or {})
    fingerprint = _fingerprint(
        [
            *(name.encode() + b"\0" + source.read_bytes() for source, name in files),
            *(name.encode() + b"\0" + text.encode() for name, text in sorted(added.items())),
        ]
    )
    target = build_dir / f"{prefix}-{fingerprint}"
    complete = build_dir / f"{target.name}{COMPLETE}"  # beside the tree, not in it
    if complete.exists() and target.is_dir():
        return target
    staging = build_dir / f"{target.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for source, name in files:
        destination = staging / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)
    for name, text in added.items():
        destination = staging / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(text, encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    complete.write_text(f"{len(files) + len(added)} files\n")
    return target


def in_site(files: Iterable[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """``files`` under a layer's ``python/``, the folder Lambda puts on a Python function's path."""
    return [(source, f"python/{name}") for source, name in files]


def build_client_layer(
    declarations: Declarations | Path,
    *,
    architecture: str,
    build_dir: Path,
) -> Path:
    """The layer's root directory for these declarations and this architecture, built now unless it exists."""
    files = package_files(singleton_flags) + [file for name in LAYER_DISTRIBUTIONS for file in distribution_files(name)]
    return staged_tree(
        build_dir,
        f"client-layer-{architecture}",
        in_site(files),
        {f"{LAYER_DECLARATIONS_DIR}/declarations.json": _declarations_document(declarations)},
    )
