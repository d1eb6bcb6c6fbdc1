"""Powertools as a layer asset (``powertools: bundled``), for regions where AWS publishes no public layer.

The pinned release (and what the functions import from it: the X-Ray SDK for ``Tracer``, pydantic for the
write function's models) is installed with pip for Lambda's runtime and architecture, wheels only, so no
Docker is needed: ``--platform manylinux..._aarch64 --python-version 3.13 --only-binary=:all:``. What the
runtime already has (boto3, botocore and their dependencies) is left out. The directory is built once per
version and reused (``.build/``, ignored by git), so only the first synth downloads.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from singleton_flags_cdk.layer import RUNTIME_PROVIDED

from . import constants

PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")  # Lambda arm64 (Amazon Linux 2023, glibc 2.34)
PYTHON_VERSION = constants.LAMBDA_RUNTIME.removeprefix("python")
REQUIREMENTS = (
    f"aws-lambda-powertools[tracer]=={constants.POWERTOOLS_VERSION}",
    "pydantic>=2.14,<3",  # the write function's models (requirements.txt)
)
COMPLETE = ".complete"


def bundled_layer_directory(build_dir: Path = constants.BUILD_DIR) -> Path:
    """The layer's root (``python/`` inside), built now unless an identical build is already there."""
    name = f"powertools-{constants.POWERTOOLS_VERSION}-{constants.LAMBDA_RUNTIME}-{constants.LAMBDA_ARCHITECTURE}"
    target = build_dir / name
    if (target / COMPLETE).exists():
        return target
    staging = build_dir / f"{name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    site = staging / "python"
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        PYTHON_VERSION,
        *(arg for platform in PLATFORMS for arg in ("--platform", platform)),
        "--target",
        str(site),
        *REQUIREMENTS,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"installing Powertools for the layer asset failed ({' '.join(command)}):\n{result.stdout}{result.stderr}"
        )
    for entry in list(site.iterdir()):
        package = entry.name.split("-")[0].split(".")[0].lower()
        if package in RUNTIME_PROVIDED or entry.name == "__pycache__":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    (staging / COMPLETE).write_text(" ".join(REQUIREMENTS) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
