"""The CDK app of singleton-flags: a thin stack composing one construct per concern.

``functions/`` (the asset root of every function) is put on ``sys.path`` so that the stack builds the seed,
the routes and the handler names from the very code that runs in Lambda (``flags.*``), never retyped.
"""

import sys

from infra.constants import FUNCTIONS_DIR

if str(FUNCTIONS_DIR) not in sys.path:
    sys.path.insert(0, str(FUNCTIONS_DIR))
