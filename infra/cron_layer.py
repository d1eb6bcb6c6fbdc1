"""croniter for the write function, as a layer asset: ``GET /flags/windows`` evaluates the windows' crons.

croniter is pure Python and needs only python-dateutil, which Lambda's Python runtime already has (botocore's
dependency), so the layer is the installed package copied as it is (the version requirements.txt pins, its
licence beside it): no download, no Docker, the same bytes on every synth of one environment. Built once per
version under ``.build/`` (ignored by git).
"""

from __future__ import annotations

import shutil
from importlib import metadata
from pathlib import Path

import croniter

from infra.powertools import BUILD_DIR, COMPLETE

PACKAGE = "croniter"


def cron_layer_directory(build_dir: Path = BUILD_DIR) -> Path:
    """The layer's root (``python/croniter`` inside), built now unless an identical build is already there."""
    version = metadata.version(PACKAGE)
    target = build_dir / f"{PACKAGE}-{version}"
    if (target / COMPLETE).exists():
        return target
    staging = build_dir / f"{PACKAGE}-{version}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    site = staging / "python"
    shutil.copytree(
        Path(croniter.__file__).parent,
        site / PACKAGE,
        ignore=shutil.ignore_patterns("tests", "__pycache__", "*.pyc"),
    )
    distribution = metadata.distribution(PACKAGE)
    for file in distribution.files or ():
        if file.name.upper().startswith("LICENSE"):
            shutil.copy2(Path(str(distribution.locate_file(file))), site / f"{PACKAGE}-LICENSE")
    (staging / COMPLETE).write_text(f"{PACKAGE}=={version}\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
