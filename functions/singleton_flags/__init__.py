"""Shared runtime library of singleton-flags, bundled into every function.

Modules are imported explicitly (``from singleton_flags.reader import FlagReader``) so that a function
loads only what it uses: the read function never imports the write path or pydantic.
"""
