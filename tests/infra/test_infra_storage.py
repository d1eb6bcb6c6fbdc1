"""The table and the seed, as synthesized: what would replace the table, and the seed custom resource."""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags_infra.storage import declarations_fingerprint
from tests.support import templates as tt
from tests.support.synth import EXTRA_FLAG, Synth

pytestmark = pytest.mark.infra


def table(synth: Synth) -> tuple[str, dict[str, Any]]:
    return synth.one("AWS::DynamoDB::GlobalTable")


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


# What a change would make CloudFormation replace the table: a new empty table, every flag and the whole
# audit trail left behind in the old one (retained, but no longer the stack's).
TABLE_LOGICAL_ID = "StorageTableB43FDCE7"
REPLACEMENT_MESSAGE = (
    "changing {what} makes CloudFormation REPLACE the table: the new table is empty, every flag "
    "value and the whole audit trail stay behind in the old (retained) one"
)


def test_nothing_that_would_replace_the_table_has_moved(synth: Synth) -> None:
    table_id, resource = table(synth)
    properties = resource["Properties"]
    assert table_id == TABLE_LOGICAL_ID, REPLACEMENT_MESSAGE.format(what="the table's logical id (its construct path)")
    assert "TableName" not in properties, REPLACEMENT_MESSAGE.format(what="the table's physical name")
    assert properties["KeySchema"] == [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ], REPLACEMENT_MESSAGE.format(what="the key schema")
    keys = [d for d in properties["AttributeDefinitions"] if d["AttributeName"] in ("PK", "SK")]
    assert keys == [
        {"AttributeName": "PK", "AttributeType": "S"},
        {"AttributeName": "SK", "AttributeType": "S"},
    ], REPLACEMENT_MESSAGE.format(what="the key attributes' types")


SEED_TYPE = "Custom::FlagsSeed"
SEED_HANDLER = "singleton_flags_service.handlers.seed.handler"
# Stated here on purpose: the seed's store does what the maintenance function's store does (read, transact, query)
SEED_TABLE_ACTIONS = {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:Query"}


def seed(synth: Synth) -> tuple[str, dict[str, Any]]:
    return synth.one(SEED_TYPE)


def test_seed_is_our_function_run_on_create_and_when_the_declarations_change(synth: Synth) -> None:
    # Given the synthesized seed / Then it is a custom resource of our own seed function (FlagStore.seed)
    _, resource = seed(synth)
    # (the stack's only SDK-call custom resources are the account logging role's: none touches the table)
    assert all(lid.startswith("ApiGatewayAccountAccountRole") for lid in synth.resources("Custom::AWS"))
    properties = resource["Properties"]
    function_id = tt.referenced_id(properties["ServiceToken"])
    function = synth.template["Resources"][function_id]["Properties"]
    assert function["Handler"] == SEED_HANDLER
    table_id, _ = table(synth)
    assert function["Environment"]["Variables"]["TABLE_NAME"] == {"Ref": table_id}
    # Update runs only when a property changes: the declarations' fingerprint is what makes it run again
    assert properties["DeclarationsFingerprint"] == declarations_fingerprint(synth.declarations)
    # A seed that never answers must not hold the deploy for CloudFormation's default hour
    assert int(properties["ServiceTimeout"]) <= 600
    # The table is retained, so deleting the seed must do nothing to it
    assert resource["DeletionPolicy"] == "Delete"


def test_new_declaration_changes_the_seed_so_its_update_runs(synth: Synth, variant: Synth) -> None:
    assert EXTRA_FLAG["name"] in variant.declarations
    before, after = seed(synth)[1]["Properties"], seed(variant)[1]["Properties"]
    assert before["DeclarationsFingerprint"] != after["DeclarationsFingerprint"]


def test_seed_role_has_the_stores_rights_on_the_singleton_partition_only(synth: Synth) -> None:
    _, resource = seed(synth)
    function_id = tt.referenced_id(resource["Properties"]["ServiceToken"])
    role_id = tt.referenced_id(synth.template["Resources"][function_id]["Properties"]["Role"])
    statements = tt.role_statements(synth.template, role_id)
    table_id, _ = table(synth)
    (table_statement,) = [s for s in statements if s["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}]
    assert set(tt.as_list(table_statement["Action"])) == SEED_TABLE_ACTIONS
    assert table_statement["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    # the flags and the audit trail (a restore reads the newest record, every version writes one), and the deployed
    # protection with its lowered records
    assert table_statement["Condition"] == {
        "ForAllValues:StringEquals": {
            "dynamodb:LeadingKeys": ["SETTINGS#APP", "AUDIT#APP", "PROTECTION#APP", "MIGRATION#APP"]
        }
    }
    assert tt.actions(statements) - SEED_TABLE_ACTIONS - {"ssm:GetParameter"} <= {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    }


def test_a_replaced_table_runs_the_seed_which_reads_the_old_arn_before_the_stack_overwrites_it(synth: Synth) -> None:
    # Given the synthesized seed and the stage's table-arn parameter
    seed_id, resource = seed(synth)
    table_id, _ = table(synth)
    properties = resource["Properties"]
    # Then a new table (a new ARN) is a changed property: CloudFormation sends the seed an Update
    assert properties["TableArn"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert properties["TableArnParameter"] == f"/singleton-flags/{synth.config.stage}/table-arn"
    # And the parameter is updated only after the seed has run (it still names the old table then)
    (parameter,) = [
        r
        for r in synth.resources("AWS::SSM::Parameter").values()
        if r["Properties"]["Name"] == properties["TableArnParameter"]
    ]
    assert seed_id in tt.as_list(parameter.get("DependsOn", []))


def test_the_seed_may_only_read_its_stage_parameter_and_set_the_marker_on_the_flags_item(synth: Synth) -> None:
    _, resource = seed(synth)
    function_id = tt.referenced_id(resource["Properties"]["ServiceToken"])
    role_id = tt.referenced_id(synth.template["Resources"][function_id]["Properties"]["Role"])
    statements = tt.role_statements(synth.template, role_id)
    (read_parameter,) = [s for s in statements if "ssm:GetParameter" in tt.as_list(s["Action"])]
    assert tt.as_list(read_parameter["Action"]) == ["ssm:GetParameter"]
    assert f"parameter/singleton-flags/{synth.config.stage}/table-arn" in json.dumps(read_parameter["Resource"])
    (marking,) = [
        s for s in statements if "dynamodb:UpdateItem" in tt.as_list(s["Action"]) and "Fn::GetAtt" not in s["Resource"]
    ]
    # UpdateItem only (no read, no put, no delete), on the tables this stack names...
    assert tt.as_list(marking["Action"]) == ["dynamodb:UpdateItem"]
    assert ":table/" in json.dumps(marking["Resource"]) and "AWS::StackName" in json.dumps(marking["Resource"])
    # ...on the flags partition, touching the marker's attributes and the key only
    condition = marking["Condition"]["ForAllValues:StringEquals"]
    assert condition["dynamodb:LeadingKeys"] == ["SETTINGS#APP"]
    assert set(condition["dynamodb:Attributes"]) == {"PK", "SK", "superseded_by", "superseded_at", "superseded_reason"}
