"""The functions' code asset: ``functions/`` of the checkout as it is, or, where the service is built from the
installed distribution (``singleton-flags[cdk]``), the same tree staged from the package.

In a checkout, ``functions/`` holds the handlers beside the ``singleton_flags`` package: the asset is that
directory. The distribution carries the handlers as ``singleton_flags.service.handlers.<name>``; staged, each is
``<name>/`` again beside the package's own files (without the CDK app), so every handler string
(``read_api.handler.handler``) is the same in both. The staged tree is named by a hash of its files, so an
unchanged synth reuses it.
"""

from __future__ import annotations

from pathlib import Path

from singleton_flags.layer import package_files, staged_tree

from .constants import CHECKOUT_FUNCTIONS, IN_CHECKOUT

HANDLERS_DIR = Path(__file__).resolve().parent / "handlers"  # the distribution: singleton_flags/service/handlers/


def _handler_files() -> list[tuple[Path, str]]:
    return sorted(
        (path, path.relative_to(HANDLERS_DIR).as_posix())
        for path in HANDLERS_DIR.rglob("*.py")
        if "__pycache__" not in path.parts and path.parent != HANDLERS_DIR
    )


def functions_asset_dir(build_dir: Path) -> Path:
    """The directory the functions' code asset is made of."""
    if IN_CHECKOUT:
        return CHECKOUT_FUNCTIONS
    return staged_tree(build_dir, "functions", _handler_files() + package_files())
