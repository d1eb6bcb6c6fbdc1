"""The table and the seed, as synthesized; the seed's exact call replayed with boto3 against moto."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import template_tools as tt
from infra_support import EXTRA_FLAG, Synth

from flags.keys import SINGLETON_PK, SINGLETON_SK, VERSION_ATTR
from flags.seed import seed_update_params
from infra.storage import declarations_fingerprint

pytestmark = pytest.mark.infra

GUARDED_SET = re.compile(r"(#\w+) = if_not_exists\((#\w+), (:\w+)\)")
TABLE_NAME = "singleton-flags-test"  # the table tests/conftest.py's `ddb` fixture creates on moto


def table(synth: Synth) -> tuple[str, dict[str, Any]]:
    return synth.one("AWS::DynamoDB::GlobalTable")


def seed_calls(synth: Synth) -> dict[str, dict[str, Any]]:
    """The seed custom resource's Create and Update calls, parsed, with the table's Ref as its name."""
    table_id, _ = table(synth)
    _, seed = synth.one("Custom::AWS")
    calls = {}
    for phase in ("Create", "Update"):
        text = tt.render(seed["Properties"][phase]).replace(f"<{table_id}>", TABLE_NAME)
        calls[phase] = json.loads(text)
    return calls


def test_table_keys_billing_and_protection(synth: Synth) -> None:
    _, resource = table(synth)
    properties = resource["Properties"]
    assert properties["KeySchema"] == [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ]
    assert properties["AttributeDefinitions"] == [
        {"AttributeName": "PK", "AttributeType": "S"},
        {"AttributeName": "SK", "AttributeType": "S"},
    ]
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    (replica,) = properties["Replicas"]
    assert replica["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert replica["DeletionProtectionEnabled"] is True
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    # AWS-managed key (aws/dynamodb): encrypted with KMS, no customer key to manage
    assert properties["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}
    assert "KMSMasterKeyId" not in json.dumps(properties)
    assert "TableName" not in properties  # generated: two stages or a re-created stack never collide
    assert "GlobalSecondaryIndexes" not in properties  # nothing may Scan or Query another shape


def test_table_is_retained_on_delete_and_replace(synth: Synth) -> None:
    _, resource = table(synth)
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["UpdateReplacePolicy"] == "Retain"


@pytest.mark.parametrize("phase", ["Create", "Update"])
def test_seed_call_is_exactly_the_seed_parameters(synth: Synth, phase: str) -> None:
    # Given the synthesized custom resource / When its call is parsed / Then it is flags.seed's UpdateItem
    call = seed_calls(synth)[phase]
    assert call["service"] == "DynamoDB"
    assert call["action"] == "UpdateItem"
    assert call["parameters"] == seed_update_params(TABLE_NAME, synth.declarations)
    assert call["physicalResourceId"] == {"id": f"seed-{declarations_fingerprint(synth.declarations)}"}


def test_seed_sets_only_missing_attributes(synth: Synth) -> None:
    parameters = seed_calls(synth)["Create"]["parameters"]
    assert parameters["Key"] == {"PK": {"S": SINGLETON_PK}, "SK": {"S": SINGLETON_SK}}
    expression = parameters["UpdateExpression"]
    clauses = GUARDED_SET.findall(expression)
    # every SET is guarded (the attribute set only if it does not exist): no live value can be overwritten
    assert "SET " + ", ".join(f"{a} = if_not_exists({b}, {v})" for a, b, v in clauses) == expression
    assert all(target == guarded for target, guarded, _ in clauses)
    names, values = parameters["ExpressionAttributeNames"], parameters["ExpressionAttributeValues"]
    assert ("#version", "#version", ":start") in clauses
    assert names["#version"] == VERSION_ATTR
    assert values[":start"] == {"N": "0"}
    assert {names[target] for target, _, _ in clauses} == set(synth.declarations) | {VERSION_ATTR}
    assert "ConditionExpression" not in parameters


def test_seed_does_not_download_an_sdk_and_may_only_update_the_table(synth: Synth) -> None:
    table_id, _ = table(synth)
    seed_id, seed = synth.one("Custom::AWS")
    assert seed["Properties"]["InstallLatestAwsSdk"] is False
    (policy_id,) = seed["DependsOn"]
    statements = synth.template["Resources"][policy_id]["Properties"]["PolicyDocument"]["Statement"]
    assert statements == [
        {"Action": "dynamodb:UpdateItem", "Effect": "Allow", "Resource": {"Fn::GetAtt": [table_id, "Arn"]}}
    ]


def test_new_declaration_changes_the_seed_and_its_physical_id(synth: Synth, variant: Synth) -> None:
    # Given the variant app declares one more flag / Then its seed sets it too and its physical id moved on
    before, after = seed_calls(synth)["Update"], seed_calls(variant)["Update"]
    added = after["parameters"]["ExpressionAttributeNames"].values()
    assert EXTRA_FLAG["name"] in added
    assert EXTRA_FLAG["name"] not in before["parameters"]["ExpressionAttributeNames"].values()
    assert before["physicalResourceId"] != after["physicalResourceId"]


def item(ddb: Any) -> dict[str, Any]:
    return ddb.get_item(TableName=TABLE_NAME, Key={"PK": {"S": SINGLETON_PK}, "SK": {"S": SINGLETON_SK}},
                        ConsistentRead=True)["Item"]


def test_seed_replay_keeps_live_values_and_adds_new_flags(synth: Synth, variant: Synth, ddb: Any) -> None:
    # Given the first deploy's seed ran on an empty table
    first = seed_calls(synth)["Create"]["parameters"]
    ddb.update_item(**first)
    seeded = item(ddb)
    assert seeded[VERSION_ATTR] == {"N": "0"}
    assert seeded["signup_enabled"] == {"BOOL": True}
    assert seeded["api_rate_limit_per_minute"] == {"N": "600"}
    # And an operator then changed live values (and the version moved on)
    ddb.update_item(
        TableName=TABLE_NAME,
        Key={"PK": {"S": SINGLETON_PK}, "SK": {"S": SINGLETON_SK}},
        UpdateExpression="SET signup_enabled = :off, api_rate_limit_per_minute = :n, schema_version = :v",
        ExpressionAttributeValues={":off": {"BOOL": False}, ":n": {"N": "42"}, ":v": {"N": "7"}},
    )
    # When the same stack is deployed again (Update runs the same call), then a stack declaring one more flag
    ddb.update_item(**seed_calls(synth)["Update"]["parameters"])
    ddb.update_item(**seed_calls(variant)["Update"]["parameters"])
    # Then every live value survived, the version is untouched, and the new flag has its initial value
    after = item(ddb)
    assert after["signup_enabled"] == {"BOOL": False}
    assert after["api_rate_limit_per_minute"] == {"N": "42"}
    assert after[VERSION_ATTR] == {"N": "7"}
    assert after[EXTRA_FLAG["name"]] == {"BOOL": True}
    assert {name for name in after if name not in ("PK", "SK", VERSION_ATTR)} == set(variant.declarations)
