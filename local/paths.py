"""Where things are, and ``functions/`` on ``sys.path`` (Lambda puts the asset root there; so do we).

Imported first by every entry point of ``local`` (``python -m local``, ``python -m local.openapi``), before
anything from ``flags`` or a handler module.
"""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS_DIR = REPO_ROOT / "functions"

if str(FUNCTIONS_DIR) not in sys.path:
    sys.path.insert(0, str(FUNCTIONS_DIR))
