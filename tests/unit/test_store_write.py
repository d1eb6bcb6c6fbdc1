"""FlagStore's write path on a botocore Stubber: what it sends, in which order, and how it retries.

The Stubber checks each call's operation and parameters in order, so these tests pin the protocol: a
consistent GetItem before every attempt, one transaction per attempt built on the version just read, a
jittered and capped back-off between attempts, and no call at all where the store must refuse first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from singleton_flags.codec import encode_plain
from singleton_flags.declarations import Declarations, parse_declarations
from singleton_flags.keys import AUDIT_PK, PARTITION_KEY, SORT_KEY, TTL_ATTR, audit_key, audit_sort_key, singleton_key
from singleton_flags_service.api.http import error_headers
from singleton_flags_service.api.requests import MAX_REASON_LENGTH, validate_reason
from singleton_flags_service.contract import DECLARATIONS_FILE
from singleton_flags_service.errors import (
    InvalidRequest,
    InvalidValue,
    ItemTooLarge,
    PreconditionFailed,
    StoreFault,
    StoreUnavailable,
    VersionNotFound,
    WriteConflict,
)
from singleton_flags_service.writes.audit import decode_cursor, encode_cursor
from singleton_flags_service.writes.store import MAX_HISTORY_LIMIT, FlagStore, Ownership
from singleton_flags_service.writes.transaction import MAX_RESENDS
from tests.support.unit import START, Clock, flags_item

TABLE = "flags"
CONSISTENT_READ = {"TableName": TABLE, "Key": singleton_key(), "ConsistentRead": True}


class Capture:
    """A Stubber expected-parameter that matches anything and keeps what it was compared with."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def __eq__(self, other: object) -> bool:
        self.values.append(other)
        return True

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]


class Store:
    """A FlagStore on a stubbed client, with its sleeps and retry notifications recorded."""

    def __init__(self, declarations: Declarations, stub: Stubber, client: Any, **options: Any) -> None:
        self.declarations = declarations
        self.stub = stub
        self.sleeps: list[float] = []
        self.retries: list[int] = []
        self.transactions = Capture()
        self.tokens = Capture()
        options.setdefault("clock", Clock())
        self.store = FlagStore(
            client,
            TABLE,
            declarations,
            sleep=self.sleeps.append,
            jitter=lambda: 0.5,
            on_retry=self.retries.append,
            **options,
        )

    def expect_read(self, version: int, **values: Any) -> None:
        self.stub.add_response("get_item", {"Item": flags_item(self.declarations, version, **values)}, CONSISTENT_READ)

    def expect_cancelled(self, *reasons: str, code: str = "TransactionCanceledException") -> None:
        self.stub.add_client_error(
            "transact_write_items",
            service_error_code=code,
            http_status_code=400,
            modeled_fields={"CancellationReasons": [{"Code": reason} for reason in reasons]} if reasons else None,
            expected_params={"TransactItems": self.transactions, "ClientRequestToken": self.tokens},
        )

    def expect_committed(self) -> None:
        self.stub.add_response(
            "transact_write_items", {}, {"TransactItems": self.transactions, "ClientRequestToken": self.tokens}
        )

    def sent(self, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The Update and the (last) Put of the ``index``-th transaction."""
        items = self.transactions.values[index]
        return items[0]["Update"], items[-1]["Put"]


@pytest.fixture
def client() -> Any:
    return boto3.client("dynamodb", region_name="us-east-1")


@pytest.fixture
def stub(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def store(declarations: Declarations, stub: Stubber, client: Any) -> Store:
    return Store(declarations, stub, client)


def conditioned_on(update: dict[str, Any]) -> int:
    assert update["ConditionExpression"] == "#version = :current AND attribute_not_exists(#superseded)"
    return int(update["ExpressionAttributeValues"][":current"]["N"])


# -- retries --------------------------------------------------------------------------------------------


def test_a_conflict_is_retried_on_a_fresh_consistent_read(store: Store) -> None:
    # Given version 1, then a concurrent writer's version 2 cancelling the first attempt
    store.expect_read(1)
    store.expect_cancelled("ConditionalCheckFailed", "None")
    store.expect_read(2, ai_search_enabled=True)
    store.expect_committed()
    # When a change is made
    result = store.store.change({"signup_enabled": False}, actor="a", reason="r")
    # Then the second attempt is built on the re-read version 2 and becomes version 3
    first, second = store.sent(0), store.sent(1)
    assert conditioned_on(first[0]) == 1 and first[1]["Item"][SORT_KEY] == {"S": audit_sort_key(2)}
    assert conditioned_on(second[0]) == 2 and second[1]["Item"][SORT_KEY] == {"S": audit_sort_key(3)}
    assert (result.applied, result.attempts, result.snapshot.version) == (True, 2, 3)
    assert result.snapshot.values["ai_search_enabled"] is True  # the concurrent write is kept
    assert store.retries == [1] and store.sleeps == [0.5 * 0.025]


def test_a_retry_finds_the_value_already_written_and_does_nothing(store: Store) -> None:
    # Given the first attempt cancelled by a writer who set the same value
    store.expect_read(1)
    store.expect_cancelled("ConditionalCheckFailed", "None")
    store.expect_read(2, signup_enabled=False)
    # When the store re-reads / Then there is nothing left to write: no second transaction, not applied
    result = store.store.change({"signup_enabled": False}, actor="a", reason="r")
    assert (result.applied, result.attempts, result.snapshot.version) == (False, 2, 2)
    assert len(store.transactions.values) == 1


def test_retries_are_bounded_with_a_capped_jittered_backoff(
    declarations: Declarations, stub: Stubber, client: Any
) -> None:
    # Given every transaction cancelled
    store = Store(declarations, stub, client, max_attempts=7, backoff_base=0.025, backoff_max=0.4)
    for version in range(1, 8):
        store.expect_read(version)
        store.expect_cancelled("ConditionalCheckFailed", "None")
    # When a change is made / Then 7 attempts, 6 sleeps doubling from 25 ms up to the 400 ms cap (x jitter 0.5)
    with pytest.raises(WriteConflict) as refused:
        store.store.change({"signup_enabled": False}, actor="a", reason="r")
    assert refused.value.details["attempts"] == 7 and refused.value.retry_after >= 1
    assert store.retries == [1, 2, 3, 4, 5, 6]
    assert store.sleeps == [0.5 * delay for delay in (0.025, 0.05, 0.1, 0.2, 0.4, 0.4)]


@pytest.mark.parametrize(
    ("code", "reasons"),
    [
        ("TransactionCanceledException", ("None", "ConditionalCheckFailed")),  # the audit key already taken
        ("TransactionCanceledException", ("TransactionConflict", "None")),
        ("TransactionCanceledException", ()),
        ("TransactionConflictException", ()),
    ],
    ids=["audit-key-taken", "transaction-conflict-reason", "no-reasons", "transaction-conflict"],
)
def test_these_cancellations_count_as_conflicts(store: Store, code: str, reasons: tuple[str, ...]) -> None:
    store.expect_read(1)
    store.expect_cancelled(*reasons, code=code)
    store.expect_read(1)
    store.expect_committed()
    result = store.store.change({"signup_enabled": False}, actor="a", reason="r")
    assert (result.applied, result.attempts) == (True, 2)


def test_a_throttled_transaction_is_resent_identically_then_is_a_503(store: Store) -> None:
    # Given every send of the transaction cancelled by throttling (DynamoDB applied nothing)
    store.expect_read(1)
    for _ in range(1 + MAX_RESENDS):
        store.expect_cancelled("ThrottlingError", "None")
    # When a change is made / Then the same request, same token, is resent a bounded number of times, then 503
    with pytest.raises(StoreUnavailable):
        store.store.change({"signup_enabled": False}, actor="a", reason="r")
    assert len(set(store.tokens.values)) == 1 and len(store.tokens.values) == 1 + MAX_RESENDS
    assert all(items == store.transactions.values[0] for items in store.transactions.values)
    assert store.retries == []


def test_a_cancellation_for_a_validation_error_is_our_fault_not_retried(store: Store) -> None:
    # Given DynamoDB refusing the transaction's content (no client input passes validation into that)
    store.expect_read(1)
    store.expect_cancelled("None", "ValidationError")
    # When a change is made / Then a 500-class fault, sent once, never retried as a conflict or an outage
    with pytest.raises(StoreFault) as refused:
        store.store.change({"signup_enabled": False}, actor="a", reason="r")
    assert int(refused.value.status) == 500 and refused.value.code == "INTERNAL_ERROR"
    assert len(store.tokens.values) == 1 and store.retries == []


def test_with_an_expected_version_a_cancellation_is_412_after_one_attempt(store: Store) -> None:
    # Given the flags at the expected version 4, and the transaction cancelled by a concurrent writer (now 5)
    store.expect_read(4)
    store.expect_cancelled("ConditionalCheckFailed", "None")
    store.expect_read(5)
    # When the conditional change is made / Then no retry: 412 with the version read afterwards
    with pytest.raises(PreconditionFailed) as refused:
        store.store.change({"signup_enabled": False}, actor="a", reason="r", expected_version=4)
    assert refused.value.current_version == 5 and error_headers(refused.value) == {"ETag": '"5"'}
    assert store.retries == []


def test_a_stale_expected_version_is_refused_before_any_transaction(store: Store) -> None:
    store.expect_read(4)
    with pytest.raises(PreconditionFailed) as refused:
        store.store.change({"signup_enabled": False}, actor="a", reason="r", expected_version=3)
    assert refused.value.current_version == 4


def test_a_condition_that_says_no_writes_nothing(store: Store) -> None:
    store.expect_read(1)
    result = store.store.change(
        {"maintenance_mode": True}, actor="a", reason="r", condition=lambda snapshot: snapshot.version == 99
    )
    assert (result.applied, result.snapshot.version) == (False, 1)


# -- what a transaction holds ----------------------------------------------------------------------------


def test_the_audit_record_holds_who_why_when_old_new_state_and_expiry(
    declarations: Declarations, stub: Stubber, client: Any
) -> None:
    clock = Clock()
    store = Store(declarations, stub, client, clock=clock, audit_retention_days=7)
    store.expect_read(1)
    store.expect_committed()
    store.store.change({"api_rate_limit_per_minute": 900}, actor="arn:aws:iam::1:user/a", reason="why")
    _, put = store.sent(0)
    item = put["Item"]
    assert (item[PARTITION_KEY], item[SORT_KEY]) == ({"S": AUDIT_PK}, {"S": audit_sort_key(2)})
    assert (item["actor"], item["reason"], item["kind"]) == (
        {"S": "arn:aws:iam::1:user/a"},
        {"S": "why"},
        {"S": "change"},
    )
    assert item["at"] == {"S": "2023-11-14T22:13:20.000+00:00"}
    assert item[TTL_ATTR] == {"N": str(int(START) + 7 * 86400)}
    assert item["old"] == {"M": {"api_rate_limit_per_minute": {"N": "600"}}}
    assert item["new"] == {"M": {"api_rate_limit_per_minute": {"N": "900"}}}
    assert set(item["state"]["M"]) == set(declarations)
    assert item["state"]["M"]["api_rate_limit_per_minute"] == {"N": "900"}


def test_a_stored_value_of_the_wrong_type_is_rewritten_with_no_old_value(store: Store) -> None:
    # Given signup_enabled stored as a string (unusable: readers get its fallback, false)
    store.expect_read(1, signup_enabled={"S": "yes"})
    store.expect_committed()
    # When false (equal to the fallback served) is written / Then it is written, its old value unknown
    result = store.store.change({"signup_enabled": False}, actor="a", reason="repair")
    assert result.changed == {"signup_enabled": {"old": None, "new": False}}
    _, put = store.sent(0)
    assert put["Item"]["old"] == {"M": {"signup_enabled": {"NULL": True}}}


def test_a_window_taking_maintenance_sets_owner_and_deadline(store: Store) -> None:
    store.expect_read(1)
    store.expect_committed()
    store.store.change(
        {"maintenance_mode": True}, actor="scheduler", reason="window", ownership=Ownership("nightly", START + 60.9)
    )
    update, _ = store.sent(0)
    values = set(map(json.dumps, update["ExpressionAttributeValues"].values()))
    assert json.dumps({"S": "nightly"}) in values and json.dumps({"N": str(int(START + 60))}) in values


def long_text_declarations() -> Declarations:
    document = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
    document["flags"].append(
        {"name": "banner_text", "type": "string", "initial": "", "fallback": "", "max_length": 5000}
    )
    return parse_declarations(document)


def test_a_change_over_4_kb_is_refused_before_any_transaction(stub: Stubber, client: Any) -> None:
    declarations = long_text_declarations()
    store = Store(declarations, stub, client)
    store.stub.add_response("get_item", {"Item": flags_item(declarations, 1)}, CONSISTENT_READ)
    with pytest.raises(ItemTooLarge) as refused:
        store.store.change({"banner_text": "x" * 4000}, actor="a", reason="r")
    assert refused.value.details["size"] > 4096 and refused.value.details["rule"] == "item_size"
    assert store.transactions.values == []


# -- the missing singleton -------------------------------------------------------------------------------


def test_a_missing_singleton_is_restored_from_the_newest_record_in_the_same_transaction(store: Store) -> None:
    # Given no singleton, and an audit trail whose newest record is version 41 (signup off, a rate limit of 900)
    state = {name: encode_plain(value) for name, value in store.declarations.initials().items()}
    state.update(signup_enabled={"BOOL": False}, api_rate_limit_per_minute={"N": "900"})
    store.stub.add_response("get_item", {}, CONSISTENT_READ)
    store.stub.add_response("query", {"Items": [{**audit_key(41), "state": {"M": state}}]})
    store.expect_committed()
    # When a change is made
    result = store.store.change({"ai_search_enabled": True}, actor="a", reason="r")
    # Then one transaction: the whole item written where none exists, the restore as version 42 (41's state),
    # and the change as version 43 on top of it
    update, restore, change = store.transactions.values[0]
    assert update["Update"]["ConditionExpression"] == "attribute_not_exists(#pk)"
    assert restore["Put"]["Item"][SORT_KEY] == {"S": audit_sort_key(42)}
    assert restore["Put"]["Item"]["kind"] == {"S": "restore"}
    assert restore["Put"]["Item"]["state"]["M"] == state
    assert change["Put"]["Item"][SORT_KEY] == {"S": audit_sort_key(43)}
    assert change["Put"]["Item"]["new"] == {"M": {"ai_search_enabled": {"BOOL": True}}}
    assert (result.snapshot.version, result.restored, result.applied) == (43, True, True)
    assert result.snapshot.values["signup_enabled"] is False  # the trail's values, not the initials
    assert result.snapshot.values["api_rate_limit_per_minute"] == 900


# -- validation, history and revert without DynamoDB ------------------------------------------------------


def test_a_reason_is_trimmed_and_bounded() -> None:
    assert validate_reason("  why  ") == "why"
    assert validate_reason("x" * MAX_REASON_LENGTH) == "x" * MAX_REASON_LENGTH
    with pytest.raises(InvalidRequest):
        validate_reason("x" * (MAX_REASON_LENGTH + 1))


@pytest.mark.parametrize("limit", [0, MAX_HISTORY_LIMIT + 1])
def test_history_refuses_a_bad_limit_without_a_query(store: Store, limit: int) -> None:
    with pytest.raises(InvalidRequest) as refused:
        store.store.history(limit=limit)
    assert refused.value.details["rule"] == "limit"


def test_history_starts_after_the_cursor_and_reads_one_record_more_than_a_page(store: Store) -> None:
    # Given records 4, 3 and 2 after the cursor (version 5), and a page of 2
    def record(version: int) -> dict[str, Any]:
        return {
            **audit_key(version),
            "version": {"N": str(version)},
            "actor": {"S": "a"},
            "reason": {"S": "r"},
            "at": {"S": "t"},
            "old": {"M": {}},
            "new": {"M": {}},
            "state": {"M": {}},
        }

    store.stub.add_response(
        "query",
        {"Items": [record(4), record(3), record(2)]},
        {
            "TableName": TABLE,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PARTITION_KEY, "#sk": SORT_KEY},
            "ExpressionAttributeValues": {":pk": {"S": AUDIT_PK}, ":prefix": {"S": "AUDIT#"}},
            "ScanIndexForward": False,
            "Limit": 3,
            "ExclusiveStartKey": audit_key(5),
        },
    )
    # When the page is read / Then two records, and a cursor after the last one shown (a third exists)
    records, cursor = store.store.history(limit=2, cursor=encode_cursor(5))
    assert [r["version"] for r in records] == [4, 3] and decode_cursor(cursor) == 3


@pytest.mark.parametrize("version", [0, 1, 42, 10**11])
def test_a_cursor_round_trips(version: int) -> None:
    assert decode_cursor(encode_cursor(version)) == version


def test_revert_applies_todays_rules_to_old_values(store: Store) -> None:
    # Given version 3's recorded state holds a rate limit the declaration no longer allows
    state = {name: encode_plain(value) for name, value in store.declarations.initials().items()}
    state["api_rate_limit_per_minute"] = {"N": "250000"}
    store.stub.add_response(
        "get_item",
        {"Item": {**audit_key(3), "state": {"M": state}}},
        {"TableName": TABLE, "Key": audit_key(3), "ConsistentRead": True},
    )
    store.stub.add_response("get_item", {"Item": flags_item(store.declarations, 4)}, CONSISTENT_READ)
    # When it is reverted to / Then refused, naming the flag and the rule; nothing is written
    with pytest.raises(InvalidValue) as refused:
        store.store.revert(3, actor="a", reason="r")
    assert (refused.value.details["flag"], refused.value.details["rule"]) == ("api_rate_limit_per_minute", "max")


def test_revert_to_version_zero_reads_version_ones_record_and_is_not_found_without_it(store: Store) -> None:
    # Given no record of version 1 (expired) / When version 0 is asked for / Then 404, naming what is missing
    store.stub.add_response("get_item", {}, {"TableName": TABLE, "Key": audit_key(1), "ConsistentRead": True})
    with pytest.raises(VersionNotFound, match="version 1's record"):
        store.store.revert(0, actor="a", reason="r")


def test_a_negative_version_is_refused_without_a_read(store: Store) -> None:
    with pytest.raises(InvalidRequest):
        store.store.revert(-1, actor="a", reason="r")
