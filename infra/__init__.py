"""The CDK app of singleton-flags: a thin stack composing one construct per concern.

``functions/`` (the asset root of every function) is put on ``sys.path`` so that the stack builds the seed,
the routes and the handler names from the very code that runs in Lambda (``flags.*``), never retyped.
"""

import sys
from pathlib import Path

_FUNCTIONS_DIR = str(Path(__file__).resolve().parents[1] / "functions")  # = infra.constants.FUNCTIONS_DIR
if _FUNCTIONS_DIR not in sys.path:
    sys.path.insert(0, _FUNCTIONS_DIR)
