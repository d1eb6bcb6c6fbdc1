"""Names of the table's keys and of the singleton's bookkeeping attributes: one place, literals only."""

__all__ = [
    "AUDIT_PK",
    "AUDIT_SK_PREFIX",
    "AUDIT_VERSION_DIGITS",
    "BOOKKEEPING_ATTRS",
    "CHANGE_REQUEST_PK",
    "CHANGE_REQUEST_SK_PREFIX",
    "GUARD_PK",
    "GUARD_SK_PREFIX",
    "IDEMPOTENCY_PK_PREFIX",
    "IDEMPOTENCY_SK",
    "MAINTENANCE_DEADLINE_ATTR",
    "MAINTENANCE_FLAG",
    "MAINTENANCE_OWNER_ATTR",
    "MIGRATED_FROM_ATTR",
    "MIGRATED_TO_ATTR",
    "MIGRATION_MAPPING_ATTR",
    "MIGRATION_PK",
    "MIGRATION_SK_PREFIX",
    "PARTITION_KEY",
    "PROTECTION_PK",
    "SCHEDULE_PK",
    "SCHEDULE_SK_PREFIX",
    "SINGLETON_PK",
    "SINGLETON_SK",
    "SORT_KEY",
    "SUPERSEDED_AT_ATTR",
    "SUPERSEDED_BY_ATTR",
    "SUPERSEDED_REASON_ATTR",
    "TTL_ATTR",
    "UPDATED_AT_ATTR",
    "UPDATED_BY_ATTR",
    "VERSION_ATTR",
    "audit_key",
    "audit_sort_key",
    "audit_version",
    "change_request_key",
    "guard_key",
    "guard_sort_key",
    "guard_version",
    "idempotency_key",
    "migration_key",
    "schedule_key",
    "singleton_key",
]

PARTITION_KEY = "PK"
SORT_KEY = "SK"

SINGLETON_PK = "SETTINGS#APP"
SINGLETON_SK = "FLAGS#V1"  # V1 is a migration seam: a new shape is written as FLAGS#V2, readers switch by config
# Audit records live in a partition of their own: IAM's dynamodb:LeadingKeys condition names partition keys only,
# so a read grant on SINGLETON_PK reaches the flags and never the trail (actors, reasons).
AUDIT_PK = "AUDIT#APP"
AUDIT_SK_PREFIX = "AUDIT#"
AUDIT_VERSION_DIGITS = 12  # AUDIT#000000000042 sorts by version
IDEMPOTENCY_PK_PREFIX = "IDEMPOTENCY#"  # + sha256 of (actor, Idempotency-Key): one partition per key
IDEMPOTENCY_SK = "IDEMPOTENCY"
# Guards of guarded changes: one item per guarded version, in a partition of their own (never on the read path).
GUARD_PK = "GUARD#APP"
GUARD_SK_PREFIX = "GUARD#"  # + the guarded version, AUDIT_VERSION_DIGITS digits: newest first in a Query
# Scheduled changes: one item per schedule in a partition of its own (never on the read path).
SCHEDULE_PK = "SCHEDULE#APP"
SCHEDULE_SK_PREFIX = "SCHEDULE#"
# Change requests of protected flags: one item per request in a partition of its own (never on the read path).
CHANGE_REQUEST_PK = "CHANGE_REQUEST#APP"
CHANGE_REQUEST_SK_PREFIX = "CHANGE_REQUEST#"
# The protection the declarations deployed last, and the seed's records of protection lowered (its own partition).
PROTECTION_PK = "PROTECTION#APP"

VERSION_ATTR = "schema_version"
UPDATED_AT_ATTR = "updated_at"
UPDATED_BY_ATTR = "updated_by"
MAINTENANCE_OWNER_ATTR = "maintenance_owner"  # name of the window that switched maintenance on, if any
MAINTENANCE_DEADLINE_ATTR = "maintenance_deadline"  # epoch seconds after which that window is over
TTL_ATTR = "expires_at"
# The superseded marker: the item is no longer the live one. Set once, by the seed of the table that replaced it
# or by an operator (never by a flag write), and honoured by every reader (the declared fallbacks, and the cause
# logged) and by every operator write (refused, naming the successor). The same marker retires an item in place
# (FLAGS#V1 superseded by FLAGS#V2 in the same table).
SUPERSEDED_BY_ATTR = "superseded_by"  # what replaces it: the new table's ARN, or the key of the item that does
SUPERSEDED_AT_ATTR = "superseded_at"  # when it was marked (RFC 3339, UTC)
SUPERSEDED_REASON_ATTR = "superseded_reason"  # why, in words
# The migration pointer: the item's flags now live in a later item of the same partition (FLAGS#V1 -> FLAGS#V2),
# written with the mapping between the two shapes (``singleton_flags.migration``, a JSON text). A reader configured
# for this item follows it (one GetItem more per cache age) and serves the later item's values expressed under its
# own declarations. The superseded marker wins over it: a superseded item is never followed.
MIGRATED_TO_ATTR = "migrated_to"  # the later item's sort key
MIGRATION_MAPPING_ATTR = "migration_mapping"  # the mapping from this item's shape to the later one's
# The later item names where it came from while the migration expands (writers mirror it into the earlier item);
# finalising removes it. Readers ignore it.
MIGRATED_FROM_ATTR = "migrated_from"
# A migration's own record, for writers only (the mapping and both declarations): its own partition, never read by
# a reader (the reader policy's LeadingKeys name the flags' partition alone).
MIGRATION_PK = "MIGRATION#APP"
MIGRATION_SK_PREFIX = "MIGRATION#"  # + the later item's sort key

MAINTENANCE_FLAG = "maintenance_mode"

BOOKKEEPING_ATTRS = frozenset(
    {
        PARTITION_KEY,
        SORT_KEY,
        VERSION_ATTR,
        UPDATED_AT_ATTR,
        UPDATED_BY_ATTR,
        MAINTENANCE_OWNER_ATTR,
        MAINTENANCE_DEADLINE_ATTR,
        TTL_ATTR,
        SUPERSEDED_BY_ATTR,
        SUPERSEDED_AT_ATTR,
        SUPERSEDED_REASON_ATTR,
        MIGRATED_TO_ATTR,
        MIGRATION_MAPPING_ATTR,
        MIGRATED_FROM_ATTR,
    }
)


def singleton_key(sort_key: str = SINGLETON_SK) -> dict[str, dict[str, str]]:
    """The full primary key of an item of the singleton's partition (by default the singleton itself), in
    DynamoDB's low-level attribute-value form."""
    return {PARTITION_KEY: {"S": SINGLETON_PK}, SORT_KEY: {"S": sort_key}}


def migration_key(target: str) -> dict[str, dict[str, str]]:
    """The full primary key of the record of the migration to the flags item ``target`` (``FLAGS#V2``)."""
    return {PARTITION_KEY: {"S": MIGRATION_PK}, SORT_KEY: {"S": MIGRATION_SK_PREFIX + target}}


def audit_key(version: int) -> dict[str, dict[str, str]]:
    """The full primary key of ``version``'s audit record."""
    return {PARTITION_KEY: {"S": AUDIT_PK}, SORT_KEY: {"S": audit_sort_key(version)}}


def idempotency_key(digest: str) -> dict[str, dict[str, str]]:
    """The full primary key of the item that remembers one Idempotency-Key's outcome."""
    return {PARTITION_KEY: {"S": IDEMPOTENCY_PK_PREFIX + digest}, SORT_KEY: {"S": IDEMPOTENCY_SK}}


def schedule_key(schedule_id: str) -> dict[str, dict[str, str]]:
    """The full primary key of one scheduled change's item."""
    return {PARTITION_KEY: {"S": SCHEDULE_PK}, SORT_KEY: {"S": SCHEDULE_SK_PREFIX + schedule_id}}


def change_request_key(request_id: str) -> dict[str, dict[str, str]]:
    """The full primary key of one change request's item."""
    return {PARTITION_KEY: {"S": CHANGE_REQUEST_PK}, SORT_KEY: {"S": CHANGE_REQUEST_SK_PREFIX + request_id}}


def audit_sort_key(version: int) -> str:
    return f"{AUDIT_SK_PREFIX}{version:0{AUDIT_VERSION_DIGITS}d}"


def audit_version(sort_key: str) -> int:
    """The version an ``AUDIT#...`` sort key records (the inverse of ``audit_sort_key``)."""
    return int(sort_key.removeprefix(AUDIT_SK_PREFIX))


def guard_sort_key(version: int) -> str:
    return f"{GUARD_SK_PREFIX}{version:0{AUDIT_VERSION_DIGITS}d}"


def guard_key(version: int) -> dict[str, dict[str, str]]:
    """The full primary key of the guard of the change that wrote ``version``."""
    return {PARTITION_KEY: {"S": GUARD_PK}, SORT_KEY: {"S": guard_sort_key(version)}}


def guard_version(sort_key: str) -> int:
    """The guarded version a ``GUARD#...`` sort key names (the inverse of ``guard_sort_key``)."""
    return int(sort_key.removeprefix(GUARD_SK_PREFIX))
