"""DynamoDB calls of the write path, their failures classified by meaning, and exactly-once sending.

One classification for every call: throttling, 5xx and network errors are retryable (503, or for a transaction
whose answer was lost, a resend); ``ConditionalCheckFailed`` / ``TransactionConflict`` are conflicts; anything
else (a ``ValidationException``, a missing table, a denied call, an unknown code) is our own fault (500).

A transaction is sent as one request built once, with its ``ClientRequestToken``: after a lost answer the
byte-identical request is resent (DynamoDB applies a token once and answers its repeats with success) while
the time budget allows, keeping one call's time for the writer to read the outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

from singleton_flags_service.errors import StoreFault, StoreUnavailable
from singleton_flags_service.observability import logger

MAX_RESENDS = 3  # identical resends of one transaction after a lost answer, within the time budget

_THROTTLED = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"})
_RETRYABLE = _THROTTLED | {
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionInProgressException",
    "LimitExceededException",
}
_CONFLICT_REASONS = frozenset({"ConditionalCheckFailed", "TransactionConflict"})
_RETRYABLE_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "TransactionConflict"})


@dataclass(slots=True)
class Budget:
    """The time a request may still spend on DynamoDB calls (``deadline`` None: no limit)."""

    deadline: float | None
    monotonic: Callable[[], float]
    call_seconds: float  # the longest one call can take with the client's timeouts and retries

    def allows(self, calls: int = 1) -> bool:
        """``calls`` more calls may start now: their worst case still ends by the deadline."""
        return self.deadline is None or self.monotonic() + calls * self.call_seconds <= self.deadline

    def room(self, calls: int = 1) -> float | None:
        """Seconds left before the last moment ``calls`` more calls may start (negative: it has passed; None: no
        deadline)."""
        return None if self.deadline is None else self.deadline - calls * self.call_seconds - self.monotonic()


class Conflict(Exception):
    """The transaction was cancelled because an item moved on (or a concurrent transaction held it)."""

    def __init__(self, reasons: list[str | None]) -> None:
        super().__init__(reasons)
        self.reasons = reasons


class Lost(Exception):
    """The transaction's answer was lost (timeouts, 5xx) and every resend the budget allowed was lost too."""

    def __init__(self, cause: str, ambiguous: bool) -> None:
        super().__init__(cause)
        self.cause = cause
        self.ambiguous = ambiguous  # False when every failure said "not applied" (throttling, no connection)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def fault(operation: str, exc: ClientError) -> StoreFault:
    """Our own fault: logged at ERROR with DynamoDB's request id; the answer is a 500 that pages."""
    code = error_code(exc)
    request_id = exc.response.get("ResponseMetadata", {}).get("RequestId")
    logger.error(
        "DynamoDB refused a call no client input explains: a bug or a broken deployment",
        operation=operation,
        code=code,
        dynamodb_request_id=request_id,
        error=str(exc),
    )
    return StoreFault(f"DynamoDB {operation} failed with {code}: an internal error, reported to the operators")


def call(client: Any, operation: str, *, conditional: bool = False, **params: Any) -> Any:
    """One DynamoDB call: its answer, or ``StoreUnavailable`` (retryable) or ``StoreFault`` (our fault).

    ``conditional``: the call has a ConditionExpression the caller expects to fail sometimes; its failure is
    ``Conflict`` (the item is not in the state the condition names), not a fault."""
    try:
        return getattr(client, operation)(**params)
    except ClientError as exc:
        code = error_code(exc)
        if conditional and code == "ConditionalCheckFailedException":
            raise Conflict([code]) from exc
        if code in _RETRYABLE:
            raise StoreUnavailable(f"DynamoDB {operation} failed: {code}") from exc
        raise fault(operation, exc) from exc
    except BotoCoreError as exc:
        raise StoreUnavailable(f"DynamoDB {operation} failed: {type(exc).__name__}") from exc


T = TypeVar("T")


def query_all(client: Any, params: dict[str, Any], parse: Callable[[dict[str, Any]], T]) -> list[T]:
    """Every item a Query matches, page after page, each parsed (``call``'s errors)."""
    params = dict(params)
    found: list[T] = []
    while True:
        answer = call(client, "query", **params)
        found.extend(parse(item) for item in answer.get("Items", []))
        last = answer.get("LastEvaluatedKey")
        if not last:
            return found
        params["ExclusiveStartKey"] = last


def send(client: Any, request: dict[str, Any], budget: Budget) -> None:
    """Send ``TransactWriteItems(**request)``; raise ``Conflict``, ``Lost`` or ``StoreFault``."""
    ambiguous = False
    cause = ""
    if not budget.allows():
        raise Lost("the request's time budget ran out before the write was sent", ambiguous=False)
    for _ in range(1 + MAX_RESENDS):
        try:
            client.transact_write_items(**request)
            return
        except ClientError as exc:
            code = error_code(exc)
            if code == "TransactionCanceledException":
                reasons = [reason.get("Code") for reason in exc.response.get("CancellationReasons", [])]
                failed = {reason for reason in reasons if reason not in (None, "None")}
                if not failed or failed <= _CONFLICT_REASONS:
                    raise Conflict(reasons) from exc
                if not failed <= _RETRYABLE_REASONS:
                    raise fault("TransactWriteItems", exc) from exc
                cause = f"cancelled: {sorted(failed)}"
            elif code == "TransactionConflictException":
                raise Conflict([code]) from exc
            elif code in _RETRYABLE:
                ambiguous = ambiguous or code not in _THROTTLED
                cause = code
            else:
                raise fault("TransactWriteItems", exc) from exc
        except BotoCoreError as exc:
            # a request that never connected cannot have been applied; any other loss may have been
            ambiguous = ambiguous or not isinstance(exc, (EndpointConnectionError, ConnectTimeoutError))
            cause = type(exc).__name__
        if not budget.allows(2):
            break
        logger.warning("DynamoDB's answer to the write was lost: resending it with the same token", cause=cause)
    raise Lost(cause, ambiguous)
