"""The write API's migration routes: GET and POST /flags/migration, POST /flags/migration/finalise (the flags item
migrated to a new shape, ``FLAGS#V1`` -> ``FLAGS#V2``: ``singleton_flags_service.writes.seam``).

A Powertools ``Router`` the write function includes (its validation, exception handler and OpenAPI document cover
these routes as they cover the others). The migration is found from this service's own flags item: as the earlier
item (its ``migrated_to`` names the later one, whose key names the record) or as the later one (the record is keyed
by it). No ``from __future__ import annotations`` here: Powertools reads the routes' parameter annotations at run
time.
"""

import json
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel

from singleton_flags.codec import decode
from singleton_flags.declarations import Declarations
from singleton_flags.keys import MIGRATED_TO_ATTR, audit_key, migration_key, singleton_key
from singleton_flags_service import work
from singleton_flags_service.api.http import json_response
from singleton_flags_service.api.requests import migration_inputs
from singleton_flags_service.api.routes import (
    FINALISE_MIGRATION,
    GET_MIGRATION,
    MIGRATE_FLAGS,
    ROLL_BACK_MIGRATION,
    Views,
)
from singleton_flags_service.contract import WRITE_FUNCTION, Settings
from singleton_flags_service.errors import MigrationNotFound, StoreFault, StoreUnavailable
from singleton_flags_service.guards.items import GuardBook
from singleton_flags_service.migration_checks import pending_work
from singleton_flags_service.observability import logger
from singleton_flags_service.schedules.changes import ScheduleItems
from singleton_flags_service.writes import transaction
from singleton_flags_service.writes.audit import STATE_ATTR, newest_record
from singleton_flags_service.writes.seam import Seam
from singleton_flags_service.writes.store import FlagStore

NO_STORE = {"Cache-Control": "no-store"}
_TEXTS = ("at", "actor", "reason", "ended_at", "ended_by", "end_reason")


def find_migration(client: Any, table: str, configured: str) -> dict[str, Any] | None:
    """The record of the migration ``configured`` (this service's flags item) takes part in, expanding or
    finalised: the one its pointer names (the newest audit record's item when ``configured`` is missing: the item
    its versions were written to), else the one into it; None when there is none."""
    item = _get(client, table, singleton_key(configured))
    if item is None:
        written = (newest_record(client, table) or {}).get("item", {}).get("S")
        target = written if isinstance(written, str) and written != configured else None
    else:
        pointer = item.get(MIGRATED_TO_ATTR)
        target = pointer.get("S") if isinstance(pointer, dict) else None
    for key in ([migration_key(target)] if isinstance(target, str) else []) + [migration_key(configured)]:
        record = _get(client, table, key)
        if record is not None:
            return record
    return None


def migration_view(record: Mapping[str, Any], configured: str) -> dict[str, Any]:
    """A migration's record as the API answers it (its declarations left out: the mapping says what moved)."""
    try:
        view: dict[str, Any] = {
            "item": configured,
            "source": record["source"]["S"],
            "target": record["target"]["S"],
            "state": record["state"]["S"],
            "migrated_at": int(record["migrated_at"]["N"]),
            "mapping": json.loads(record["mapping"]["S"]),
        }
        view.update({name: record[name]["S"] if name in record else None for name in _TEXTS})
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreFault(f"the record of the migration into {configured} cannot be read: {exc!r}") from exc
    return view


def v1_reader_fallbacks(seam: Seam, target_state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The earlier shape's flags a reader still configured for it serves as their fallbacks, given the later item's
    stored state, each with why (removed, or a value the earlier declaration cannot express)."""
    _, causes = seam.mapping.backward_item(seam.source_declarations, target_state)
    return [
        {"flag": name, "fallback": spec.fallback, "why": causes[name]}
        for name, spec in seam.source_declarations.items()
        if name in causes
    ]


def migration_routes(
    function: Mapping[str, Any],
    settings: Settings,
    actor: Callable[[], str],
    time_budget: Callable[[], float],
    models: Mapping[str, type[BaseModel]],
) -> Router:
    """``function`` is the write function's namespace (its module's ``globals()``), whose ``STORE`` is read at each
    request (tests replace it; a getter would cost the module a code object more to compile, and it compiles before
    its collector pause: ``handlers/write_api.py``); ``settings`` name the flags item the function is deployed for
    and the scheduled changes' retention (their items are read for the work a migration must wait for:
    ``migration_checks.pending_work``); ``actor`` the caller; ``time_budget`` the seconds a write may take."""
    configured, retention_seconds = settings.item_sort_key, settings.audit_retention_days * 86400
    router = Router()  # type: ignore[no-untyped-call]  # Powertools' Router.__init__ is unannotated
    views = Views(router, WRITE_FUNCTION)
    migration_model, finalise_model = models["MigrationRequest"], models["FinaliseRequest"]

    def record_of(flags: FlagStore) -> dict[str, Any]:
        record = find_migration(flags.client, flags.table_name, configured)
        if record is None:
            raise MigrationNotFound(
                f"the flags item {configured} takes part in no migration (none expanding, none finalised)",
                item=configured,
            )
        return record

    def pending(flags: FlagStore) -> Callable[[], list[dict[str, Any]]]:
        client, table = flags.client, flags.table_name
        items = ScheduleItems(client, table, retention_seconds=retention_seconds)
        return lambda: pending_work(items, GuardBook(client, table))

    def holds(flags: FlagStore) -> Callable[[], list[dict[str, Any]]]:
        """No pending work created between the migration's look for it and its commit (``work``)."""
        client, table = flags.client, flags.table_name
        return lambda: [work.none_created_since(table, work.created_so_far(client, table))]

    # No return annotations on purpose (as the write function's routes: the bodies are json_response's).
    @views(GET_MIGRATION, answer=models["MigrationAnswer"], described="The migration")
    def get_migration():  # type: ignore[no-untyped-def]
        record = record_of(store(function))
        return json_response(HTTPStatus.OK, {"migration": migration_view(record, configured)}, NO_STORE)

    @views(MIGRATE_FLAGS, answer=models["MigrationResult"], described="Migrated: the later item at L+1")
    def migrate_flags(body: Annotated[migration_model, Body()]):  # type: ignore[no-untyped-def,valid-type]
        request: Any = body
        new, mapping = migration_inputs({"declarations": request.declarations, "mapping": request.mapping})
        flags, caller = store(function), actor()
        result = flags.migrate(
            new,
            mapping,
            actor=caller,
            reason=request.reason,
            time_budget=time_budget(),
            pending=pending(flags),
            holds=holds(flags),
        )
        try:  # what was written, read back: the later item's first state (its audit record) and the record
            written = _get(flags.client, flags.table_name, audit_key(result.version)) or {}
            state = written.get(STATE_ATTR, {}).get("M", {})
            record = record_of(flags)
        except StoreUnavailable as exc:
            raise StoreUnavailable(
                f"the migration committed (version {result.version} of {mapping.target}), but reading it back "
                f"failed: {exc.message}; GET /flags/migration shows it"
            ) from exc
        answer = {
            "migration": migration_view(record, configured),
            "version": result.version,
            "item": result.seam.target,
            "flags": _values(new, state),
            "v1_reader_fallbacks": v1_reader_fallbacks(result.seam, state),
            "attempts": result.attempts,
        }
        return json_response(HTTPStatus.CREATED, answer, NO_STORE)

    def ended(flags: FlagStore, seam: Seam) -> Any:
        record = _get(flags.client, flags.table_name, migration_key(seam.target))
        if record is None:
            raise StoreFault(f"the migration {seam.source} -> {seam.target} ended, but its record is gone")
        return json_response(HTTPStatus.OK, {"migration": migration_view(record, configured)}, NO_STORE)

    @views(FINALISE_MIGRATION, answer=models["MigrationAnswer"], described="Finalised")
    def finalise_migration(body: Annotated[finalise_model, Body()]):  # type: ignore[no-untyped-def,valid-type]
        flags = store(function)
        return ended(flags, flags.finalise_migration(actor=actor(), reason=body.reason, time_budget=time_budget()))  # type: ignore[attr-defined]

    @views(ROLL_BACK_MIGRATION, answer=models["MigrationAnswer"], described="Rolled back")
    def roll_back_migration(body: Annotated[finalise_model, Body()]):  # type: ignore[no-untyped-def,valid-type]
        flags = store(function)
        return ended(flags, flags.roll_back_migration(actor=actor(), reason=body.reason, time_budget=time_budget()))  # type: ignore[attr-defined]

    return router


def store(function: Mapping[str, Any]) -> FlagStore:
    """The write function's store, as its namespace holds it now."""
    found: FlagStore = function["STORE"]
    return found


def _get(client: Any, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
    found: dict[str, Any] | None = transaction.call(
        client, "get_item", TableName=table, Key=key, ConsistentRead=True
    ).get("Item")
    return found


def _values(declarations: Declarations, state: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, spec in declarations.items():
        if name in state:
            try:
                values[name] = decode(spec, state[name])
            except ValueError as exc:  # written by this migration, in this shape: never unreadable
                logger.error("a migrated value does not decode", flag=name, error=str(exc))
                raise StoreFault(f"the migrated value of '{name}' does not decode: {exc}") from exc
    return values
