"""A failed call to an AWS service other than DynamoDB (EventBridge Scheduler, CloudWatch), as a domain error.

Classified as the DynamoDB calls' are (singleton_flags_service.writes.transaction): throttling, 5xx and network errors
are the
service's ``Unavailable`` error (retryable, 503); any other refusal is its ``Fault`` (our fault, 500, logged at
ERROR with the service's error code and request id, so it pages).
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from singleton_flags_service.errors import FlagsError
from singleton_flags_service.observability import logger


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def call_error(
    exc: ClientError | BotoCoreError,
    service: str,
    operation: str,
    retryable: frozenset[str],
    unavailable: type[FlagsError],
    fault: type[FlagsError],
) -> FlagsError:
    """The error to raise (``from exc``) for ``exc``, raised by ``service``'s ``operation``."""
    if isinstance(exc, BotoCoreError):
        return unavailable(f"{service} {operation} failed: {type(exc).__name__}")
    code = error_code(exc)
    if code in retryable:
        return unavailable(f"{service} {operation} failed: {code}")
    logger.error(
        f"{service} refused a call no client input explains: a bug or a broken deployment",
        operation=operation,
        code=code,
        request_id=exc.response.get("ResponseMetadata", {}).get("RequestId"),
        error=str(exc),
    )
    return fault(f"{service} {operation} failed with {code}: an internal error, reported to the operators")
