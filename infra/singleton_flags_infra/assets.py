"""The functions' code asset: the service's package (its handlers and runtime, ``singleton_flags_service``) beside
the client package it reads the flags with (``singleton_flags``), staged from wherever they are installed (a wheel,
or a checkout's editable install): every handler string is ``singleton_flags_service.handlers.<name>.handler``.
The staged tree is named by a hash of its files, so an unchanged synth reuses it.
"""

from __future__ import annotations

from pathlib import Path

import singleton_flags
import singleton_flags_service
from singleton_flags_cdk.layer import package_files, staged_tree


def functions_asset_dir(build_dir: Path) -> Path:
    """The directory the functions' code asset is made of."""
    return staged_tree(build_dir, "functions", package_files(singleton_flags_service) + package_files(singleton_flags))
