"""The reusable construct: SingletonFlags binds an application's function to the flags with a read grant that
reaches the flags item and never an audit record."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack, aws_dynamodb as dynamodb, aws_iam as iam, aws_lambda as lambda_
from aws_cdk.assertions import Template

from infra.config import load_config
from singleton_flags.cdk import SingletonFlags
from singleton_flags.declarations import DECLARATIONS_FILE
from singleton_flags.keys import AUDIT_PK, SINGLETON_PK
from tests.support.doc_examples import examples

pytestmark = pytest.mark.infra


def application(use_service: bool) -> tuple[Stack, SingletonFlags, lambda_.Function]:
    """An application's stack: the flags (a deployed table, or the whole service) and one function bound to them."""
    stack = Stack(App(), "Application", env={"account": "123456789012", "region": "eu-west-1"})
    if use_service:
        flags = SingletonFlags(stack, "Flags", config=load_config())
    else:
        table = dynamodb.TableV2.from_table_name(stack, "FlagsTable", "singleton-flags-prod-table")
        flags = SingletonFlags(stack, "Flags", table=table, max_age=10, max_stale=120)
    function = lambda_.Function(
        stack,
        "Checkout",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    )
    flags.bind(function)
    return stack, flags, function


def role_statements(template: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    """Every statement of every policy attached to the function's role."""
    [function] = [
        r
        for k, r in template["Resources"].items()
        if k.startswith(function_id) and r["Type"] == "AWS::Lambda::Function"
    ]
    role_ref = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements: list[dict[str, Any]] = []
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_ref} in resource["Properties"]["Roles"]:
            statements += resource["Properties"]["PolicyDocument"]["Statement"]
    role = template["Resources"][role_ref]["Properties"]
    for policy in role.get("Policies", []):
        statements += policy["PolicyDocument"]["Statement"]
    assert not [arn for arn in role.get("ManagedPolicyArns", []) if "Dynamo" in str(arn)]
    return statements


def dynamodb_statements(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def actions(statement: dict[str, Any]) -> list[str]:
        action = statement["Action"]
        return action if isinstance(action, list) else [action]

    return [s for s in statements if any(a.startswith("dynamodb:") or a == "*" for a in actions(s))]


@pytest.mark.parametrize("use_service", [False, True], ids=["deployed-table", "whole-service"])
def test_the_read_grant_reaches_the_flags_and_never_an_audit_record(use_service: bool) -> None:
    # Given an application's function bound to the flags
    stack, _, _ = application(use_service)
    template = Template.from_stack(stack).to_json()
    # When its role's policies are read
    [statement] = dynamodb_statements(role_statements(template, "Checkout"))
    # Then one statement: GetItem only, on the table, every key in the flags' partition
    assert statement["Effect"] == "Allow"
    assert statement["Action"] == "dynamodb:GetItem"
    assert statement["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [SINGLETON_PK]}}
    # And no audit record (AUDIT#APP) can satisfy it: no wildcard, no other partition
    [keys] = statement["Condition"]["ForAllValues:StringEquals"].values()
    assert AUDIT_PK not in keys and not any("*" in key for key in keys)
    assert "*" not in str(statement["Resource"])


def test_the_pages_cdk_example_synthesizes_with_the_grant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an application's stack, its function and another role, and its flags.json
    shutil.copy(DECLARATIONS_FILE, tmp_path / "flags.json")
    monkeypatch.chdir(tmp_path)
    stack = Stack(App(), "Application", env={"account": "123456789012", "region": "eu-west-1"})
    page: dict[str, Any] = {
        "self": stack,
        "config": load_config(),
        "my_function": lambda_.Function(
            stack,
            "MyFunction",
            runtime=lambda_.Runtime.PYTHON_3_13,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
        ),
        "another_role": iam.Role(stack, "AnotherRole", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com")),
    }
    # When docs/reading-flags.md's CDK example runs
    exec(compile(examples()["cdk"], "reading-flags.md#cdk", "exec"), page)  # noqa: S102 - the page's own example
    # Then the function's role may read the flags item, and nothing else of the table
    template = Template.from_stack(stack).to_json()
    [statement] = dynamodb_statements(role_statements(template, "MyFunction"))
    assert statement["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [SINGLETON_PK]}}


def test_bind_sets_the_variables_the_client_reads() -> None:
    stack, _, _ = application(use_service=False)
    template = Template.from_stack(stack)
    [function] = template.find_resources("AWS::Lambda::Function").values()
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables == {
        "SINGLETON_FLAGS_TABLE": "singleton-flags-prod-table",
        "SINGLETON_FLAGS_SORT_KEY": "FLAGS#V1",
        "SINGLETON_FLAGS_REGION": "eu-west-1",
        "SINGLETON_FLAGS_MAX_AGE": "10",
        "SINGLETON_FLAGS_MAX_STALE": "120",
    }
