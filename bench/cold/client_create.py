"""Cold: import the package and create the embedded client, as an application's module scope does."""

import os

import singleton_flags

FLAGS = singleton_flags.Flags.from_env(os.environ)
