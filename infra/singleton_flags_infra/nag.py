"""cdk-nag acknowledgments. Each one is made next to the resource that trips the rule, scoped to that resource
(and, for granular rules, to the one finding), and carries its reason."""

from __future__ import annotations

from typing import cast

from aws_cdk import Acknowledgment, CfnElement, Stack, Token, Validations
from constructs import IConstruct

PACK = "AwsSolutions"


def acknowledge(scope: IConstruct, rule: str, reason: str, *, finding: str | None = None) -> None:
    """Acknowledge ``rule`` (e.g. ``AwsSolutions-IAM5``), or only its ``finding`` (``Resource::*``), on ``scope``."""
    rule_id = f"{rule}[{finding}]" if finding else rule
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{PACK}::{rule_id}", reason=reason))


def logical_id(element: CfnElement) -> str:
    """The logical id as cdk-nag prints it inside a finding (``<LogicalId>`` / ``<LogicalId.Arn>``)."""
    stack = Stack.of(element)
    return cast(str, stack.resolve(stack.get_logical_id(element)))  # a logical id resolves to its string


def finding_arn(scope: IConstruct, service: str, resource: str) -> str:
    """An ARN of ``scope``'s stack as cdk-nag prints it in a finding: the partition, region and account as
    ``<AWS::Partition>``, ``<AWS::Region>``, ``<AWS::AccountId>`` where the stack leaves them to deploy time, and as
    themselves where the stack names them (a stage whose configuration names its region)."""
    stack = Stack.of(scope)

    def shown(value: str, pseudo: str) -> str:
        return f"<AWS::{pseudo}>" if Token.is_unresolved(value) else value

    partition, region = shown(stack.partition, "Partition"), shown(stack.region, "Region")
    return f"arn:{partition}:{service}:{region}:{shown(stack.account, 'AccountId')}:{resource}"
