"""The write path: version-conditioned changes of the singleton, committed with their audit record.

A change is ONE ``TransactWriteItems``:
  (a) ``Update`` of the singleton that SETs only the changed flags, ``schema_version = :next``,
      ``updated_at``, ``updated_by``, conditioned on ``schema_version = :current``;
  (b) ``Put`` of the audit record ``AUDIT#APP / AUDIT#<zero-padded next>`` (singleton_flags_service.writes.audit),
  conditioned on
      ``attribute_not_exists``;
  (c) with an ``Idempotency-Key``, ``Put`` of the key's item (request fingerprint, the answer, 24 h TTL),
      conditioned on the key not being remembered yet;
  (d) the caller's companions: items that belong to the new version (a guarded change's ``GUARD#`` item, or a
      guard's own state change when it reverts), each with its own condition.
All commit or none does. A cancelled transaction is a conflict, and an unconditional write waits its turn:
jittered exponential back-off, then a new attempt, for as long as the request's time budget allows, then
``WriteConflict`` (409, naming the attempts and the seconds spent). The time budget is the caller's deadline (in a
function: the invocation's remaining time less a margin to answer); an attempt starts only while its worst case (a
read and a transaction, each bounded by the client's timeouts and retries) still ends within it, and a back-off
never sleeps past the last moment an attempt may start. No attempt count decides: ``MAX_ATTEMPTS`` is a safety net
far above what any budget allows, for a caller that gives none. With an expected version (HTTP If-Match) there is
one attempt and a stale version is ``PreconditionFailed``.

Every attempt starts over from a consistent read and re-takes every decision on that fresh state, in this order:
the superseded marker, If-Match, the plan (``condition``, a window's ownership, a revert's target against the
current maintenance), the diff, then the write's ``attempt_checks`` (the hook for checks that may refuse a write on
what it would change now: each gets the fresh snapshot and the diff, and raises a refusal to stop the write with
nothing written). ``before_write`` runs once, before the first attempt, for checks whose subject is not the flags
item (a guard's alarms: a conflict says only that the item moved). Each attempt's transaction has its own
``ClientRequestToken``.

A key remembers every answer it gave: a write that changes nothing (a no-op) writes no version, but with an
``Idempotency-Key`` it still commits the key's item, in a transaction with a ``ConditionCheck`` that the flags
are still at the version the no-op was decided on. Whoever loses a race for a key (its transaction cancelled,
or its no-op decided after the winner committed) reads the winner's answer instead of deciding again.

Exactly once under ambiguity: each attempt's request is built once, with its own ``ClientRequestToken``.
When DynamoDB's answer is lost (a timeout, a 5xx), the byte-identical request is sent again with the same
token while the time budget allows (DynamoDB answers a repeated token with success and applies nothing
twice); then the audit record of the version it tried to write says whether it committed (the record
stores the token). What still cannot be known is ``OutcomeUnknown``, never a plain outage.

A superseded item (``keys.SUPERSEDED_BY_ATTR``: its table was replaced) refuses every operator write
(``FlagsSuperseded``, naming the successor), a scheduled change's included; its stack's seed writes nothing and
says where the flags live (refusing it would fail the deploy and CloudFormation's rollback of it); the automatic safety
writes (a window's start or end, a guard's revert, a restore) are never blocked and go on as on any item, with a
warning: readers of a superseded item serve the declared fallbacks whatever it holds, so what they write is seen
by no reader, and refusing them would only turn a window's end or a guard's revert into retries and alarms. Every
operator write is conditioned on the marker's absence, so a marker set between the read and the commit is a
conflict (re-read, then refused), never a write past it.

One version names one state. A missing singleton is restored only by an accepted write, in the same
transaction: the restore is version L+1 (kind ``restore``, the newest audit record's state) and the change
L+2. With no audit record at all, the item is recreated as version 0 with the declared initial values
(what version 0 always names). Reads and refused requests never restore.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from singleton_flags.aws import WRITE_CLIENT_CONFIG, worst_call_seconds
from singleton_flags.codec import decode, decode_plain, encode, iso_time
from singleton_flags.declarations import Declarations, FlagValue
from singleton_flags.errors import FlagsError
from singleton_flags.keys import (
    BOOKKEEPING_ATTRS,
    MAINTENANCE_DEADLINE_ATTR,
    MAINTENANCE_FLAG,
    MAINTENANCE_OWNER_ATTR,
    MIGRATED_FROM_ATTR,
    MIGRATED_TO_ATTR,
    MIGRATION_MAPPING_ATTR,
    PARTITION_KEY,
    SINGLETON_SK,
    SUPERSEDED_AT_ATTR,
    SUPERSEDED_BY_ATTR,
    SUPERSEDED_REASON_ATTR,
    UPDATED_AT_ATTR,
    UPDATED_BY_ATTR,
    VERSION_ATTR,
    audit_key,
    migration_key,
    singleton_key,
)
from singleton_flags.migration import ITEM_KEY, Mapping as MigrationMapping, MappingError, NotConvertible
from singleton_flags.snapshot import Snapshot
from singleton_flags_service.contract import Settings
from singleton_flags_service.errors import (
    FlagsMigrated,
    FlagsSuperseded,
    InvalidRequest,
    InvalidValue,
    ItemTooLarge,
    MigrationRefused,
    OutcomeUnknown,
    PreconditionFailed,
    StoreFault,
    StoreUnavailable,
    VersionNotFound,
    WriteConflict,
)
from singleton_flags_service.observability import logger, publish_committed
from singleton_flags_service.vocabulary import (
    KIND_CHANGE,
    KIND_MIGRATION,
    KIND_RESTORE,
    KIND_REVERT,
    KIND_SEED,
    SAFETY_KINDS,
)
from singleton_flags_service.writes import transaction
from singleton_flags_service.writes.audit import (
    BOOKKEEPING_IN_STATE,
    STATE_ATTR,
    TOKEN_ATTR,
    audit_item,
    audit_query,
    audit_record,
    decode_cursor,
    encode_cursor,
    newest_record,
    record_version,
    validate_version,
)
from singleton_flags_service.writes.idempotency import Idempotency
from singleton_flags_service.writes.itemsize import READ_BLOCK_BYTES, item_size
from singleton_flags_service.writes.seam import (
    EXPANDING,
    FINALISED,
    ROLLED_BACK,
    Seam,
    conditioned_update,
    seam_record,
    set_remove,
)

__all__ = [
    "MAX_ATTEMPTS",
    "AttemptCheck",
    "ChangeResult",
    "Companions",
    "FlagStore",
    "MigrationResult",
    "Ownership",
    "Plan",
    "Write",
    "WritePolicy",
]

# (version about to be written, its time) -> more TransactWriteItems entries committed with it
Companions = Callable[[int, float], list[dict[str, Any]]]
# (the state this attempt read, what it would change there: flag -> {"old", "new"}) -> None, or raise a refusal
# (a FlagsError): run on every attempt that would write, after the plan and before the transaction. A check that
# calls AWS spends the request's time: the transaction is still never sent when its worst case no longer fits.
AttemptCheck = Callable[[Snapshot, Mapping[str, Mapping[str, Any]]], None]
# A feature's rule for every write of a store: (the write's kind, the state this attempt read, what it would change)
# -> None, or raise a refusal; taken on every attempt that plans a change, before the no-op test.
WritePolicy = Callable[[str, Snapshot, Mapping[str, Mapping[str, Any]]], None]

# A safety net, not a rule: with a time budget the retries stop when it is spent, long before this many attempts
# (each is a consistent read and a transaction, and the back-off between them grows to ``backoff_max``); it bounds
# a write whose caller gave no budget (tests, scripts), and a clock that does not advance.
MAX_ATTEMPTS = 1000
_STEP = {FINALISED: "finalise", ROLLED_BACK: "roll back"}
ATTEMPT_CALLS = 2  # the calls one attempt makes: the consistent read and the transaction

MAX_HISTORY_LIMIT = 100
DEFAULT_HISTORY_LIMIT = 20
RESERVED_DEADLINE = {"N": "9999999999"}  # the widest maintenance_deadline a window start can store
_MARKER_ATTRS = (SUPERSEDED_BY_ATTR, SUPERSEDED_AT_ATTR, SUPERSEDED_REASON_ATTR)


@dataclass(frozen=True, slots=True)
class Ownership:
    """Who holds maintenance after a change: a window (with its deadline), or nobody (manual)."""

    owner: str | None
    deadline: float | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """What one attempt writes: flag values, and who holds maintenance afterwards (None: left as it is)."""

    changes: Mapping[str, Any]
    ownership: Ownership | None = None


@dataclass(frozen=True, slots=True)
class Write:
    """One write as the store carries it from its entry point (``change``, ``revert``, ``seed``, ``restore``) to its
    transaction and audit record: who and why, its kind, and the conditions and companions it was asked with."""

    actor: str
    reason: str
    kind: str
    expected: frozenset[int] | None = None  # If-Match: the versions it must find (then one attempt only)
    extra_audit: Mapping[str, Any] = field(default_factory=dict)  # more fields of its audit record
    idempotency: Idempotency | None = None
    time_budget: float | None = None  # seconds from now by which it must have answered (None: no deadline)
    companions: Companions | None = None  # more items of its transaction, for the version it writes
    before_write: Callable[[], None] | None = None  # a check that may refuse it, run once before the first attempt
    attempt_checks: tuple[AttemptCheck, ...] = ()  # checks that may refuse it, run on every attempt's fresh state
    seed_only_missing: bool = False  # the seed: add what the item lacks, never rewrite a value it holds

    @staticmethod
    def expecting(version: int | frozenset[int] | None) -> frozenset[int] | None:
        return frozenset({version}) if isinstance(version, int) else version


@dataclass(frozen=True, slots=True)
class _Delta:
    """What one attempt changes on the item: flag values (old -> new) and maintenance's holder."""

    diff: dict[str, dict[str, Any]]
    owner_sets: dict[str, Any]
    owner_removes: list[str]

    @property
    def applied(self) -> bool:
        return bool(self.diff or self.owner_sets or self.owner_removes)


@dataclass(frozen=True, slots=True)
class ChangeResult:
    snapshot: Snapshot
    applied: bool
    attempts: int
    values: Mapping[str, FlagValue]  # what readers are served now (a passed window deadline honoured)
    changed: Mapping[str, dict[str, Any]] = field(default_factory=dict)  # flag -> {"old", "new"}
    restored: bool = False  # a missing item was restored by this write
    replayed: bool = False  # the answer of an earlier request with the same Idempotency-Key

    @property
    def wrote(self) -> bool:
        """This request wrote a version: its change, or the restore of a missing item (or both)."""
        return self.applied or self.restored


@dataclass(frozen=True, slots=True)
class MigrationResult:
    seam: Seam
    version: int  # the later item's first version (L+1)
    attempts: int


@dataclass(frozen=True, slots=True)
class _Current:
    raw: dict[str, Any]
    snapshot: Snapshot
    missing: bool = False  # the item does not exist: ``raw`` is what a restore would write
    restored_from: int | None = None  # the audit version a restore takes its state from
    # A migration that expands through the item (writes land in the later item, mirrored into the earlier one):
    # the earlier item as read, and for a writer configured for it, the later item as read (``raw`` is then the
    # later item's state in the earlier shape: what this writer decides on).
    seam: Seam | None = None
    source_item: dict[str, Any] | None = None
    target_raw: dict[str, Any] | None = None

    @property
    def superseded_by(self) -> str | None:
        return self.raw.get(SUPERSEDED_BY_ATTR, {}).get("S") if not self.missing else None

    @property
    def version(self) -> int:
        return self.snapshot.version or 0

    @property
    def mirror_missing(self) -> bool:
        """A migration expands and its earlier item (the mirror of the later one) is missing."""
        return self.seam is not None and self.seam.mirrored and self.source_item is None


class FlagStore:
    def __init__(
        self,
        client: Any,
        table_name: str,
        declarations: Declarations,
        *,
        sort_key: str = SINGLETON_SK,
        audit_retention_days: int = 365,
        max_attempts: int = MAX_ATTEMPTS,
        backoff_base: float = 0.025,
        backoff_max: float = 0.4,
        reserve_owner: str = "",
        call_seconds: float = 6.0,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        token: Callable[[], str] = lambda: str(uuid.uuid4()),
        on_retry: Callable[[int], None] | None = None,
        on_commit: Callable[[int], None] | None = None,
        policies: Sequence[WritePolicy] = (),
    ) -> None:
        """``reserve_owner`` is the longest configured window name: every write keeps room in the item for a
        window start's bookkeeping. ``call_seconds`` is the longest one DynamoDB call can take with the
        client's timeouts and retries: no call starts that could outlive a request's deadline. ``max_attempts`` is
        the safety net (``MAX_ATTEMPTS``), not the rule: the time budget decides when an unconditional write
        stops retrying. ``on_commit`` is told the item's version each time a transaction of this store wrote one
        (a change, a revert, a restore, the seed; never a no-op or an Idempotency-Key replay). ``policies`` are the
        features' rules that every write of this store obeys (``WritePolicy``)."""
        self._client = client
        self._table = table_name
        self._declarations = declarations
        self._sort_key = sort_key
        self._retention_seconds = audit_retention_days * 86400
        self._max_attempts = max_attempts
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        self._reserve_owner = reserve_owner
        self._call_seconds = call_seconds
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._jitter = jitter
        self._token = token
        self._on_retry = on_retry or (lambda attempt: None)
        self._on_commit = on_commit or (lambda version: None)
        self._policies = tuple(policies)

    @classmethod
    def for_function(
        cls,
        client: Any,
        settings: Settings,
        declarations: Declarations,
        *,
        reserve_owner: str = "",
        on_retry: Callable[[int], None] | None = None,
        on_commit: Callable[[int], None] | None = publish_committed,
        policies: Sequence[WritePolicy] = (),
    ) -> FlagStore:
        """The store a writing function builds at cold start: its table, sort key and retention from its settings,
        every call bounded by the write client's worst case (``client`` must use ``WRITE_CLIENT_CONFIG``); each
        version it commits is published (``CommittedVersion``)."""
        return cls(
            client,
            settings.table_name,
            declarations,
            sort_key=settings.item_sort_key,
            audit_retention_days=settings.audit_retention_days,
            reserve_owner=reserve_owner,
            call_seconds=worst_call_seconds(WRITE_CLIENT_CONFIG),
            on_retry=on_retry,
            on_commit=on_commit,
            policies=policies,
        )

    @property
    def declarations(self) -> Declarations:
        return self._declarations

    # -- reads -------------------------------------------------------------------------------------

    def current(self) -> Snapshot:
        """Consistent read of the singleton (fallbacks when it is missing: reads never restore)."""
        item = self._get(singleton_key(self._sort_key))
        return Snapshot.from_item(item, self._declarations, fetched_at=self._clock())

    def _read_current(self, *, seeding: bool = False) -> _Current:
        """Consistent read of the singleton; when it is missing, the state an accepted write restores.

        ``seeding``: the deploy-time seed, for which a table with neither item nor record is a new table (its
        first version, said at INFO), not a lost item (a WARNING otherwise)."""
        item = self._get(singleton_key(self._sort_key))
        if item is not None:  # decided on what it stores: a superseded item's marker hides its values from readers
            seam = self._seam_of(item)
            if seam is not None:
                return self._seam_current(seam, item)
            stored = {name: value for name, value in item.items() if name not in _MARKER_ATTRS}
            return _Current(raw=item, snapshot=self._snapshot(stored))
        newest = self._newest_record()
        if newest is None:
            raw = {**singleton_key(self._sort_key), VERSION_ATTR: {"N": "0"}}
            raw.update({spec.name: encode(spec, spec.initial) for spec in self._declarations.values()})
            if seeding:
                logger.info("a new table: the declared initial values are its first version (0)")
            else:
                logger.warning("the flags item is missing and no audit record remains: the initial values restore it")
            return _Current(raw=raw, snapshot=self._snapshot(raw), missing=True)
        last = record_version(newest)
        state = newest.get(STATE_ATTR, {}).get("M", {})
        written = newest.get("item", {}).get("S", SINGLETON_SK)
        if written != self._sort_key:  # never restored from another item's state
            return self._missing_in_seam(written, last, state)
        raw = {**singleton_key(self._sort_key), **state}
        raw[VERSION_ATTR] = {"N": str(last + 1)}
        seam, source_item = None, None
        migration = self._get(migration_key(self._sort_key)) if self._sort_key != SINGLETON_SK else None
        if migration is not None and migration.get("state", {}).get("S") == EXPANDING:  # restored into its seam
            raw[MIGRATED_FROM_ATTR] = migration["source"]
            seam = Seam.from_record(self._sort_key, self._declarations, migration)
            source_item = self._get(singleton_key(seam.source))  # mirrored by the restoring write too
        logger.warning(
            "the flags item is missing: the next write restores it from its newest audit record", version=last
        )
        return _Current(
            raw=raw,
            snapshot=self._snapshot(raw),
            missing=True,
            restored_from=last,
            seam=seam,
            source_item=source_item,
        )

    def _missing_in_seam(self, written: str, last: int, state: Mapping[str, Any]) -> _Current:
        """The configured item is missing and the newest record holds another item's state: the item it was
        migrated to (expanding: written through the seam, this item put back as its mirror; finalised: written
        there alone, by a safety write only), or the one a rolled-back migration had made live (this item is
        restored from that state, seen through the mapping). Anything else is refused: a record never restores
        another item's shape."""
        migration = self._get(migration_key(written))
        if migration is None or migration.get("source", {}).get("S") != self._sort_key:
            raise StoreFault(
                f"the flags item {self._sort_key} is missing and the newest audit record (version {last}) holds "
                f"{written}'s state, with no migration between them: nothing is restored from another item's state"
            )
        outcome = migration.get("state", {}).get("S")
        seam = Seam.from_record(self._sort_key, self._declarations, migration, mirrored=outcome == EXPANDING)
        if outcome in (EXPANDING, FINALISED):
            return self._seam_current(seam, None)
        raw = seam.view(state)  # rolled back: this item is live again; its last state is the later item's
        raw[VERSION_ATTR] = {"N": str(last + 1)}
        logger.warning("the flags item is missing: the next write restores it from the newest record", version=last)
        return _Current(raw=raw, snapshot=self._snapshot(raw), missing=True, restored_from=last)

    def _seam_of(self, item: Mapping[str, Any]) -> Seam | None:
        """The migration expanding through the configured item, if its pointers name one (one read more)."""
        key = Seam.record_key(self._sort_key, item)
        return None if key is None else Seam.of(self._sort_key, item, self._declarations, self._get(key))

    def _seam_current(self, seam: Seam, item: dict[str, Any] | None) -> _Current:
        """The state a write decides on through a migration: both items read (``item``, the configured one, may be
        missing for a writer configured for the earlier item: the write puts it back as the mirror)."""
        other = self._get(singleton_key(seam.other))
        if seam.for_source:
            if other is None:
                raise StoreFault(
                    f"{seam.source} points to {seam.target}, which is missing: nothing is written until it is restored "
                    f"(a restore through a writer configured for {seam.target})"
                )
            view = seam.view(other)
            return _Current(raw=view, snapshot=self._snapshot(view), seam=seam, source_item=item, target_raw=other)
        if other is None:
            logger.warning(f"{seam.source} is missing: this write puts it back as the mirror", migrated_to=seam.target)
        own = item or {}  # a writer configured for the later item reads it first: never None here
        return _Current(raw=own, snapshot=self._snapshot(own), seam=seam, source_item=other)

    def still_at(self, version: int | None) -> dict[str, Any]:
        """A ``ConditionCheck`` for another writer's transaction: the flags item is still at ``version`` (None:
        still missing), so what that transaction records was decided on the values of that version."""
        check: dict[str, Any] = {"TableName": self._table, "Key": singleton_key(self._sort_key)}
        if version is None:
            check["ConditionExpression"] = "attribute_not_exists(#pk)"
            check["ExpressionAttributeNames"] = {"#pk": PARTITION_KEY}
        else:
            check["ConditionExpression"] = "#version = :version"
            check["ExpressionAttributeNames"] = {"#version": VERSION_ATTR}
            check["ExpressionAttributeValues"] = {":version": {"N": str(version)}}
        return check

    def check_landing(self, changes: Mapping[str, Any], *, kind: str, actor: str) -> None:
        """Refuse now, with the refusal the write itself would meet, ``changes`` (valid for this store's
        declarations) that a write of ``kind`` could not land as the flags stand: the item superseded, or, while a
        migration expands, a flag it removed or a value the later item refuses. For work that names flags and
        writes them later (a scheduled change): checked when it is created; its write checks again when it runs."""
        current = self._read_current()
        self._check_placement(current, Write(actor=actor, reason="", kind=kind))
        if current.seam is not None and current.seam.for_source:
            current.seam.forward(changes)

    def _tell_undeclared(self, raw: Mapping[str, Any]) -> None:
        """The seed's word on each attribute of the item no declaration names: found, and left as it is."""
        for name in sorted(set(raw) - set(self._declarations) - BOOKKEEPING_ATTRS):
            logger.warning(
                f"the flags item holds '{name}', which no declaration names: left in the item (no reader serves it) "
                "until a migration or a cleanup removes it",
                attribute=name,
            )

    def _snapshot(self, raw: Mapping[str, Any]) -> Snapshot:
        return Snapshot.from_item(raw, self._declarations, fetched_at=self._clock())

    def _newest_record(self) -> dict[str, Any] | None:
        return newest_record(self._client, self._table)

    def _get(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        item: dict[str, Any] | None = self._call(
            "get_item", TableName=self._table, Key=dict(key), ConsistentRead=True
        ).get("Item")
        return item

    def _call(self, operation: str, **params: Any) -> Any:
        return transaction.call(self._client, operation, **params)

    # -- writes ------------------------------------------------------------------------------------

    def change(
        self,
        changes: Mapping[str, Any],
        *,
        actor: str,
        reason: str,
        expected_version: int | frozenset[int] | None = None,
        ownership: Ownership | None = None,
        condition: Callable[[Snapshot], bool] | None = None,
        kind: str = KIND_CHANGE,
        extra_audit: Mapping[str, Any] | None = None,
        idempotency: Idempotency | None = None,
        time_budget: float | None = None,
        companions: Companions | None = None,
        before_write: Callable[[], None] | None = None,
        attempt_checks: Sequence[AttemptCheck] = (),
    ) -> ChangeResult:
        """Apply ``changes`` (already validated) as one new version, retrying on conflict.

        ``ownership`` sets (window) or clears (None owner) who holds maintenance; by default a change that
        names ``maintenance_mode`` clears it (a manual switch takes maintenance away from any window, even
        with the same value). ``condition`` is re-checked on every attempt against the fresh state; when it
        says no, nothing is written and the result is not applied. ``time_budget`` (seconds from now) is the
        deadline: without If-Match, conflicts are retried until it is spent, and no DynamoDB call starts that could
        outlive it, so the change answers before its caller's own timeout.
        ``companions`` gives, for the version about to be written and its time, more items for the same
        transaction (each with its own condition): they commit with the change or not at all, and a failed
        condition of theirs is a conflict like any other (re-read, ``condition`` re-checked, retried).
        ``before_write`` runs once before the first attempt, after an Idempotency-Key replay would have
        answered (a check that may refuse the write and does not depend on the item, e.g. a guard's alarms).
        ``attempt_checks`` run on every attempt that would write, with the snapshot it read and the diff it would
        commit (flag -> {"old", "new"}); one that raises refuses the write, nothing written (the hook for checks
        on what a write changes now, e.g. a protected flag).
        """
        if ownership is None and MAINTENANCE_FLAG in changes:
            ownership = Ownership(owner=None)
        plan = Plan(changes=changes, ownership=ownership)

        def planned(snapshot: Snapshot) -> Plan | None:
            return plan if condition is None or condition(snapshot) else None

        write = Write(
            actor=actor,
            reason=reason,
            kind=kind,
            expected=Write.expecting(expected_version),
            extra_audit=dict(extra_audit or {}),
            idempotency=idempotency,
            time_budget=time_budget,
            companions=companions,
            before_write=before_write,
            attempt_checks=tuple(attempt_checks),
        )
        return self._write(planned, write)

    def revert(
        self,
        version: Any,
        *,
        actor: str,
        reason: str,
        expected_version: int | frozenset[int] | None = None,
        idempotency: Idempotency | None = None,
        time_budget: float | None = None,
        kind: str = KIND_REVERT,
        extra_audit: Mapping[str, Any] | None = None,
        companions: Companions | None = None,
        before_write: Callable[[], None] | None = None,
        attempt_checks: Sequence[AttemptCheck] = (),
    ) -> ChangeResult:
        """Restore the flags as they were right after ``version`` (0: the seeded state).

        Maintenance follows what readers would see: the target's effective ``maintenance_mode`` NOW (its
        value, owner and deadline) is compared with the current effective value. Equal: ``maintenance_mode``
        and its owner and deadline are left as they are. Different: the revert is a manual switch to the
        target's effective value (owner and deadline removed). ``kind``, ``extra_audit``, ``time_budget``,
        ``companions``, ``before_write`` and ``attempt_checks`` as for ``change`` (the record always names
        ``reverted_to``).
        """
        version = validate_version(version)
        record = self._get(audit_key(max(version, 1)))
        recorded = self._state_from(record, version)
        found: dict[str, Any] = {}  # the seam each attempt found (``_write``)

        def planned(current: Snapshot) -> Plan:
            state = self._in_shape(version, record, recorded, found.get("seam"))  # in the shape found now
            self._whole_revert(found.get("seam"), state, recorded, found.get("target_raw"))
            target = self._snapshot(state)
            values = self._declarations.validate_changes(self._declared_values(state))  # today's rules, old values
            now = self._clock()
            changes = dict(values)
            ownership = None
            if MAINTENANCE_FLAG in changes:
                wanted = target.effective_values(now)[MAINTENANCE_FLAG]
                if wanted == current.effective_values(now)[MAINTENANCE_FLAG]:
                    del changes[MAINTENANCE_FLAG]
                else:
                    changes[MAINTENANCE_FLAG] = wanted
                    ownership = Ownership(owner=None)
            return Plan(changes=changes, ownership=ownership)

        write = Write(
            actor=actor,
            reason=reason,
            kind=kind,
            expected=Write.expecting(expected_version),
            extra_audit={**(extra_audit or {}), "reverted_to": version},
            idempotency=idempotency,
            time_budget=time_budget,
            companions=companions,
            before_write=before_write,
            attempt_checks=tuple(attempt_checks),
        )
        return self._write(planned, write, found)

    def values_at(self, version: Any) -> dict[str, FlagValue]:
        """The declared flags' values right after ``version`` (0: the seeded state), checked by today's rules:
        what a revert to it writes (a change request resolves a revert to this patch)."""
        version = validate_version(version)
        record = self._get(audit_key(max(version, 1)))
        recorded = self._state_from(record, version)
        item = self._get(singleton_key(self._sort_key))
        state = self._in_shape(version, record, recorded, self._seam_of(item) if item is not None else None)
        return self._declarations.validate_changes(self._declared_values(state))

    def seed(self, *, actor: str, reason: str, time_budget: float | None = None) -> ChangeResult:
        """The deploy-time seed: adds every declared flag the item lacks, with its initial value, as one
        version (kind ``seed``); never changes a live value. A missing item is restored first, by the same
        rule as any write (a brand-new table gets version 0 with the initial values). An attribute of the item
        that no declaration names (a flag removed from the declarations) is left where it is, and said: one
        log line per attribute, until a migration or a cleanup removes it."""

        def planned(current: Snapshot) -> Plan:
            missing = {name: spec.initial for name, spec in self._declarations.items() if name in current.fallen_back}
            return Plan(changes=missing)

        write = Write(actor=actor, reason=reason, kind=KIND_SEED, seed_only_missing=True, time_budget=time_budget)
        return self._write(planned, write)

    def restore(
        self,
        *,
        actor: str,
        reason: str,
        idempotency: Idempotency | None = None,
        time_budget: float | None = None,
    ) -> ChangeResult:
        """Bring a missing item back now, by the restore rule (its newest record's state at a new version; the
        initial values at version 0 when no record remains); an item that exists is left as it is."""
        write = Write(actor=actor, reason=reason, kind=KIND_RESTORE, idempotency=idempotency, time_budget=time_budget)
        return self._write(lambda current: Plan(changes={}), write)

    # -- the migration seam ----------------------------------------------------------------------------

    def migrate(
        self,
        new: Declarations,
        mapping: MigrationMapping,
        *,
        actor: str,
        reason: str,
        time_budget: float | None = None,
        pending: Callable[[], list[dict[str, Any]]] = list,
        holds: Callable[[], list[dict[str, Any]]] = list,
    ) -> MigrationResult:
        """Migrate the flags of this store's item into ``mapping.target``'s shape (``new``): in one transaction,
        the later item at version L+1 (L: this item's version) with ``migrated_from``, this item mirrored from it
        with the pointer and the mapping, the audit record of L+1 (kind ``migration``, the later item's state) and
        the migration's own record. Conditioned on this item still being at L and pointing nowhere: a write that
        lands first is a conflict, re-read and carried into the later item on the next attempt.

        Refused before anything is written (``MigrationRefused``, each cause listed): a value that does not
        convert or that the new declarations refuse, a stored value that is unusable, a protected flag the mapping
        renames, converts or removes, and whatever ``pending`` names (scheduled changes, guards). ``holds``, called
        on every attempt before ``pending``, gives the transaction entries (``ConditionCheck``) that keep what
        ``pending`` found true until the commit: anything that would have changed it since makes the attempt a
        conflict, read again."""
        self._check_mapping(new, mapping)

        def attempt() -> tuple[list[dict[str, Any]], str, int | None, Seam]:
            held = holds()  # before pending() looks
            item = self._get(singleton_key(self._sort_key))
            seam, target_raw, diff = self._migration_plan(item, new, mapping, actor, pending)
            version = seam.migrated_at
            now, token = self._clock(), self._token()
            write = Write(
                actor=actor,
                reason=reason,
                kind=KIND_MIGRATION,
                extra_audit={"item": seam.target, "migrated_from": seam.source},
            )
            record = seam_record(
                mapping=mapping,
                source_declarations=self._declarations,
                target_declarations=new,
                migrated_at=version,
                at=iso_time(now),
                actor=actor,
                reason=reason,
                token=token,
            )
            items = [
                {"Put": self._put(target_raw)},
                {"Update": self._in_table(seam.pointer_update(item or {}, target_raw))},
                {"Put": self._put(self._record(version, now, write, diff, target_raw, token, new))},
                {"Put": self._put(record)},
                *(self._in_table_item(entry) for entry in held),
            ]
            return items, token, version, seam

        seam, attempts = self._seam_transaction(attempt, "migrate the flags", time_budget)
        logger.info("flags migrated", actor=actor, version=seam.migrated_at, source=seam.source, target=seam.target)
        self._on_commit(seam.migrated_at)
        return MigrationResult(seam=seam, version=seam.migrated_at, attempts=attempts)

    def _seam_transaction(
        self,
        attempt: Callable[[], tuple[list[dict[str, Any]], str, int | None, Seam]],
        what: str,
        time_budget: float | None,
    ) -> tuple[Seam, int]:
        """One step of a migration's life (migrate, finalise, roll back): ``attempt`` reads and builds the step's
        transaction (its items, token, the version it writes if any, its seam); a conflict is re-read and retried
        with back-off while the time budget allows, then ``WriteConflict``."""
        started = self._monotonic()
        budget = transaction.Budget(
            None if time_budget is None else started + time_budget, self._monotonic, self._call_seconds
        )
        attempts = 0
        while True:
            attempts += 1
            items, token, version, seam = attempt()
            try:
                self._send_once(items, token, version, budget)
            except transaction.Conflict:
                pause = self._pause(attempts, budget) if attempts < self._max_attempts else None
                if pause is None:
                    raise WriteConflict(
                        f"the flags kept changing: could not {what} in {attempts} attempts; nothing was written, retry",
                        attempts=attempts,
                    ) from None
                self._sleep(pause)
                continue
            return seam, attempts

    def _check_mapping(self, new: Declarations, mapping: MigrationMapping) -> None:
        if mapping.source != self._sort_key:
            raise InvalidRequest(
                f"the mapping migrates {mapping.source}, but this service's flags item is {self._sort_key}",
                rule="mapping",
            )
        try:
            mapping.check(self._declarations, new)
        except MappingError as exc:
            raise InvalidRequest(f"mapping: {exc}", rule="mapping") from exc
        keeps = mapping.move(MAINTENANCE_FLAG)
        if keeps.new != MAINTENANCE_FLAG or keeps.conversion is not None:
            raise InvalidRequest(
                f"mapping: '{MAINTENANCE_FLAG}' must be kept as it is (maintenance windows and readers rely on it)",
                rule="mapping",
            )

    def _migration_plan(
        self,
        item: dict[str, Any] | None,
        new: Declarations,
        mapping: MigrationMapping,
        actor: str,
        pending: Callable[[], list[dict[str, Any]]],
    ) -> tuple[Seam, dict[str, Any], dict[str, dict[str, Any]]]:
        """What one migration attempt writes, decided on the item as read: the seam, the later item, the diff."""
        if item is None:
            raise MigrationRefused(
                f"the flags item {self._sort_key} does not exist: nothing to migrate (restore it first)",
                refused=[{"cause": "missing", "item": self._sort_key}],
            )
        if SUPERSEDED_BY_ATTR in item:
            raise MigrationRefused(
                f"the flags item {self._sort_key} is superseded by {item[SUPERSEDED_BY_ATTR].get('S')}",
                refused=[{"cause": "superseded", "item": self._sort_key}],
            )
        for pointer in (MIGRATED_TO_ATTR, MIGRATED_FROM_ATTR):
            if pointer in item:
                target = item[pointer].get("S", "") if pointer == MIGRATED_TO_ATTR else self._sort_key
                under_way = self._get(migration_key(target)) or {}
                at = int(under_way.get("migrated_at", {}).get("N", "0"))
                raise FlagsMigrated(
                    f"the flags item {self._sort_key} already takes part in the migration to {target} (at version "
                    f"{at}): finalise it or roll it back first",
                    migrated_to=target,
                    migrated_at=at,
                )
        for taken, what in (
            (singleton_key(mapping.target), "item"),
            (migration_key(mapping.target), "migration record"),
        ):
            if self._get(taken) is not None:
                raise MigrationRefused(
                    f"{mapping.target} already has its {what} (an earlier migration to it, rolled back or finalised): "
                    f"migrate to a later item (FLAGS#V<n+1>), or delete {mapping.target}'s items first",
                    refused=[{"cause": "target_exists", "item": mapping.target}],
                )
        snapshot = self._snapshot(item)
        version = (snapshot.version or 0) + 1
        values: dict[str, FlagValue] = {}
        refused: list[dict[str, Any]] = []
        diff: dict[str, dict[str, Any]] = {}
        protected = self._declarations.protected
        for name in self._declarations:
            move = mapping.move(name)
            now = snapshot.values[name]
            if name in snapshot.fallen_back:
                refused.append({"cause": "unusable", "flag": name, "why": "its stored value is unusable: fix it first"})
                continue
            if name in protected and (move.new != name or move.conversion is not None):
                refused.append(
                    {
                        "cause": "protected",
                        "flag": name,
                        "why": "a protected flag is renamed, converted or removed only once its protection is lowered "
                        "by a deploy (the approval rules)",
                    }
                )
                continue
            if move.new is None:
                diff[name] = {"old": now, "new": None}
                continue
            try:
                values[move.new] = new[move.new].validate(move.forward(now))
            except (NotConvertible, FlagsError) as exc:
                why = exc.message if isinstance(exc, FlagsError) else str(exc)
                refused.append({"cause": "not_convertible", "flag": name, "value": now, "why": why})
                continue
            if move.new != name or values[move.new] != now or type(values[move.new]) is not type(now):
                diff[move.new] = {"old": now, "new": values[move.new]}
        for name, spec in new.items():
            if name in mapping.added:
                values[name] = mapping.initial(name, spec)
                diff[name] = {"old": None, "new": values[name]}
        refused.extend(pending())
        if refused:
            causes = "; ".join(f"{entry.get('flag', entry.get('cause'))}: {entry.get('why', '')}" for entry in refused)
            raise MigrationRefused(f"the migration is refused, nothing was written: {causes}", refused=refused)
        seam = Seam(
            source=mapping.source,
            target=mapping.target,
            mapping=mapping,
            source_declarations=self._declarations,
            target_declarations=new,
            migrated_at=version,
            for_source=True,
        )
        target_raw: dict[str, Any] = {**singleton_key(mapping.target)}
        target_raw.update({name: encode(new[name], value) for name, value in values.items()})
        for attr in (MAINTENANCE_OWNER_ATTR, MAINTENANCE_DEADLINE_ATTR):
            if attr in item:
                target_raw[attr] = item[attr]
        target_raw[VERSION_ATTR] = {"N": str(version)}
        target_raw[UPDATED_AT_ATTR] = {"S": iso_time(self._clock())}
        target_raw[UPDATED_BY_ATTR] = {"S": actor}
        target_raw[MIGRATED_FROM_ATTR] = {"S": mapping.source}
        self._check_size(target_raw, actor)
        return seam, target_raw, diff

    def finalise_migration(self, *, actor: str, reason: str, time_budget: float | None = None) -> Seam:
        """End the migration expanding through this store's item: the earlier item marked superseded by the later
        one (its readers serve their fallbacks, its writers are refused), ``migrated_from`` removed from the later
        one (writes are no longer mirrored), the migration's record marked finalised; one transaction, conditioned
        on both items as read. Who may finalise (no reader of the earlier item seen) is the caller's check."""
        return self._end_migration(FINALISED, actor=actor, reason=reason, time_budget=time_budget)

    def roll_back_migration(self, *, actor: str, reason: str, time_budget: float | None = None) -> Seam:
        """Undo the migration expanding through this store's item, before it is finalised: the pointer and its
        mapping removed from the earlier item (its readers read it again: it holds every value it could express,
        mirrored at the same version), the later item marked superseded by the earlier one (its readers serve their
        fallbacks: switch them back first), the migration's record marked rolled back; one transaction. A flag the
        earlier item could not express is absent from it: its readers serve its fallback until a write or the seed
        gives it a value."""
        return self._end_migration(ROLLED_BACK, actor=actor, reason=reason, time_budget=time_budget)

    def _end_migration(self, outcome: str, *, actor: str, reason: str, time_budget: float | None) -> Seam:
        def attempt() -> tuple[list[dict[str, Any]], str, int | None, Seam]:
            current = self._read_current()
            seam = current.seam
            if seam is None or not seam.mirrored:
                raise MigrationRefused(
                    f"no migration expands through the flags item {self._sort_key}: nothing to {_STEP[outcome]}",
                    refused=[{"cause": "no_migration", "item": self._sort_key}],
                )
            source = current.source_item
            target = current.target_raw if seam.for_source else current.raw
            if source is None or target is None or current.missing:  # never ended with an item to restore first
                lost = seam.source if source is None else seam.target
                through = "either item" if lost == seam.source else seam.target
                raise MigrationRefused(
                    f"the flags item {lost} of the migration {seam.source} -> {seam.target} is missing: nothing to "
                    f"{_STEP[outcome]} until it is back (POST /flags/restore through a writer configured for "
                    f"{through} puts it back)",
                    refused=[{"cause": "missing", "item": lost}],
                )
            now = iso_time(self._clock())
            if outcome == FINALISED:
                why = f"migration to {seam.target} finalised: {reason}"
                superseded = _superseded(
                    seam.source, seam.target, source, MIGRATED_TO_ATTR, now, why, drop_pointer=False
                )
                ends = [superseded, _end_mirror(seam, target)]
            else:
                why = f"migration from {seam.source} rolled back: {reason}"
                superseded = _superseded(
                    seam.target, seam.source, target, MIGRATED_FROM_ATTR, now, why, drop_pointer=True
                )
                ends = [_drop_pointer(seam, source), superseded]
            ends.append(_ended_record(seam, outcome, now, actor, reason))
            return [{"Update": self._in_table(update)} for update in ends], self._token(), None, seam

        seam, _ = self._seam_transaction(attempt, f"{_STEP[outcome]} the migration", time_budget)
        logger.info(f"migration {outcome}", actor=actor, source=seam.source, target=seam.target)
        return seam

    def _send_once(
        self, items: list[dict[str, Any]], token: str, version: int | None, budget: transaction.Budget
    ) -> None:
        """Send one transaction of the seam (its token resent after a lost answer); a lost answer that cannot be
        settled is ``OutcomeUnknown``; a cancelled one is ``transaction.Conflict``."""
        try:
            transaction.send(self._client, {"TransactItems": items, "ClientRequestToken": token}, budget)
        except transaction.Lost as lost:
            committed = self._committed(version, token, budget) if lost.ambiguous and version is not None else None
            if committed:
                return
            if committed is False or not lost.ambiguous:
                raise StoreUnavailable(f"DynamoDB TransactWriteItems failed: {lost.cause}; nothing written") from lost
            raise OutcomeUnknown(
                f"the migration step was sent but DynamoDB's answer was lost ({lost.cause}); GET /flags/migration "
                "shows whether it committed, and a retry is safe (a committed one is refused, naming it)",
                version=version,
            ) from lost

    def _write(
        self, plan_for: Callable[[Snapshot], Plan | None], write: Write, found: dict[str, Any] | None = None
    ) -> ChangeResult:
        """One write, attempt after attempt (the module's docstring); ``found`` is told each attempt's seam before
        its plan is made (a revert decides in the shape the flags are in)."""
        started = self._monotonic()
        deadline = None if write.time_budget is None else started + write.time_budget
        budget = transaction.Budget(deadline, self._monotonic, self._call_seconds)
        expected, idempotency = write.expected, write.idempotency
        limit = self._max_attempts if expected is None else 1  # If-Match: one attempt
        if idempotency is not None:
            replay = self._replay(idempotency)
            if replay is not None:
                return replay
        if write.before_write is not None:
            write.before_write()
        if not budget.allows(ATTEMPT_CALLS):
            raise StoreUnavailable("the request's time budget ran out before the write could be attempted")
        attempt = 0
        while True:  # the first attempt fits (above); each next one is granted before its back-off (``_pause``)
            attempt += 1
            current = self._read_current(seeding=write.kind == KIND_SEED)
            if write.kind == KIND_SEED and attempt == 1 and not current.missing:
                self._tell_undeclared(current.raw)
            if write.kind == KIND_SEED and self._seeded_elsewhere(current):  # a deploy or its rollback never wedges
                return self._result(current.snapshot, applied=False, attempts=attempt)
            self._check_placement(current, write)
            seam = current.seam
            # a caller's If-Match names a version of the old item
            if seam is not None and seam.for_source and expected is not None and write.kind not in SAFETY_KINDS:
                raise seam.refused(
                    f"{seam.source} was migrated to {seam.target} at version {seam.migrated_at}: a write "
                    f"conditioned on its version (If-Match) is refused; write to {seam.target} (switch this "
                    "writer), or retry without If-Match"
                )
            if expected is not None and (current.missing or current.version not in expected):
                raise self._stale(current, expected)
            if found is not None:
                found["seam"], found["target_raw"] = current.seam, current.target_raw
            plan = plan_for(current.snapshot)
            delta = _Delta({}, {}, [])
            if plan is not None:
                delta = _Delta(
                    self._diff(current, plan.changes, write.seed_only_missing),
                    *self._ownership_delta(current, plan.ownership),
                )
                for policy in self._policies:  # the features' rules, on what this attempt would change
                    policy(write.kind, current.snapshot, delta.diff)
            try:
                if plan is None or (not delta.applied and not current.missing):  # a no-op: no version
                    if plan is not None and current.mirror_missing:  # accepted: the mirror is put back
                        return self._put_mirror_back(current, write, attempt, budget)
                    if idempotency is not None:
                        self._remember_no_op(current, idempotency, budget)
                    return self._result(self._snapshot(current.raw), applied=False, attempts=attempt)
                for check in write.attempt_checks:  # on the state this attempt read: it may refuse the write
                    check(current.snapshot, delta.diff)
                new_raw = self._commit(current, delta, write, budget)
            except transaction.Conflict:
                if idempotency is not None:  # a race for the key: the winner's answer is this request's answer
                    replay = self._replay(idempotency)
                    if replay is not None:
                        return replay
                pause = self._pause(attempt, budget) if attempt < limit else None
                if pause is None:  # no further attempt: If-Match's one, the safety net, or the budget spent
                    break
                self._on_retry(attempt)
                self._sleep(pause)  # ends at the last moment the next attempt may start, at the latest
                continue
            snapshot = self._snapshot(new_raw)
            logger.info(
                "flags changed",
                actor=write.actor,
                version=snapshot.version,
                kind=write.kind if delta.applied else KIND_RESTORE,
                changed={name: change["new"] for name, change in delta.diff.items()},
                restored_from=current.restored_from if current.missing else None,
                attempts=attempt,
            )
            self._on_commit(snapshot.version or 0)
            return self._result(
                snapshot, applied=delta.applied, attempts=attempt, changed=delta.diff, restored=current.missing
            )
        if expected is not None:
            raise self._stale(self._read_current(), expected, moved=True)
        spent = self._monotonic() - started
        why = "its time budget is spent" if attempt < limit else "the attempts' safety limit is reached"
        raise WriteConflict(
            f"the flags kept changing under this write: gave up after {attempt} attempts in {spent:.1f} s ({why}); "
            "nothing was written, retry after Retry-After",
            attempts=attempt,
        )

    def _pause(self, attempt: int, budget: transaction.Budget) -> float | None:
        """The back-off after ``attempt`` conflicted, which grants the next attempt: jittered, doubling from
        ``backoff_base`` up to ``backoff_max``, cut short at the last moment the next attempt may start (its worst
        case still ending within the budget); None when that moment has passed: no next attempt."""
        pause = self._jitter() * min(self._backoff_max, self._backoff_base * 2.0 ** min(attempt - 1, 32))
        room = budget.room(ATTEMPT_CALLS)
        if room is None:
            return pause
        return None if room < 0 else min(pause, room)

    def _seeded_elsewhere(self, current: _Current) -> bool:
        """The seed of a stack whose item a migration moved on (expanding from it, finalised) or a marker superseded
        writes nothing there, and says where the flags live: refusing it would fail the deploy and CloudFormation's
        rollback of it (the same seed again), leaving the stack UPDATE_ROLLBACK_FAILED."""
        seam, successor = current.seam, current.superseded_by
        if seam is not None and (seam.for_source or not seam.mirrored):
            successor = seam.target
        if successor is None:
            return False
        logger.warning(
            f"the flags item {self._sort_key} was migrated to or superseded by {successor}: its seed writes nothing; "
            f"deploy the declarations of {successor} with its sort key",
            migrated_to=successor,
        )
        return True

    def _check_placement(self, current: _Current, write: Write) -> None:
        """Refuse an operator's write that has nowhere to land: its item superseded (by a marker, or by the
        finalised migration it points through); let a safety write through."""
        self._check_superseded(current, write)
        seam = current.seam
        if seam is not None and not seam.mirrored and write.kind not in SAFETY_KINDS:
            raise FlagsSuperseded(
                f"the flags item {seam.source} is superseded by {seam.target} (the migration was finalised): its "
                "readers serve their declared fallbacks and nothing is written here; change the flags where it "
                "points",
                superseded_by=seam.target,
                superseded_at=None,
            )

    def _check_superseded(self, current: _Current, write: Write) -> None:
        """Refuse an operator's write to a superseded item, naming its successor; let a safety write through."""
        successor = current.superseded_by
        if successor is None:
            return
        superseded_at = current.raw.get(SUPERSEDED_AT_ATTR, {}).get("S")
        if write.kind in SAFETY_KINDS and ITEM_KEY.match(successor):
            # another flags item of this table is live (a rolled-back migration's later item, switched back): a
            # version written here would take the number the live item's next write needs (one version line)
            logger.error(
                "a safety write on a flags item superseded by another item of its table: refused (it would fork the "
                "version line); switch this writer to the live item",
                kind=write.kind,
                actor=write.actor,
                superseded_by=successor,
            )
        elif write.kind in SAFETY_KINDS:
            logger.warning(
                "a safety write on a superseded flags item: applied, though no reader serves its values",
                kind=write.kind,
                actor=write.actor,
                superseded_by=successor,
            )
            return
        raise FlagsSuperseded(
            f"the flags item is superseded by {successor}"
            f"{f' since {superseded_at}' if superseded_at else ''}: its readers serve their declared fallbacks "
            "and nothing is written here; change the flags where it points",
            superseded_by=successor,
            superseded_at=superseded_at,
        )

    def _result(self, snapshot: Snapshot, **outcome: Any) -> ChangeResult:
        return ChangeResult(snapshot=snapshot, values=snapshot.effective_values(self._clock()), **outcome)

    def _stale(self, current: _Current, expected: frozenset[int], moved: bool = False) -> PreconditionFailed:
        if current.missing:
            return PreconditionFailed(
                "the flags item does not exist: no version can match If-Match", current_version=None
            )
        tags = ", ".join(f'"{version}"' for version in sorted(expected)) or "none of the given tags"
        lead = "the flags changed while writing" if moved else "If-Match does not match the current version"
        return PreconditionFailed(
            f"{lead}: they are at version {current.version}, If-Match names {tags}; re-read and retry",
            current_version=current.version,
            flags=dict(current.snapshot.effective_values(self._clock())),
        )

    def _diff(
        self, current: _Current, changes: Mapping[str, Any], only_missing: bool = False
    ) -> dict[str, dict[str, Any]]:
        diff: dict[str, dict[str, Any]] = {}
        for name, value in changes.items():
            stored = current.snapshot.values.get(name)
            unusable = name in current.snapshot.fallen_back  # stored value broken: rewrite it
            if only_missing and name in current.raw:
                continue  # the seed adds what is absent; a broken live value is the operators' to fix
            if unusable or stored != value or type(stored) is not type(value):
                diff[name] = {"old": None if unusable else stored, "new": value}
        return diff

    @staticmethod
    def _ownership_delta(current: _Current, ownership: Ownership | None) -> tuple[dict[str, Any], list[str]]:
        if ownership is None:
            return {}, []
        snapshot = current.snapshot
        if ownership.owner is None:
            present = [attr for attr in (MAINTENANCE_OWNER_ATTR, MAINTENANCE_DEADLINE_ATTR) if attr in current.raw]
            return {}, present
        wanted = {MAINTENANCE_OWNER_ATTR: {"S": ownership.owner}}
        if ownership.deadline is not None:
            wanted[MAINTENANCE_DEADLINE_ATTR] = {"N": str(int(ownership.deadline))}
        if snapshot.maintenance_owner == ownership.owner and (
            ownership.deadline is None or snapshot.maintenance_deadline == int(ownership.deadline)
        ):
            return {}, []
        return wanted, []

    # -- the transaction ------------------------------------------------------------------------------

    def _commit(self, current: _Current, delta: _Delta, write: Write, budget: transaction.Budget) -> dict[str, Any]:
        """Build the attempt's transaction once, check the item's size, send it, and learn its outcome."""
        now = self._clock()
        applied = delta.applied
        next_version = current.version + 1 if applied else current.version
        sets = self._sets(current, delta.diff, delta.owner_sets, next_version, write.actor, now)
        new_raw = {k: v for k, v in current.raw.items() if k not in delta.owner_removes}
        new_raw.update(sets)
        updates, state_raw, record_diff, shape = self._updates(current, delta, sets, new_raw)
        self._check_size(state_raw, write.actor)

        token = self._token()
        items: list[dict[str, Any]] = list(updates)
        if current.missing and current.restored_from is not None:
            restore = replace(  # an explicit restore keeps its operator's reason; one a write caused says so
                write,
                kind=KIND_RESTORE,
                reason=write.reason
                if write.kind == KIND_RESTORE
                else f"restored the missing flags item from version {current.restored_from}'s audit record",
                extra_audit={
                    "restored_from": current.restored_from,
                    **({"item": self._sort_key} if self._sort_key != SINGLETON_SK else {}),
                },
            )
            items.append({"Put": self._put(self._record(current.version, now, restore, {}, current.raw, token))})
        if applied:
            extra = dict(write.extra_audit)
            if delta.owner_sets or delta.owner_removes:  # the trail says which window gained or lost maintenance
                new_owner = delta.owner_sets.get(MAINTENANCE_OWNER_ATTR, {}).get("S")
                extra["maintenance_owner"] = {"old": current.snapshot.maintenance_owner, "new": new_owner}
            written = current.seam.target if current.seam is not None else self._sort_key
            if written != SINGLETON_SK:  # the item whose shape the record's state has (FLAGS#V1's is unnamed)
                extra["item"] = written
            record = self._record(
                next_version, now, replace(write, extra_audit=extra), record_diff, state_raw, token, shape
            )
            items.append({"Put": self._put(record)})
        if write.idempotency is not None:
            answer = {"version": next_version, "applied": applied, "restored": current.missing}
            items.append({"Put": write.idempotency.put(self._table, now, answer)})
        if write.companions is not None and applied:
            items.extend(write.companions(next_version, now))
        request = {"TransactItems": items, "ClientRequestToken": token}
        try:
            transaction.send(self._client, request, budget)
        except transaction.Lost as lost:
            committed = self._committed(next_version, token, budget) if lost.ambiguous else False
            if committed is None:
                raise OutcomeUnknown(
                    f"the write of version {next_version} was sent but DynamoDB's answer was lost ({lost.cause}); "
                    "GET /flags/history shows whether it committed, and a retry with the same Idempotency-Key "
                    "is safe",
                    version=next_version,
                ) from lost
            if not committed:
                if lost.ambiguous:
                    raise transaction.Conflict(["ConditionalCheckFailed"]) from lost
                raise StoreUnavailable(f"DynamoDB TransactWriteItems failed: {lost.cause}") from lost
        return new_raw

    def _updates(
        self, current: _Current, delta: _Delta, sets: dict[str, Any], new_raw: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], dict[str, Any], Mapping[str, Mapping[str, Any]], Declarations]:
        """The item updates of one attempt, the state its record holds, the diff it records and the declarations
        of that state's shape. While a migration expands, the later item is written and the earlier one mirrored
        from it; a writer configured for the earlier item carries its changes forward first."""
        seam = current.seam
        if seam is None or not seam.for_source:  # this writer's own item (and the mirror, while a migration expands)
            updates = [{"Update": self._update(current, sets, delta.owner_removes)}]
            if seam is not None:  # a missing earlier item is put back as the mirror, with its pointer
                updates.append(self._in_table_item(seam.mirror(current.source_item, new_raw)))
            return updates, new_raw, delta.diff, self._declarations
        target, shape = current.target_raw or {}, seam.target_declarations
        before = Snapshot.from_item(target, shape, fetched_at=self._clock())
        carried = seam.forward({name: change["new"] for name, change in delta.diff.items()})
        diff = {
            name: {"old": None if name in before.fallen_back else before.values.get(name), "new": value}
            for name, value in carried.items()
        }
        target_sets = {name: encode(shape[name], value) for name, value in carried.items()}
        target_sets.update(delta.owner_sets)
        target_sets.update({attr: sets[attr] for attr in (VERSION_ATTR, UPDATED_AT_ATTR, UPDATED_BY_ATTR)})
        new_target = {attr: value for attr, value in target.items() if attr not in delta.owner_removes}
        new_target.update(target_sets)
        pointer = MIGRATED_FROM_ATTR if seam.mirrored else None  # finalised: the later item names nothing
        updates = [
            {
                "Update": self._in_table(
                    conditioned_update(seam.target, target_sets, delta.owner_removes, target, pointer=pointer)
                )
            }
        ]
        if seam.mirrored:
            updates.append(self._in_table_item(seam.mirror(current.source_item, new_target)))
        return updates, new_target, diff, shape

    def _in_table(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"TableName": self._table, **request}

    def _in_table_item(self, item: dict[str, Any]) -> dict[str, Any]:
        """A transaction item (``{"Update": ...}``, ``{"Put": ...}``) with this store's table."""
        ((kind, request),) = item.items()
        return {kind: self._in_table(request)}

    def _sets(
        self,
        current: _Current,
        diff: Mapping[str, Mapping[str, Any]],
        owner_sets: Mapping[str, Any],
        version: int,
        actor: str,
        now: float,
    ) -> dict[str, Any]:
        sets: dict[str, Any] = {}
        if current.missing:  # a restore writes the whole item
            sets.update({k: v for k, v in current.raw.items() if k not in singleton_key(self._sort_key)})
        sets.update({name: encode(self._declarations[name], change["new"]) for name, change in diff.items()})
        sets.update(owner_sets)
        sets[VERSION_ATTR] = {"N": str(version)}
        sets[UPDATED_AT_ATTR] = {"S": iso_time(now)}
        sets[UPDATED_BY_ATTR] = {"S": actor}
        return sets

    def _check_size(self, new_raw: Mapping[str, Any], actor: str) -> None:
        """Refuse an item that would not leave room for the widest window start's bookkeeping."""
        reserved = dict(new_raw)
        if self._reserve_owner:
            owner = new_raw.get(MAINTENANCE_OWNER_ATTR, {}).get("S", "")
            reserved[MAINTENANCE_OWNER_ATTR] = {"S": max(owner, self._reserve_owner, key=len)}
            reserved[MAINTENANCE_DEADLINE_ATTR] = RESERVED_DEADLINE
            reserved[UPDATED_BY_ATTR] = {"S": max(actor, f"scheduler:{self._reserve_owner}", key=len)}
        size = item_size(reserved)
        if size > READ_BLOCK_BYTES:
            raise ItemTooLarge(
                f"the change would make the flags item {size} bytes with room kept for a maintenance window's "
                f"bookkeeping; the limit is {READ_BLOCK_BYTES}",
                size=size,
                limit=READ_BLOCK_BYTES,
                rule="item_size",
            )

    def _update(self, current: _Current, sets: Mapping[str, Any], removes: list[str]) -> dict[str, Any]:
        expression, names, values = set_remove(sets, removes)
        expects = self._expects(current)
        return {
            **expects,
            "UpdateExpression": expression,
            "ExpressionAttributeNames": {**names, **expects["ExpressionAttributeNames"]},
            "ExpressionAttributeValues": {**values, **expects.get("ExpressionAttributeValues", {})},
        }

    def _expects(self, current: _Current) -> dict[str, Any]:
        """The singleton's key with the condition that it is still as ``current`` found it: at its version (and
        not superseded, when it was not), or still missing."""
        check: dict[str, Any] = {"TableName": self._table, "Key": singleton_key(self._sort_key)}
        if current.missing:
            check["ConditionExpression"] = "attribute_not_exists(#pk)"
            check["ExpressionAttributeNames"] = {"#pk": PARTITION_KEY}
        elif current.superseded_by is not None:  # a safety write, let through a marker it has seen
            check["ConditionExpression"] = "#version = :current"
            check["ExpressionAttributeNames"] = {"#version": VERSION_ATTR}
            check["ExpressionAttributeValues"] = {":current": {"N": str(current.version)}}
        else:  # and still not superseded: a marker set since the read is a conflict (re-read, then refused)
            check["ConditionExpression"] = "#version = :current AND attribute_not_exists(#superseded)"
            check["ExpressionAttributeNames"] = {"#version": VERSION_ATTR, "#superseded": SUPERSEDED_BY_ATTR}
            check["ExpressionAttributeValues"] = {":current": {"N": str(current.version)}}
        return check

    def _remember_no_op(self, current: _Current, idempotency: Idempotency, budget: transaction.Budget) -> None:
        """Remember that this key's request changed nothing at ``current``'s version: the key's item, committed
        only while the flags are still at that version (else ``transaction.Conflict``: decide again, or read the
        answer of whoever holds the key). An answer lost on the way is a 503: the retry with the key is safe."""
        answer = {"version": current.version, "applied": False}
        request = {
            "TransactItems": [
                {"ConditionCheck": self._expects(current)},
                {"Put": idempotency.put(self._table, self._clock(), answer)},
            ],
            "ClientRequestToken": self._token(),
        }
        try:
            transaction.send(self._client, request, budget)
        except transaction.Lost as lost:
            raise StoreUnavailable(
                f"the write changed nothing, but its Idempotency-Key could not be recorded ({lost.cause}); "
                "a retry with the same Idempotency-Key is safe"
            ) from lost

    def _put_mirror_back(
        self, current: _Current, write: Write, attempt: int, budget: transaction.Budget
    ) -> ChangeResult:
        """An accepted write that changes nothing while a migration expands and its earlier item is missing: that
        item is put back as the later item's mirror, at the later item's version (a mirror is not a version of its
        own: no audit record), in one transaction conditioned on the later item being as read; with an
        Idempotency-Key, its answer is remembered in the same transaction. A cancelled one is a conflict (re-read
        and decided again); a lost answer is a 503, and a retry is safe (it finds the mirror back, or puts it)."""
        seam = current.seam
        live = current.target_raw if current.target_raw is not None else current.raw
        if seam is None:
            raise StoreFault("a mirror is put back only while a migration expands")
        items = [
            {"ConditionCheck": self._in_table(seam.still_live(live))},
            self._in_table_item(seam.mirror(None, live)),
        ]
        if write.idempotency is not None:
            answer = {"version": current.version, "applied": False, "restored": True, "mirrored": True}
            items.append({"Put": write.idempotency.put(self._table, self._clock(), answer)})
        try:
            transaction.send(self._client, {"TransactItems": items, "ClientRequestToken": self._token()}, budget)
        except transaction.Lost as lost:
            raise StoreUnavailable(
                f"{seam.source} was being put back as {seam.target}'s mirror, but DynamoDB's answer was lost "
                f"({lost.cause}); a retry is safe"
            ) from lost
        logger.warning(
            f"{seam.source} was missing while the migration expands: put back as {seam.target}'s mirror",
            version=current.version,
            kind=write.kind,
            actor=write.actor,
        )
        return self._result(current.snapshot, applied=False, attempts=attempt, restored=True)

    def _record(
        self,
        version: int,
        now: float,
        write: Write,
        diff: Mapping[str, Mapping[str, Any]],
        raw: Mapping[str, Any],
        token: str,
        shape: Declarations | None = None,
    ) -> dict[str, Any]:
        """``version``'s audit record: the state it holds is ``raw``'s flags as ``shape`` (by default this store's
        declarations) declares them, and the maintenance bookkeeping."""
        kept = (*(shape if shape is not None else self._declarations), *BOOKKEEPING_IN_STATE)
        return audit_item(
            version=version,
            now=now,
            actor=write.actor,
            reason=write.reason,
            kind=write.kind,
            diff=diff,
            state={name: raw[name] for name in kept if name in raw},
            token=token,
            retention_seconds=self._retention_seconds,
            extra=write.extra_audit or None,
        )

    def _put(self, item: dict[str, Any]) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY},
        }

    def _committed(self, version: int, token: str, budget: transaction.Budget) -> bool | None:
        """Whether the transaction with ``token`` wrote ``version``: True, False (another write did), or None
        (no record of that version yet, or no time or way to read it)."""
        if not budget.allows():
            return None
        try:
            item = self._get(audit_key(version))
        except (StoreUnavailable, StoreFault):
            return None
        if item is None:
            return None
        return bool(item.get(TOKEN_ATTR, {}).get("S") == token)

    def _replay(self, idempotency: Idempotency) -> ChangeResult | None:
        """The answer an earlier request with the same Idempotency-Key got, or None when the key is new (or
        expired): the state right after the version it answered with, a no-op's included."""
        answer = idempotency.remembered(self._get(idempotency.key), self._clock())
        if answer is None:
            return None
        version, applied, restored = int(answer["version"]), bool(answer["applied"]), bool(answer.get("restored"))
        outcome: dict[str, Any] = {"applied": applied, "restored": restored, "attempts": 0, "replayed": True}
        record = self._get(audit_key(max(version, 1)))
        try:
            raw = self._state_from(record, version)
        except VersionNotFound:  # no record of it yet (a no-op at version 0) or none kept: today's state
            return self._result(self.current(), **outcome)
        if (applied or restored) and record is not None and not answer.get("mirrored"):  # a mirror: no version
            outcome["changed"] = audit_record(record)["changes"]
        written = (record or {}).get("item", {}).get("S", SINGLETON_SK)
        if written != self._sort_key:  # a version in a later item's shape: seen as this writer's readers see it
            item = self._get(singleton_key(self._sort_key))
            seam = self._seam_of(item) if item is not None else None
            if seam is not None and seam.for_source and written == seam.target:
                raw = seam.view(raw)
        return self._result(self._snapshot(raw), **outcome)

    # -- history and revert ------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The DynamoDB client this store writes with: what reads beside its records use (the same table, the same
        retries)."""
        return self._client

    @property
    def audit_retention_seconds(self) -> int:
        return self._retention_seconds

    @property
    def table_name(self) -> str:
        return self._table

    def history(
        self, limit: int = DEFAULT_HISTORY_LIMIT, cursor: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Audit records newest first, ``limit`` at a time; ``cursor`` is the opaque token of the last page.

        One record more than asked is read, so the last page never hands out a cursor to an empty page.
        """
        if not 1 <= limit <= MAX_HISTORY_LIMIT:
            raise InvalidRequest(f"'limit' must be between 1 and {MAX_HISTORY_LIMIT}", rule="limit")
        params = audit_query(self._table, Limit=limit + 1)
        if cursor is not None:
            params["ExclusiveStartKey"] = audit_key(decode_cursor(cursor))
        items = self._call("query", **params).get("Items", [])
        page = items[:limit]
        next_cursor = encode_cursor(record_version(page[-1])) if len(items) > limit else None
        return [audit_record(item) for item in page], next_cursor

    def _whole_revert(
        self, seam: Seam | None, state: Mapping[str, Any], recorded: Mapping[str, Any], target: Any
    ) -> None:
        """A revert through a writer configured for the earlier item writes what that item can express: refused
        when the version reverted to differs from now in a flag it cannot hold (added or converted away by the
        migration), which the revert would leave as it is while its record said it reverted."""
        if seam is None or not seam.for_source or target is None:
            return
        carried = {seam.target_name(name) for name in state if name in seam.source_declarations}
        then = Snapshot.from_item(recorded, seam.target_declarations, fetched_at=0).values
        now = Snapshot.from_item(target, seam.target_declarations, fetched_at=0).values
        left = sorted(name for name in seam.target_declarations if name not in carried and then[name] != now[name])
        if left:
            raise seam.refused(
                f"a revert through a writer configured for {seam.source} would leave {left} as they are "
                f"({seam.source} cannot hold them): revert through {seam.target}'s writer"
            )

    def _in_shape(
        self, version: int, record: Mapping[str, Any] | None, state: dict[str, Any], seam: Seam | None
    ) -> dict[str, Any]:
        """``version``'s recorded ``state`` in the shape this writer decides on (through ``seam`` for a writer
        configured for the earlier item), when it was written in the shape the flags are in now. A version written
        in another shape (before a migration) is refused: a revert never crosses a migration."""
        written = (record or {}).get("item", {}).get("S", SINGLETON_SK)
        now_in = seam.target if seam is not None else self._sort_key
        if written == now_in:
            return seam.view(state) if seam is not None and seam.for_source else state
        # the migration between the two shapes: into the flags' item now, or (rolled back) into the version's
        migration = self._get(migration_key(now_in)) or self._get(migration_key(written)) or {}
        at = int(migration.get("migrated_at", {}).get("N", "0"))
        outcome = migration.get("state", {}).get("S", EXPANDING)
        between = f"{migration.get('source', {}).get('S')} -> {migration.get('target', {}).get('S')}"
        way_back = {
            EXPANDING: "roll the migration back instead (docs/lifecycle.md)",
            FINALISED: "change the flags to the values wanted",
            ROLLED_BACK: "the migration was rolled back: change the flags to the values wanted",
        }.get(outcome, "change the flags to the values wanted")
        raise FlagsMigrated(
            f"version {version} was written in {written}'s shape and the flags are now in {now_in}'s (the migration "
            f"{between} at version {at}, {outcome}): a revert never crosses a migration; {way_back}",
            migrated_to=migration.get("target", {}).get("S", now_in),
            migrated_at=at,
        )

    def _state_from(self, record: Mapping[str, Any] | None, version: int) -> dict[str, Any]:
        """The item's attributes right after ``version`` was written, from ``record`` (``version``'s own, or version
        1's for version 0: the seeded state is version 1's with its old values put back)."""
        if record is None or STATE_ATTR not in record:
            what = "version 1's record, which holds it," if version == 0 else f"version {version}"
            raise VersionNotFound(
                f"cannot revert to version {version}: {what} has no audit record (never written, or expired "
                "from the trail)",
                version=version,
            )
        state = dict(record[STATE_ATTR]["M"])
        if version == 0:
            for attr in BOOKKEEPING_IN_STATE:
                state.pop(attr, None)
            for name, old in record.get("old", {}).get("M", {}).items():
                if decode_plain(old) is None:
                    state.pop(name, None)
                else:
                    state[name] = old
        return {**singleton_key(self._sort_key), **state, VERSION_ATTR: {"N": str(version)}}

    def _declared_values(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The declared flags a recorded state holds, decoded by their declared type (not yet validated)."""
        values: dict[str, Any] = {}
        for name, spec in self._declarations.items():
            if name in state:
                try:
                    values[name] = decode(spec, state[name])
                except ValueError as exc:
                    raise InvalidValue(
                        f"the recorded value of '{name}' is not a {spec.type}", flag=name, rule="type"
                    ) from exc
        return values


def _superseded(
    item: str, successor: str, read: Mapping[str, Any], pointer: str, now: str, why: str, *, drop_pointer: bool
) -> dict[str, Any]:
    """One flags item of a migration marked superseded by the other (finalised: the earlier by the later; rolled
    back: the later by the earlier, no longer naming it), conditioned on it being as read and carrying ``pointer``."""
    return {
        "Key": singleton_key(item),
        "UpdateExpression": "SET #by = :by, #at = :at, #why = :why" + (" REMOVE #p" if drop_pointer else ""),
        "ConditionExpression": "#v = :v AND attribute_exists(#p) AND attribute_not_exists(#by)",
        "ExpressionAttributeNames": {
            "#v": VERSION_ATTR,
            "#p": pointer,
            "#by": SUPERSEDED_BY_ATTR,
            "#at": SUPERSEDED_AT_ATTR,
            "#why": SUPERSEDED_REASON_ATTR,
        },
        "ExpressionAttributeValues": {
            ":v": read[VERSION_ATTR],
            ":by": {"S": successor},
            ":at": {"S": now},
            ":why": {"S": why},
        },
    }


def _end_mirror(seam: Seam, target: Mapping[str, Any]) -> dict[str, Any]:
    """The later item no longer names the earlier one (writes stop mirroring), conditioned on it being as read."""
    return {
        "Key": singleton_key(seam.target),
        "UpdateExpression": "REMOVE #from",
        "ConditionExpression": "#v = :v AND attribute_exists(#from)",
        "ExpressionAttributeNames": {"#v": VERSION_ATTR, "#from": MIGRATED_FROM_ATTR},
        "ExpressionAttributeValues": {":v": target[VERSION_ATTR]},
    }


def _drop_pointer(seam: Seam, source: Mapping[str, Any]) -> dict[str, Any]:
    """The earlier item read again by its readers: the pointer and its mapping removed, conditioned on it being as
    read and still pointing."""
    return {
        "Key": singleton_key(seam.source),
        "UpdateExpression": "REMOVE #to, #map",
        "ConditionExpression": "#v = :v AND attribute_exists(#to) AND attribute_not_exists(#by)",
        "ExpressionAttributeNames": {
            "#v": VERSION_ATTR,
            "#to": MIGRATED_TO_ATTR,
            "#map": MIGRATION_MAPPING_ATTR,
            "#by": SUPERSEDED_BY_ATTR,
        },
        "ExpressionAttributeValues": {":v": source[VERSION_ATTR]},
    }


def _ended_record(seam: Seam, outcome: str, now: str, actor: str, reason: str) -> dict[str, Any]:
    """The migration's record: its outcome (finalised, rolled back), when, by whom, why."""
    return {
        "Key": migration_key(seam.target),
        "UpdateExpression": "SET #state = :done, #at = :at, #by = :by, #why = :why",
        "ConditionExpression": "#state = :expanding",
        "ExpressionAttributeNames": {
            "#state": "state",
            "#at": "ended_at",
            "#by": "ended_by",
            "#why": "end_reason",
        },
        "ExpressionAttributeValues": {
            ":done": {"S": outcome},
            ":expanding": {"S": EXPANDING},
            ":at": {"S": now},
            ":by": {"S": actor},
            ":why": {"S": reason},
        },
    }
