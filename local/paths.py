"""Where things are: the repository the local runner runs from."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
