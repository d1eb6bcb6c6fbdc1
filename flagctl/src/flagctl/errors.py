"""flagctl's exit codes and its one error: a problem on this side or with the server's answer, and its exit code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OK, BAD_INPUT, CONFLICT, AUTH, SERVER = 0, 2, 3, 4, 5
# ``refs``: code and declarations disagree (an undeclared name used, a declared flag not referenced, ...).
DISAGREE = 1
# A read answered, but with the declared fallbacks (reason DEFAULT): the item is missing or unreadable.
FALLBACKS = 6
# ``set --wait``: the change was applied, but it could not be known that readers serve it within --wait-timeout.
NOT_SEEN = 7


class FlagctlError(Exception):
    """A problem on this side (bad target, no credentials, network) or a server's answer that cannot be used;
    carries its exit code and a code for ``--json`` (``BAD_INPUT``, ``NETWORK_ERROR``, ``TIMEOUT``, ...)."""

    def __init__(self, message: str, exit_code: int, code: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.code = code
        self.details = dict(details or {})  # more for --json: a redirect's status and Location
