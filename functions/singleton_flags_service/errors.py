"""The service's typed domain errors: a stable code, an HTTP status and details, as data (on the declarations'
``FlagsError``, whose refusals they extend). Each class states the details it carries (``detail_types``): the
API document's error schemas are read from them.

Pure domain: nothing here builds HTTP headers. ``singleton_flags_service.api.http`` alone turns an error into a
response (the ``ETag`` of a 412, the ``Retry-After`` of a 409 or 503), matching errors by type.
"""

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, ClassVar

from singleton_flags.errors import DeclarationError, FlagsError, InvalidRequest, InvalidValue, UnknownFlag

__all__ = [
    "AlarmsFault",
    "AlarmsUnavailable",
    "AlreadyApproved",
    "ApprovalRequired",
    "BreakGlassRefused",
    "ChangeRequestNotFound",
    "DeclarationError",
    "FlagNotFound",
    "FlagsError",
    "FlagsMigrated",
    "FlagsSuperseded",
    "GuardAlarmActive",
    "GuardAlarmNotFound",
    "IdempotencyKeyReused",
    "InvalidRequest",
    "InvalidValue",
    "ItemTooLarge",
    "MigrationNotFound",
    "MigrationRefused",
    "NotAnApprover",
    "NotTheAuthor",
    "OutcomeUnknown",
    "PayloadTooLarge",
    "PreconditionFailed",
    "RequestAltered",
    "RequestClosed",
    "RequestStale",
    "ScheduleNotFound",
    "ScheduleNotPending",
    "SchedulerFault",
    "SchedulerUnavailable",
    "SelfApproval",
    "StoreFault",
    "StoreUnavailable",
    "UnknownFlag",
    "UnsupportedMediaType",
    "VersionNotFound",
    "WriteConflict",
]


class FlagNotFound(FlagsError):
    status = HTTPStatus.NOT_FOUND
    code = "FLAG_NOT_FOUND"
    detail_types: ClassVar[Mapping[str, Any]] = {"flag": str}


class VersionNotFound(FlagsError):
    status = HTTPStatus.NOT_FOUND
    code = "VERSION_NOT_FOUND"
    detail_types: ClassVar[Mapping[str, Any]] = {"version": int}


class ScheduleNotFound(FlagsError):
    status = HTTPStatus.NOT_FOUND
    code = "SCHEDULE_NOT_FOUND"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str}


class ScheduleNotPending(FlagsError):
    """The scheduled change was already applied, skipped, failed or cancelled: nothing left to cancel."""

    status = HTTPStatus.CONFLICT
    code = "SCHEDULE_NOT_PENDING"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str, "status": str}


class PreconditionFailed(FlagsError):
    status = HTTPStatus.PRECONDITION_FAILED
    code = "PRECONDITION_FAILED"
    detail_types: ClassVar[Mapping[str, Any]] = {"current_version": int, "flags": dict[str, Any]}

    def __init__(self, message: str, *, current_version: int | None, flags: Any = None) -> None:
        """``flags``: the current values from the writer's consistent read, so a client sees what changed."""
        super().__init__(message, current_version=current_version, flags=flags)
        self.current_version = current_version


class FlagsSuperseded(FlagsError):
    """The flags item is marked superseded (its table was replaced, or the item retired for another key): an
    operator's write is refused, naming the successor. 409: the item's state, not the request, refuses it, and no
    retry changes that; the fix is to write where ``superseded_by`` says."""

    status = HTTPStatus.CONFLICT
    code = "FLAGS_SUPERSEDED"
    detail_types: ClassVar[Mapping[str, Any]] = {"superseded_by": str, "superseded_at": str}


class FlagsMigrated(FlagsError):
    """The flags item was migrated to a later one (``migrated_to``, at version ``migrated_at``) and the request
    cannot be carried across: an If-Match naming the earlier item's version, a flag the migration removed, a revert
    to a version written in the earlier item's shape, a second migration. 409: the item's state refuses it; the
    message says what to do instead."""

    status = HTTPStatus.CONFLICT
    code = "FLAGS_MIGRATED"
    detail_types: ClassVar[Mapping[str, Any]] = {"migrated_to": str, "migrated_at": int}


class MigrationRefused(FlagsError):
    """A migration (or its finalising) that cannot be done now: values that do not convert, pending scheduled
    changes or guards, protected flags it would move, or an item that is not in the state the step needs. Nothing
    was written; ``refused`` lists each cause."""

    status = HTTPStatus.CONFLICT
    code = "MIGRATION_REFUSED"
    detail_types: ClassVar[Mapping[str, Any]] = {"refused": list[dict[str, Any]]}


class MigrationNotFound(FlagsError):
    """This service's flags item (``item``) takes part in no migration, expanding or finalised."""

    status = HTTPStatus.NOT_FOUND
    code = "MIGRATION_NOT_FOUND"
    detail_types: ClassVar[Mapping[str, Any]] = {"item": str}


class ItemTooLarge(FlagsError):
    status = HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    code = "ITEM_TOO_LARGE"
    detail_types: ClassVar[Mapping[str, Any]] = {"size": int, "limit": int, "rule": str}


class PayloadTooLarge(FlagsError):
    """The request body is over the write API's limit (checked before it is parsed)."""

    status = HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    code = "PAYLOAD_TOO_LARGE"
    detail_types: ClassVar[Mapping[str, Any]] = {"size": int, "limit": int, "rule": str}


class WriteConflict(FlagsError):
    status = HTTPStatus.CONFLICT
    code = "WRITE_CONFLICT"
    detail_types: ClassVar[Mapping[str, Any]] = {"attempts": int, "retry_after": int}

    def __init__(self, message: str, *, attempts: int, retry_after: int = 1) -> None:
        super().__init__(message, attempts=attempts, retry_after=retry_after)
        self.retry_after = retry_after


class UnsupportedMediaType(FlagsError):
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE
    code = "UNSUPPORTED_MEDIA_TYPE"
    detail_types: ClassVar[Mapping[str, Any]] = {"rule": str}


class StoreUnavailable(FlagsError):
    """DynamoDB could not be reached or refused the call for reasons the client did not cause."""

    status = HTTPStatus.SERVICE_UNAVAILABLE
    code = "STORE_UNAVAILABLE"
    retry_after = 2


class OutcomeUnknown(FlagsError):
    """A write was sent, its answer was lost, and the time budget ran out before its outcome could be read.

    It may or may not have committed. The history says (the record carries the write's token), and a
    retry with the same ``Idempotency-Key`` is safe: it answers the committed result or applies once.
    """

    status = HTTPStatus.SERVICE_UNAVAILABLE
    code = "OUTCOME_UNKNOWN"
    detail_types: ClassVar[Mapping[str, Any]] = {"version": int}  # the version the write tried to write
    retry_after = 2


class IdempotencyKeyReused(FlagsError):
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    code = "IDEMPOTENCY_KEY_REUSED"
    detail_types: ClassVar[Mapping[str, Any]] = {"rule": str}


class StoreFault(FlagsError):
    """DynamoDB refused a request for a reason no client input causes (a bug, a missing table, a denied call).

    500: it pages. The message names the DynamoDB error code; details stay in the log, with the request id.
    """

    status = HTTPStatus.INTERNAL_SERVER_ERROR
    code = "INTERNAL_ERROR"


class SchedulerUnavailable(FlagsError):
    """EventBridge Scheduler could not be reached or throttled the call: nothing was scheduled, a retry may work."""

    status = HTTPStatus.SERVICE_UNAVAILABLE
    code = "SCHEDULER_UNAVAILABLE"
    retry_after = 2


class SchedulerFault(FlagsError):
    """EventBridge Scheduler refused a call no client input explains (a denied call, a missing group or role).

    500: it pages. The message names Scheduler's error code; details stay in the log, with the request id.
    """

    status = HTTPStatus.INTERNAL_SERVER_ERROR
    code = "INTERNAL_ERROR"


class GuardAlarmNotFound(FlagsError):
    """A guard names an alarm CloudWatch does not have in this account and region."""

    code = "GUARD_ALARM_NOT_FOUND"
    detail_types: ClassVar[Mapping[str, Any]] = {"rule": str, "alarms": list[str]}


class GuardAlarmActive(FlagsError):
    """A guard names an alarm that is in ALARM now: the change would revert as soon as it is made."""

    status = HTTPStatus.CONFLICT
    code = "GUARD_ALARM_ACTIVE"
    detail_types: ClassVar[Mapping[str, Any]] = {"alarms": list[str]}


class AlarmsUnavailable(FlagsError):
    """CloudWatch could not be reached or throttled DescribeAlarms: nothing was written, a retry may work."""

    status = HTTPStatus.SERVICE_UNAVAILABLE
    code = "ALARMS_UNAVAILABLE"
    retry_after = 2


class AlarmsFault(FlagsError):
    """CloudWatch refused DescribeAlarms for a reason no client input explains (a denied call): 500, it pages."""

    status = HTTPStatus.INTERNAL_SERVER_ERROR
    code = "INTERNAL_ERROR"


class ApprovalRequired(FlagsError):
    """A direct write (a change, a revert, a scheduled or guarded change) would change a protected flag: it goes
    through a change request (POST /flags/change-requests)."""

    status = HTTPStatus.FORBIDDEN
    code = "APPROVAL_REQUIRED"
    detail_types: ClassVar[Mapping[str, Any]] = {"flags": list[str], "required_approvals": int}


class SelfApproval(FlagsError):
    status = HTTPStatus.FORBIDDEN
    code = "SELF_APPROVAL"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str, "principal": str}


class NotAnApprover(FlagsError):
    status = HTTPStatus.FORBIDDEN
    code = "NOT_AN_APPROVER"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str, "principal": str, "flag": str}


class NotTheAuthor(FlagsError):
    """Only a request's author withdraws it."""

    status = HTTPStatus.FORBIDDEN
    code = "NOT_THE_AUTHOR"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str, "principal": str}


class BreakGlassRefused(FlagsError):
    status = HTTPStatus.FORBIDDEN
    code = "BREAK_GLASS_REFUSED"
    detail_types: ClassVar[Mapping[str, Any]] = {"principal": str, "flag": str}


class ChangeRequestNotFound(FlagsError):
    status = HTTPStatus.NOT_FOUND
    code = "CHANGE_REQUEST_NOT_FOUND"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str}


class AlreadyApproved(FlagsError):
    """One principal counts once."""

    status = HTTPStatus.CONFLICT
    code = "ALREADY_APPROVED"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str, "principal": str}


class RequestClosed(FlagsError):
    """The request is no longer pending (applied, rejected, withdrawn, expired or stale): nothing moves it."""

    status = HTTPStatus.CONFLICT
    code = "REQUEST_CLOSED"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str, "state": str}


class RequestAltered(FlagsError):
    """The stored request no longer hashes to its id: someone with table rights edited it. Nothing approves it."""

    status = HTTPStatus.CONFLICT
    code = "REQUEST_ALTERED"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str}


class RequestStale(FlagsError):
    """A flag the request touches (or any protected flag) no longer holds its base value: the request is marked
    stale, and a new request is made against today's values."""

    status = HTTPStatus.PRECONDITION_FAILED
    code = "REQUEST_STALE"
    detail_types: ClassVar[Mapping[str, Any]] = {"id": str, "moved": list[str], "current_version": int}
