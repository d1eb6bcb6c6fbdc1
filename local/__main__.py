"""``python -m local`` (``make run``): the local runner. See local/runner.py."""

import sys

import local.paths  # noqa: F401 - first: puts functions/ on sys.path
from local.runner import main

sys.exit(main())
