"""The superseded marker's write: the flags item of a replaced table says what replaced it.

Consumers bound through SSM resolve the table's ARN when they deploy; after a table replacement they go on reading
the retained old table. Marking its item superseded (``keys.SUPERSEDED_BY_ATTR``, with when and why) makes every
reader of it serve its declared fallbacks and say why, and refuses operators' writes to it, naming the successor.

The seed finds the old table where the stage published it: the ``table-arn`` discovery parameter, read before the
stack overwrites it (the parameter depends on the seed). The marker is set by one conditioned ``UpdateItem``:
only on an item that exists and is not marked yet (idempotent: a second run changes nothing), never its values,
its version or its audit trail. Anything that stops it (no parameter, another account or region, no access) is
logged with the command that marks the item by hand, and never fails the deploy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from singleton_flags.codec import iso_time
from singleton_flags.keys import (
    PARTITION_KEY,
    SINGLETON_SK,
    SUPERSEDED_AT_ATTR,
    SUPERSEDED_BY_ATTR,
    SUPERSEDED_REASON_ATTR,
    singleton_key,
)
from singleton_flags_service.observability import logger

__all__ = ["MARKED", "NOTHING_TO_MARK", "NOT_MARKED", "Outcome", "mark_replaced_table", "mark_superseded"]

MARKED = "marked"  # the old item now says it is superseded
NOTHING_TO_MARK = "nothing-to-mark"  # no other table published, no item in it, or already marked
NOT_MARKED = "not-marked"  # an old table is known but could not be marked: the log says how to, by hand


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str
    detail: str
    old_table_arn: str | None = None


def marker_update(
    table_name: str, successor: str, reason: str, now: float, sort_key: str = SINGLETON_SK
) -> dict[str, Any]:
    """The ``UpdateItem`` request that marks ``table_name``'s flags item superseded by ``successor``: only an item
    that exists and carries no marker yet (a marker already set is kept, with its successor and time)."""
    return {
        "TableName": table_name,
        "Key": singleton_key(sort_key),
        "UpdateExpression": "SET #by = :by, #at = :at, #why = :why",
        "ConditionExpression": "attribute_exists(#pk) AND attribute_not_exists(#by)",
        "ExpressionAttributeNames": {
            "#pk": PARTITION_KEY,
            "#by": SUPERSEDED_BY_ATTR,
            "#at": SUPERSEDED_AT_ATTR,
            "#why": SUPERSEDED_REASON_ATTR,
        },
        "ExpressionAttributeValues": {
            ":by": {"S": successor},
            ":at": {"S": iso_time(now)},
            ":why": {"S": reason},
        },
    }


def mark_superseded(client: Any, table_name: str, successor: str, reason: str, now: float) -> bool:
    """Mark the flags item superseded; True when this call set the marker, False when there was nothing to mark
    (no item, or already marked). Other errors propagate."""
    try:
        client.update_item(**marker_update(table_name, successor, reason, now))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            return False
        raise
    return True


def manual_command(old_table_arn: str, successor: str) -> str:
    """The AWS CLI command that sets the marker by hand (what docs/operations.md shows)."""
    region = _arn_parts(old_table_arn)[0] or "<region>"
    table = old_table_arn.rpartition("table/")[2] or "<old-table-name>"
    return (
        f"aws dynamodb update-item --region {region} --table-name {table} "
        f'--key \'{{"PK":{{"S":"SETTINGS#APP"}},"SK":{{"S":"{SINGLETON_SK}"}}}}\' '
        '--update-expression "SET superseded_by = :by, superseded_at = :at, superseded_reason = :why" '
        '--condition-expression "attribute_exists(PK) AND attribute_not_exists(superseded_by)" '
        f'--expression-attribute-values \'{{":by":{{"S":"{successor}"}},":at":{{"S":"<now, RFC 3339>"}},'
        '":why":{"S":"table replaced"}}\''
    )


def _arn_parts(arn: str) -> tuple[str, str]:
    """(region, account) of an ARN, empty strings when it is not one."""
    parts = arn.split(":")
    return (parts[3], parts[4]) if len(parts) >= 6 and parts[0] == "arn" else ("", "")


def mark_replaced_table(
    ssm: Any,
    dynamodb: Any,
    *,
    parameter_name: str,
    own_table_arn: str,
    reason: str,
    now: float,
) -> Outcome:
    """On a deploy: when the stage's ``table-arn`` parameter names another table than ``own_table_arn``, mark that
    table's flags item superseded by this one. Never raises: what it could not do is logged and answered."""
    try:
        published = ssm.get_parameter(Name=parameter_name)["Parameter"]["Value"]
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ParameterNotFound":
            return _said(Outcome(NOTHING_TO_MARK, f"no table published at {parameter_name}: a first deploy"))
        return _said(Outcome(NOT_MARKED, f"cannot read {parameter_name} ({code}): a replaced table is not marked"))
    except BotoCoreError as exc:
        return _said(Outcome(NOT_MARKED, f"cannot read {parameter_name} ({exc}): a replaced table is not marked"))
    if not isinstance(published, str) or published == own_table_arn:
        return _said(Outcome(NOTHING_TO_MARK, "the published table is this one"))
    if not published.startswith("arn:") or "table/" not in published:
        return _said(Outcome(NOT_MARKED, f"{parameter_name} holds no table ARN ({published!r})"))
    if _arn_parts(published) != _arn_parts(own_table_arn):
        return _said(
            Outcome(NOT_MARKED, "the published table is in another account or region: mark it by hand", published)
        )
    old_name = published.rpartition("table/")[2]
    try:
        marked = mark_superseded(dynamodb, old_name, own_table_arn, reason, now)
    except (ClientError, BotoCoreError) as exc:
        code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else str(exc)
        return _said(Outcome(NOT_MARKED, f"cannot mark {old_name} ({code}): mark it by hand", published))
    if not marked:
        return _said(Outcome(NOTHING_TO_MARK, f"{old_name} holds no flags item, or it is already marked", published))
    return _said(Outcome(MARKED, f"{old_name}'s flags item is marked superseded by {own_table_arn}", published))


def _said(outcome: Outcome) -> Outcome:
    if outcome.status == NOT_MARKED:
        logger.warning(
            f"a replaced flags table is not marked superseded: {outcome.detail}",
            old_table_arn=outcome.old_table_arn,
            by_hand=manual_command(outcome.old_table_arn, "<new table ARN>") if outcome.old_table_arn else None,
        )
    else:
        logger.info(f"superseded marker: {outcome.detail}", status=outcome.status, old_table_arn=outcome.old_table_arn)
    return outcome
