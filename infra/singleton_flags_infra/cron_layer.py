"""croniter for the write function, as a layer asset: ``GET /flags/windows`` evaluates the windows' crons.

croniter is pure Python and needs only python-dateutil, which Lambda's Python runtime already has (botocore's
dependency), so the layer is the installed distribution copied file by file (the version requirements.txt pins,
its licence in its metadata): no download, no Docker, the same bytes on every synth of one environment
(``singleton_flags_cdk.layer``, as the client layer is built). Kept under ``.build/`` (ignored by git).
"""

from __future__ import annotations

from pathlib import Path

from singleton_flags_cdk.layer import distribution_files, in_site, staged_tree

from . import constants

PACKAGE = "croniter"


def cron_layer_directory(build_dir: Path = constants.BUILD_DIR) -> Path:
    """The layer's root (``python/croniter`` inside), built now unless an identical build is already there."""
    return staged_tree(build_dir, f"{PACKAGE}-layer", in_site(distribution_files(PACKAGE)))
