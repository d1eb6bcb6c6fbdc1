"""The consumer's own tests: the signup handler with its flags set in memory (the ``singleton_flags`` fixture)."""

import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(APP / "signup"))  # the handler's folder, as the layer's function sees it


@pytest.fixture
def singleton_flags_declarations() -> str:
    """This application's declarations, the file its stack ships in the layer."""
    return str(APP / "flags.json")
