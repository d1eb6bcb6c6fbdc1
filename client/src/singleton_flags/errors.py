"""The errors the declarations raise: a broken declarations file, and a value or change they refuse.

A refusal is a ``FlagsError``: a stable code, a status and details, as data (the service adds its own errors on
this base, and turns any of them into an answer in one place).
"""

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, ClassVar

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
    """An error a client caused or must react to. Carries its HTTP status, a stable error code and details.

    ``detail_types``: every detail an error of the class may carry, by name, with its type: the one statement of
    them (the service's API document reads it).
    """

    status: HTTPStatus = HTTPStatus.BAD_REQUEST
    code: str = "BAD_REQUEST"
    detail_types: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = {key: value for key, value in details.items() if value is not None}


class InvalidRequest(FlagsError):
    code = "INVALID_REQUEST"
    # the rule broken, and what it names: a body's field or repeated key, a limit, a guard's alarm
    detail_types: ClassVar[Mapping[str, Any]] = {"rule": str, "field": str, "key": str, "limit": int, "alarm": str}


class UnknownFlag(FlagsError):
    code = "UNKNOWN_FLAG"
    detail_types: ClassVar[Mapping[str, Any]] = {"flag": str, "rule": str}


class InvalidValue(FlagsError):
    code = "INVALID_VALUE"
    detail_types: ClassVar[Mapping[str, Any]] = {"flag": str, "rule": str}
