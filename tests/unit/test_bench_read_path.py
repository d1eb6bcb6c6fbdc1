"""The read-path bench times the read function as Lambda loads it: its cold scripts import the handler module the
contract names, from the functions' asset root."""

from __future__ import annotations

import subprocess
import sys

from bench.read_path import BREAKDOWN_SCRIPT, FUNCTIONS, HANDLER_MODULE, HANDLER_SCRIPT
from singleton_flags_service.contract import HANDLERS, READ_FUNCTION


def test_the_cold_scripts_import_the_read_handler_the_contract_names() -> None:
    # Given the read function's handler string in the contract
    module = HANDLERS[READ_FUNCTION].rpartition(".")[0]
    # Then the bench's cold scripts import that module, as Lambda does
    assert module == HANDLER_MODULE
    assert f"import {module} as module" in HANDLER_SCRIPT
    assert f"import {module} as module" in BREAKDOWN_SCRIPT
    # And it is importable from the asset root the cold runs start in
    found = subprocess.run(
        [sys.executable, "-c", f"import importlib.util; print(importlib.util.find_spec({module!r}) is not None)"],
        cwd=FUNCTIONS,
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip() == "True"
