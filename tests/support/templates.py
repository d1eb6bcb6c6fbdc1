"""Reading a synthesized CloudFormation template (plain JSON) in the infra tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# Where policy documents live, by resource type.
POLICY_DOCUMENTS = {
    "AWS::IAM::Policy": ("PolicyDocument",),
    "AWS::IAM::ManagedPolicy": ("PolicyDocument",),
    "AWS::SQS::QueuePolicy": ("PolicyDocument",),
    "AWS::SNS::TopicPolicy": ("PolicyDocument",),
    "AWS::KMS::Key": ("KeyPolicy",),
    "AWS::IAM::Role": ("AssumeRolePolicyDocument",),
}


def resources(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {lid: res for lid, res in template["Resources"].items() if res["Type"] == resource_type}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def render(value: Any) -> str:
    """A string-valued intrinsic as text: ``Ref`` -> ``<Id>``, ``GetAtt`` -> ``<Id.Attr>``, joins joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref":
            return f"<{argument}>"
        if function == "Fn::GetAtt":
            return f"<{argument[0]}.{argument[1]}>"
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(render(part) for part in parts)
        if function == "Fn::Sub" and isinstance(argument, str):
            return argument
    raise AssertionError(f"cannot render {value!r}")


def referenced_id(value: Any) -> str:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` points at."""
    if "Ref" in value:
        return value["Ref"]
    return value["Fn::GetAtt"][0]


def role_statements(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    """Every permission statement of a role: its inline policies and the AWS::IAM::Policy attached to it."""
    role = template["Resources"][role_id]
    statements = [
        statement
        for policy in role["Properties"].get("Policies", [])
        for statement in policy["PolicyDocument"]["Statement"]
    ]
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"].get("Roles", []):
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    assert not role["Properties"].get("ManagedPolicyArns"), f"{role_id} has managed policies attached"
    return statements


def actions(statements: list[dict[str, Any]]) -> set[str]:
    return {action for statement in statements for action in as_list(statement["Action"])}


def grants(statements: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """Every (action, rendered resource) pair the statements allow."""
    return {
        (action, render(resource))
        for statement in statements
        for action in as_list(statement["Action"])
        for resource in as_list(statement["Resource"])
    }


def all_statements(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every statement of every policy document in the template, with the logical id that holds it."""
    for resource_type, keys in POLICY_DOCUMENTS.items():
        for lid, resource in resources(template, resource_type).items():
            for key in keys:
                for statement in resource["Properties"].get(key, {}).get("Statement", []):
                    yield lid, statement
        if resource_type == "AWS::IAM::Role":
            for lid, resource in resources(template, resource_type).items():
                for policy in resource["Properties"].get("Policies", []):
                    for statement in policy["PolicyDocument"]["Statement"]:
                        yield lid, statement


def function_by_handler(template: dict[str, Any], handler: str) -> tuple[str, dict[str, Any]]:
    found = [
        (lid, res)
        for lid, res in resources(template, "AWS::Lambda::Function").items()
        if res["Properties"].get("Handler") == handler
    ]
    assert len(found) == 1, f"expected one function with handler {handler}, found {[lid for lid, _ in found]}"
    return found[0]
