"""``python -m local`` (``make run``): the local runner. See local/runner.py."""

import sys

from local.runner import main

sys.exit(main())
