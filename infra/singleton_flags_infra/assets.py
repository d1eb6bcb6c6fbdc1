"""The functions' code asset: the service's package (its handlers and runtime, ``singleton_flags_service``) beside
the client package it reads the flags with (``singleton_flags``), staged from wherever they are installed (a wheel,
or a checkout's editable install): every handler string is ``singleton_flags_service.handlers.<name>.handler``.
The deployment document the stack writes for this stage (``singleton_flags_service.contract.deployment_document``)
is added where the functions read it: ``DEPLOYMENT_FILE``, beside the contract in the service's package.
The staged tree is named by a hash of its files, so an unchanged synth reuses it.
"""

from __future__ import annotations

from pathlib import Path

import singleton_flags
import singleton_flags_service
from singleton_flags_cdk.layer import package_files, staged_tree
from singleton_flags_service.contract import DEPLOYMENT_FILE

# The document's path inside the asset (the asset's root is on the functions' path: /var/task).
DEPLOYMENT_DOCUMENT_PATH = f"{singleton_flags_service.__name__}/{DEPLOYMENT_FILE.name}"


def functions_asset_dir(build_dir: Path, deployment_document: str) -> Path:
    """The directory the functions' code asset is made of, with ``deployment_document`` in it."""
    files = package_files(singleton_flags_service) + package_files(singleton_flags)
    # a document left in a checkout's package is never shipped: the stack's own is
    files = [(source, name) for source, name in files if name != DEPLOYMENT_DOCUMENT_PATH]
    return staged_tree(build_dir, "functions", files, {DEPLOYMENT_DOCUMENT_PATH: deployment_document})
