"""Request and response models of the write API, built from the declarations (pydantic: write side only).

One schema per request, validated once, and each request's fields declared once, here: each request model's
first validator refuses a field the model does not declare (``known_fields``, whose message names them), then
runs the domain rules (``singleton_flags_service.api.requests.validate_patch`` / ``validate_revert`` / ...) on
the raw body and raises their precise refusal (which field, flag and rule), which pydantic lets through
untouched; the typed fields then describe the normalized body for the OpenAPI document. The read function never
imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    create_model,
    model_validator,
)

from singleton_flags.declarations import DEFAULT_STRING_MAX_LENGTH, Declarations, FlagSpec
from singleton_flags_service.api.requests import (
    MAX_REASON_LENGTH,
    MAX_VERSION,
    known_fields,
    refuse_dry_run,
    validate_change_request,
    validate_decision,
    validate_migration,
    validate_patch,
    validate_restore,
    validate_revert,
    validate_schedule,
)
from singleton_flags_service.approvals.models import KINDS as REQUEST_KINDS, STATES as REQUEST_STATES
from singleton_flags_service.guards.items import MAX_ALARMS, MAX_BAKE_MINUTES, MIN_BAKE_MINUTES, STATES
from singleton_flags_service.schedules.changes import STATUSES
from singleton_flags_service.vocabulary import READ_REASONS

# The reason's rules (trimmed, a visible character, no control character, length of the trimmed text) are
# singleton_flags_service.api.requests.validate_reason's; the schema only documents the length, so pydantic is never
# stricter.
_REASON_SCHEMA: dict[str, Any] = {"minLength": 1, "maxLength": MAX_REASON_LENGTH}

_BASE_TYPES: dict[str, Any] = {
    "bool": StrictBool,
    "int": StrictInt,
    "float": StrictFloat | StrictInt,
    "string": StrictStr,
}


def _field_type(spec: FlagSpec) -> Any:
    if spec.choices is not None:
        return Literal[spec.choices]
    return _BASE_TYPES[spec.type]


def _field(spec: FlagSpec) -> Any:
    constraints: dict[str, Any] = {"description": spec.description}
    if spec.minimum is not None:
        constraints["ge"] = spec.minimum
    if spec.maximum is not None:
        constraints["le"] = spec.maximum
    if spec.type == "string" and spec.choices is None:
        constraints["max_length"] = spec.max_length or DEFAULT_STRING_MAX_LENGTH
    return (_field_type(spec), Field(None, **constraints))


def flag_values_model(declarations: Declarations, name: str, *, partial: bool) -> type[BaseModel]:
    fields = {spec.name: _field(spec) for spec in declarations.values()}
    if not partial:
        fields = {flag: (field[0], Field(..., description=field[1].description)) for flag, field in fields.items()}
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


class _Request(BaseModel):
    """A request body validated once: a JSON object of the model's own fields (the one list of them), then its
    ``rules`` (the domain's) on the raw body, which raise their precise refusal, which pydantic lets through
    untouched; the fields then hold the normalized body."""

    model_config = ConfigDict(extra="forbid")

    @staticmethod
    def rules(body: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError  # each request model names its rules

    @model_validator(mode="before")
    @classmethod
    def _domain_rules(cls, payload: Any) -> dict[str, Any]:
        return cls.rules(known_fields(payload, cls.model_fields))


class GuardRequest(BaseModel):
    """A change's guard (the rules: singleton_flags_service.guards.items.validate_guard)."""

    model_config = ConfigDict(extra="forbid")
    alarms: list[StrictStr] = Field(
        min_length=1,
        max_length=MAX_ALARMS,
        description="CloudWatch alarms (this account and region, names starting with the deployment's guard "
        "alarm prefix); any going into ALARM during the bake reverts the change.",
    )
    bake_minutes: StrictInt = Field(
        ge=MIN_BAKE_MINUTES, le=MAX_BAKE_MINUTES, description="How long the alarms are watched after the change."
    )


class GuardState(BaseModel):
    """A guard as GET /flags/guards and a guarded write answer it
    (singleton_flags_service.guards.items.Guard.as_json)."""

    version: int = Field(description="The guarded version.")
    state: Literal[STATES] = Field(  # type: ignore[valid-type]
        description="baking, closed (bake ended), reverted (an alarm fired) or skipped (fired after a newer change)."
    )
    alarms: list[str]
    bake_minutes: int
    created_at: str
    bake_ends_at: str
    actor: str
    outcome: str | None = Field(description="Why the guard ended (null while baking).")
    alarm: str | None = Field(None, description="The alarm that fired.")
    reverted_by: int | None = Field(None, description="The guard-revert's version.")
    ended_at: str | None = None
    close_scheduled: bool | None = Field(
        None, description="In a guarded write's answer: whether the bake's end was scheduled."
    )


_GUARD_FIELD = Field(None, description="Revert this change by itself if an alarm fires during the bake.")


class MigrationRequest(_Request):
    """POST /flags/migration (the rules: singleton_flags_service.api.requests.validate_migration)."""

    rules = staticmethod(validate_migration)
    declarations: dict[str, Any] = Field(
        description='The new declarations, as a declarations file holds them: {"flags": [...]}.'
    )
    mapping: dict[str, Any] = Field(
        description="The mapping from the flags item's shape to the new one (docs/lifecycle.md): renames, "
        "conversions, removals, added flags with their initial values."
    )
    reason: StrictStr = Field(description="Why (audited with the version it writes).", json_schema_extra=_REASON_SCHEMA)

    @model_validator(mode="before")
    @classmethod
    def _domain_rules(cls, payload: Any) -> dict[str, Any]:
        refuse_dry_run(payload)  # named before the unknown-field rule would refuse it
        return cls.rules(known_fields(payload, cls.model_fields))


class FinaliseRequest(_Request):
    rules = staticmethod(validate_restore)  # the reason alone
    reason: StrictStr = Field(description="Why (recorded on the migration).", json_schema_extra=_REASON_SCHEMA)


class Migration(BaseModel):
    """A migration's record as GET /flags/migration answers it."""

    item: str = Field(description="This service's flags item (the one its functions are configured for).")
    source: str = Field(description="The earlier item (FLAGS#V1).")
    target: str = Field(description="The later item (FLAGS#V2).")
    state: Literal["expanding", "finalised", "rolled_back"] = Field(
        description="expanding: writes land in the later item and are mirrored into the earlier one; finalised: "
        "the earlier item is superseded; rolled_back: the later item is superseded, the earlier one live again."
    )
    migrated_at: int = Field(description="The later item's first version (L+1).")
    at: str = Field(description="When it was migrated (RFC 3339, UTC).")
    actor: str
    reason: str
    mapping: dict[str, Any] = Field(description="The mapping, as it was sent.")
    ended_at: str | None = Field(None, description="When it was finalised or rolled back.")
    ended_by: str | None = None
    end_reason: str | None = None


class MigrationAnswer(BaseModel):
    migration: Migration


class V1Fallback(BaseModel):
    flag: str = Field(description="A flag of the earlier shape.")
    fallback: Any = Field(description="Its declared fallback, what a reader of the earlier item serves.")
    why: str


class MigrationResult(BaseModel):
    migration: Migration
    version: int = Field(description="The later item's first version (L+1).")
    item: str = Field(description="The later item.")
    flags: dict[str, Any] = Field(description="The later item's values, in the new shape.")
    v1_reader_fallbacks: list[V1Fallback] = Field(
        description="The flags a reader still configured for the earlier item serves as their fallbacks (removed, "
        "or a value its declaration cannot express), with why."
    )
    attempts: int = Field(description="Transactions sent (a write landing first makes it re-read and retry).")


def build_models(declarations: Declarations, guard_prefix: str = "") -> dict[str, type[BaseModel]]:
    changes = flag_values_model(declarations, "FlagChanges", partial=True)
    values = flag_values_model(declarations, "FlagValues", partial=False)

    class PatchRequest(_Request):
        rules = staticmethod(lambda body: validate_patch(body, declarations, guard_prefix))
        flags: changes = Field(description="Flags to change, by name; at least one.")  # type: ignore[valid-type]
        reason: StrictStr = Field(description="Why (audited).", json_schema_extra=_REASON_SCHEMA)
        guard: GuardRequest | None = _GUARD_FIELD

    class RevertRequest(_Request):
        rules = staticmethod(lambda body: validate_revert(body, guard_prefix))
        version: StrictInt = Field(
            ge=0, description="Version whose values to restore, as a new version (0: the seeded state)."
        )
        reason: StrictStr = Field(description="Why (audited).", json_schema_extra=_REASON_SCHEMA)
        guard: GuardRequest | None = _GUARD_FIELD

    class RestoreRequest(_Request):
        rules = staticmethod(validate_restore)
        reason: StrictStr = Field(description="Why (audited).", json_schema_extra=_REASON_SCHEMA)

    class FlagsState(BaseModel):
        flags: values  # type: ignore[valid-type]
        version: int | None
        reason: Literal[READ_REASONS]  # type: ignore[valid-type]  # the reasons' one definition, as a Literal
        fetched_at: str | None
        applied: bool = Field(
            description="True when this request wrote a version (its change, or the restore of a missing item); "
            "false when the values already held and nothing was written."
        )
        changed: dict[str, dict[str, Any]] = Field(description="Flag -> {old, new} of what this write changed.")
        restored: bool | None = Field(
            None, description="True when the flags item was missing and this write restored it first."
        )
        fallen_back: list[str] | None = Field(
            None,
            description="Flags served as their declared fallback (reason DEFAULT each) although the item was read: "
            "absent from it, unusable, or removed by a migration.",
        )
        guard: GuardState | None = Field(None, description="The guard this write created (a guarded change).")

    class AuditRecord(BaseModel):
        version: int
        kind: str
        actor: str
        reason: str
        at: str
        changes: dict[str, dict[str, Any]]
        reverted_to: int | None = None
        window: str | None = None
        restored_from: int | None = Field(None, description="A restore: the version whose state it re-applied.")
        schedule: str | None = Field(None, description="A scheduled change: the id of the schedule that applied it.")
        requested_by: str | None = Field(None, description="A scheduled change: who created the schedule.")
        state: dict[str, Any] = Field(
            description="The full state after this version: every flag, plus maintenance owner and deadline."
        )
        maintenance_owner: dict[str, str | None] | None = Field(
            None, description="Who held maintenance before and after ({old, new} window names; null = manual)."
        )
        guard: dict[str, Any] | None = Field(
            None,
            description="A guarded change: its alarms, bake_minutes and bake_ends_at. A guard-revert: the guarded "
            "version and the alarm that fired.",
        )
        change_request: str | None = Field(
            None, description="change_request_applied or break_glass: the id of the change request it applied."
        )
        approved_by: list[dict[str, str]] | None = Field(
            None, description="change_request_applied: who approved, and when ({principal, at, reason?})."
        )

    class ScheduleRequest(_Request):
        rules = staticmethod(lambda body: validate_schedule(body, declarations))
        flags: changes = Field(description="Flags to change when it is due, by name (as PATCH /flags).")  # type: ignore[valid-type]
        reason: StrictStr = Field(
            description="Why (audited with the version it writes).", json_schema_extra=_REASON_SCHEMA
        )
        at: StrictStr = Field(
            description="When: RFC 3339 with an offset (2027-03-01T09:00:00+01:00), or a local time "
            "(2027-03-01T09:00:00) with 'timezone'. Whole minutes, 2 minutes to 366 days ahead."
        )
        timezone: StrictStr | None = Field(None, description="IANA time zone of a local 'at' (Europe/Paris).")
        if_version: StrictInt | None = Field(
            None,
            ge=0,
            le=MAX_VERSION,
            description="Apply only if the flags are still at this version when it is due (else skipped).",
        )

    class Schedule(BaseModel):
        id: str
        status: Literal[STATUSES]  # type: ignore[valid-type]
        flags: dict[str, Any]
        reason: str
        at: str = Field(description="The instant it applies, UTC.")
        local_time: str = Field(description="As asked for, in 'timezone'.")
        timezone: str
        if_version: int | None
        created_by: str
        created_at: str
        cancelled_by: str | None = None
        cancelled_at: str | None = None
        finished_at: str | None = Field(None, description="When it was applied, skipped or failed.")
        version: int | None = Field(None, description="The version it wrote (applied).")
        detail: str | None = Field(None, description="Why it was skipped or failed, or applied without a version.")
        change_request: str | None = Field(
            None, description="The approved change request that scheduled it (it may change protected flags)."
        )
        approved_by: list[dict[str, Any]] | None = Field(None, description="That request's approvals.")
        base_values: dict[str, Any] | None = Field(
            None, description="The values that request is bound to: it is skipped when one no longer holds."
        )

    class Schedules(BaseModel):
        schedules: list[Schedule]
        next_cursor: str | None = Field(description="Pass as ?cursor= for the next (older) page; null at the end.")

    class Cancellation(BaseModel):
        schedule: Schedule
        schedule_deleted: bool = Field(description="False when its Scheduler schedule was already gone.")

    class ChangeRequestCreate(_Request):
        rules = staticmethod(lambda body: validate_change_request(body, declarations))
        flags: changes | None = Field(  # type: ignore[valid-type]
            None, description="The exact change, by flag (as PATCH /flags); or give revert_to."
        )
        revert_to: StrictInt | None = Field(
            None, ge=0, le=MAX_VERSION, description="A version whose values to write again; or give flags."
        )
        reason: StrictStr = Field(
            description="Why (audited; bound into the request).", json_schema_extra=_REASON_SCHEMA
        )
        if_version: StrictInt | None = Field(
            None, ge=0, le=MAX_VERSION, description="Create only if the flags are at this version (else 412)."
        )
        break_glass: StrictBool = Field(
            False,
            description="Apply at once, alone: only for a principal every touched protected flag lists in its "
            "break_glass patterns (kind break_glass, alarmed).",
        )
        at: StrictStr | None = Field(
            None,
            description="Apply at this time instead of at the last approval, which then creates the scheduled "
            "change (state scheduled): as POST /flags/schedules' 'at' (RFC 3339 with an offset, or a local time with "
            "'timezone'; whole minutes, 2 minutes to 366 days ahead). Bound into the request; not with break_glass.",
        )
        timezone: StrictStr | None = Field(None, description="IANA time zone of a local 'at' (Europe/Paris).")

    class ChangeRequestDecision(_Request):
        rules = staticmethod(lambda body: validate_decision(body, reason_required=False))
        reason: StrictStr | None = Field(None, description="Why (optional).", json_schema_extra=_REASON_SCHEMA)

    class ChangeRequestRejection(_Request):
        rules = staticmethod(lambda body: validate_decision(body, reason_required=True))
        reason: StrictStr = Field(description="Why it is rejected.", json_schema_extra=_REASON_SCHEMA)

    class RequestApproval(BaseModel):
        principal: str = Field(description="The approver, normalised (an assumed role's session counts as its role).")
        at: str
        reason: str | None = None

    class RequestDecided(BaseModel):
        by: str
        at: str
        reason: str

    class ChangeRequest(BaseModel):
        id: str = Field(description="The hash of the bound content: a different change is a different request.")
        state: Literal[REQUEST_STATES]  # type: ignore[valid-type]
        kind: Literal[REQUEST_KINDS]  # type: ignore[valid-type]
        flags: dict[str, Any] = Field(description="The exact change (a revert: the values it writes again).")
        revert_to: int | None
        base_version: int
        base_values: dict[str, Any] = Field(
            description="The touched and every protected flag at base_version: the change applies only while they "
            "still hold these values."
        )
        protected_flags: list[str]
        required_approvals: int
        approvals: list[RequestApproval]
        author: str
        reason: str
        created_at: str
        expires_at: str
        decided: RequestDecided | None
        applied_version: int | None
        at: str | None = Field(None, description="When a request with a time applies (UTC); null: at its approval.")
        timezone: str | None = Field(None, description="The zone its 'at' was asked in.")
        schedule: str | None = Field(
            None, description="The scheduled change its last approval created (state scheduled): GET /flags/schedules."
        )

    class ChangeRequestAnswer(BaseModel):
        change_request: ChangeRequest

    class ApprovalAnswer(BaseModel):
        change_request: ChangeRequest
        applied: bool = Field(description="This approval was the last one needed: the change is applied.")
        version: int | None = Field(description="The version it wrote (applied).")

    class ChangeRequestList(BaseModel):
        change_requests: list[ChangeRequest]
        next_cursor: str | None = Field(description="Pass as ?cursor= for the next (older) page; null at the end.")

    class History(BaseModel):
        records: list[AuditRecord]
        next_cursor: str | None = Field(description="Pass as ?cursor= for the next (older) page; null at the end.")

    class Guards(BaseModel):
        guards: list[GuardState]
        next_cursor: str | None = Field(description="Pass as ?cursor= for the next (older) page; null at the end.")

    class Declaration(BaseModel):
        name: str
        type: Literal["bool", "int", "float", "string"]
        initial: StrictBool | StrictInt | StrictFloat | StrictStr
        fallback: StrictBool | StrictInt | StrictFloat | StrictStr = Field(
            description="Served when the flags cannot be read (fail closed)."
        )
        description: str
        min: StrictInt | StrictFloat | None = Field(None, description="Numbers only; absent when unbounded.")
        max: StrictInt | StrictFloat | None = Field(None, description="Numbers only; absent when unbounded.")
        enum: list[StrictInt | StrictFloat | StrictStr] | None = Field(None, description="The allowed values, if any.")
        max_length: int | None = Field(None, description="Strings only; absent for the default limit.")
        state: Literal["active", "deprecated", "removed"] = Field(description="The flag's lifecycle state.")
        permanent: bool = Field(description="Never a stale candidate (declared, or an operational control).")
        owner: str | None = Field(None, description="Who answers for the flag; absent when not declared.")
        deprecated_on: str | None = Field(None, description="YYYY-MM-DD; deprecated (or removed) flags only.")
        note: str | None = Field(None, description="Why, and what replaces it; absent when not declared.")

    class DeclarationList(BaseModel):
        declarations: list[Declaration] = Field(description="In declaration order; only the constraints a flag has.")

    class WindowSchedule(BaseModel):
        name: str
        start: str = Field(description="EventBridge Scheduler cron expression of the start.")
        end: str = Field(description="EventBridge Scheduler cron expression of the end.")
        timezone: str = Field(description="IANA time zone the crons are evaluated in.")
        next_start: str | None = Field(description="RFC 3339 with the zone's offset on that date; null: never again.")
        next_end: str | None = Field(description="The next end after now (inside a window: before next_start).")
        next_start_utc: str | None = Field(description="next_start in UTC (RFC 3339, Z).")
        next_end_utc: str | None = Field(description="next_end in UTC (RFC 3339, Z).")

    class WindowList(BaseModel):
        windows: list[WindowSchedule] = Field(description="In cdk.json's order.")

    return {
        "Guards": Guards,
        "DeclarationList": DeclarationList,
        "WindowList": WindowList,
        "PatchRequest": PatchRequest,
        "RevertRequest": RevertRequest,
        "RestoreRequest": RestoreRequest,
        "FlagsState": FlagsState,
        "History": History,
        "ScheduleRequest": ScheduleRequest,
        "Schedule": Schedule,
        "Schedules": Schedules,
        "Cancellation": Cancellation,
        "ChangeRequestCreate": ChangeRequestCreate,
        "ChangeRequestDecision": ChangeRequestDecision,
        "ChangeRequestRejection": ChangeRequestRejection,
        "ChangeRequestAnswer": ChangeRequestAnswer,
        "ApprovalAnswer": ApprovalAnswer,
        "ChangeRequestList": ChangeRequestList,
        "MigrationRequest": MigrationRequest,
        "FinaliseRequest": FinaliseRequest,
        "MigrationAnswer": MigrationAnswer,
        "MigrationResult": MigrationResult,
    }


if TYPE_CHECKING:  # the write function's request models as the type checker sees them (built by build_models)

    class PatchRequest(BaseModel):
        flags: BaseModel
        reason: str
        guard: Any  # GuardRequest | None

    class RevertRequest(BaseModel):
        version: int
        reason: str
        guard: Any  # GuardRequest | None

    class RestoreRequest(BaseModel):
        reason: str
