"""Cold: import the package, create the embedded client and read one flag (one GetItem)."""

import os
import sys

import singleton_flags

FLAGS = singleton_flags.Flags.from_env(os.environ)
sys.exit(0 if FLAGS.get("signup_enabled") is True else 1)
