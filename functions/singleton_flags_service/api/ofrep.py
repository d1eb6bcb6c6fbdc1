"""The OpenFeature Remote Evaluation Protocol (OFREP) on the read path: requests checked, answers shaped.

Any OpenFeature SDK with an OFREP provider reads the flags through ``POST /ofrep/v1/evaluate/flags/{key}`` and
``POST /ofrep/v1/evaluate/flags`` (docs/ofrep.md). The evaluation context is accepted and ignored: the flags are
application-wide, one value for every caller. Answers:

- an evaluation: ``{key, value, reason, variant, metadata}``; ``reason`` is the read's own OpenFeature reason
  (STATIC, CACHED, STALE, DEFAULT), ``variant`` says which value was served (``stored``, ``fallback``, or
  ``deadline_ended`` for maintenance switched off by its window's stored deadline), ``metadata`` is flat; variants
  and metadata are the in-process OpenFeature provider's, key for key (``singleton_flags.snapshot``);
- an error: ``{key, errorCode, errorDetails}`` (no ``key`` on the bulk route), OFREP's shape, not ``{"error"}``.

Nothing here is imported that a GET does not load already: a body other than none or ``{}`` is checked by the
write API's JSON rules (``singleton_flags_service.api.requests``), imported on the first such request only.
"""

from http import HTTPStatus
from typing import Any, Literal, cast

# pydantic reads typing's TypedDict only from Python 3.12 on (the Lambda runtime's; not the oldest supported)
from typing_extensions import NotRequired, TypedDict  # noqa: UP035

from singleton_flags.declarations import TYPES, Declarations
from singleton_flags.reader import FlagState
from singleton_flags.snapshot import flag_metadata, flag_reason, flag_variant
from singleton_flags.vocabulary import DEADLINE_ENDED_VARIANT, FALLBACK_VARIANT, STORED_VARIANT, VARIANTS
from singleton_flags_service.api.http import FlagValue
from singleton_flags_service.errors import FlagsError
from singleton_flags_service.vocabulary import READ_REASONS

PARSE_ERROR = "PARSE_ERROR"
INVALID_CONTEXT = "INVALID_CONTEXT"
FLAG_NOT_FOUND = "FLAG_NOT_FOUND"
ERROR_CODES = (PARSE_ERROR, INVALID_CONTEXT, FLAG_NOT_FOUND)

STORED, FALLBACK, DEADLINE_ENDED = STORED_VARIANT, FALLBACK_VARIANT, DEADLINE_ENDED_VARIANT

FLAG_TYPES = tuple(sorted(TYPES))


class OfrepEvaluationRequest(TypedDict, total=False):
    """The evaluation context is accepted and ignored: the flags are application-wide."""

    context: dict[str, Any]
    """Any object; targetingKey is optional."""


class OfrepMetadata(TypedDict):
    """Flat: strings, numbers and booleans only; a key without a value is absent, never null. OpenFeature's
    well-known keys (flagSetId, version), then this service's."""

    flagSetId: str
    """The flag set: the service's name (POWERTOOLS_SERVICE_NAME)."""
    version: NotRequired[int]
    """The stored version, a number; absent for fallbacks."""
    fetchedAt: NotRequired[str]
    """When the values were read from the table (RFC 3339, UTC); absent when nothing was read."""
    type: Literal[FLAG_TYPES]  # type: ignore[valid-type]  # the declarations' types, as a Literal
    contextIgnored: Literal[True]


class OfrepEvaluation(TypedDict):
    """One flag's evaluation."""

    key: str
    value: FlagValue
    reason: Literal[READ_REASONS]  # type: ignore[valid-type]  # the reasons' one definition, as a Literal
    """Where the value came from, in OpenFeature's reasons (not OFREP's example list)."""
    variant: Literal[VARIANTS]  # type: ignore[valid-type]
    """Which value was served: the stored one, the fallback, or maintenance switched off by its window's deadline."""
    metadata: OfrepMetadata


class OfrepBulkEvaluation(TypedDict):
    """Every declared flag's evaluation, in declaration order."""

    flags: list[OfrepEvaluation]


class _OfrepFailure(TypedDict):
    errorDetails: str
    """What is wrong, for logs."""


class OfrepBulkEvaluationFailure(_OfrepFailure):
    """Not an evaluation request (PARSE_ERROR), or a context that is no object (INVALID_CONTEXT)."""

    errorCode: Literal[PARSE_ERROR, INVALID_CONTEXT]  # type: ignore[valid-type]


class OfrepEvaluationFailure(OfrepBulkEvaluationFailure):
    """Not an evaluation request (PARSE_ERROR), or a context that is no object (INVALID_CONTEXT), for one key."""

    key: str


class OfrepFlagNotFound(_OfrepFailure):
    """No flag of that key is declared."""

    key: str
    errorCode: Literal[FLAG_NOT_FOUND]  # type: ignore[valid-type]


_EMPTY_BODIES = frozenset({"", "{}"})
_accepted = {"last": ""}  # the last body found to be an evaluation request: a provider resends the same one


class OfrepError(Exception):
    """An OFREP request the read function refuses: its status, OFREP error code and details."""

    def __init__(self, status: HTTPStatus, code: str, details: str, key: str | None = None) -> None:
        super().__init__(details)
        self.status = status
        self.code = code
        self.details = details
        self.key = key

    def body(self) -> OfrepBulkEvaluationFailure | OfrepEvaluationFailure | OfrepFlagNotFound:
        if self.key is None:
            return {"errorCode": self.code, "errorDetails": self.details}
        return {"key": self.key, "errorCode": self.code, "errorDetails": self.details}


def check_request(body: str | None, key: str | None = None) -> None:
    """Refuse a body that is not an evaluation request: not a JSON object (PARSE_ERROR, by the write API's JSON
    rules: at most 64 KiB, 32 levels, no duplicate keys, valid UTF-8), or a ``context`` that is not an object
    (INVALID_CONTEXT). No body, ``{}`` and a context without ``targetingKey`` are fine."""
    if body is None or body in _EMPTY_BODIES or body == _accepted["last"]:
        return
    from singleton_flags_service.api.requests import parse_json_body

    try:
        payload = parse_json_body(body)
    except FlagsError as exc:
        raise OfrepError(HTTPStatus.BAD_REQUEST, PARSE_ERROR, exc.message, key) from exc
    if "context" in payload and not isinstance(payload["context"], dict):
        raise OfrepError(
            HTTPStatus.BAD_REQUEST,
            INVALID_CONTEXT,
            "'context' must be a JSON object (the evaluation context; it may be empty)",
            key,
        )
    _accepted["last"] = body


def check_key(key: str, declarations: Declarations) -> None:
    if key not in declarations:
        raise OfrepError(HTTPStatus.NOT_FOUND, FLAG_NOT_FOUND, f"no flag named '{key}' is declared", key)


def variant(state: FlagState, key: str) -> str:
    return flag_variant(state, key)


def evaluation(state: FlagState, key: str, declarations: Declarations, flag_set_id: str) -> OfrepEvaluation:
    """One flag's OFREP evaluation, with the metadata the in-process provider gives (``flag_metadata``)."""
    metadata = cast("OfrepMetadata", flag_metadata(state, declarations[key].type, flag_set_id))
    return {
        "key": key,
        "value": state.values[key],
        "reason": flag_reason(state, key),  # DEFAULT for a flag served as its fallback, as GET /flags/{name}
        "variant": flag_variant(state, key),
        "metadata": metadata,
    }


def bulk_evaluation(state: FlagState, declarations: Declarations, flag_set_id: str) -> OfrepBulkEvaluation:
    """Every declared flag's evaluation, in declaration order."""
    return {"flags": [evaluation(state, key, declarations, flag_set_id) for key in declarations]}
