"""The errors the declarations raise: a broken declarations file, and a value or change they refuse.

A refusal is a ``FlagsError``: a stable code, a status and details, as data (the service adds its own errors on
this base, and turns any of them into an answer in one place).
"""

from http import HTTPStatus
from typing import Any

__all__ = [
    "DeclarationError",
    "FlagsError",
    "InvalidRequest",
    "InvalidValue",
    "UnknownFlag",
]


class DeclarationError(ValueError):
    """The declarations file is broken. Raised at load, naming the flag: a deploy must not go out with it."""


class FlagsError(Exception):
    """An error a client caused or must react to. Carries its HTTP status and a stable error code."""

    status: HTTPStatus = HTTPStatus.BAD_REQUEST
    code: str = "BAD_REQUEST"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = {key: value for key, value in details.items() if value is not None}


class InvalidRequest(FlagsError):
    code = "INVALID_REQUEST"


class UnknownFlag(FlagsError):
    code = "UNKNOWN_FLAG"


class InvalidValue(FlagsError):
    code = "INVALID_VALUE"
