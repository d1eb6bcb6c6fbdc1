"""``python -m flagctl``: see flagctl/cli.py."""

import sys

from flagctl.cli import main

sys.exit(main())
