"""Where things are: the repository, and ``functions/`` (the functions' asset root, Lambda's ``/var/task``)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = REPO_ROOT / "functions"
