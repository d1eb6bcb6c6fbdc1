"""Lambda's 4 KB for a function's environment variables, checked at synth.

Lambda measures the JSON of the function's whole ``Variables`` map, compact (``{"NAME":"value",...}``, a value's
quotes escaped), in bytes, and refuses more than 4,096 at deploy time. At synth some values are still CloudFormation
references (the table's name, an ARN): each counts at the longest value it can resolve to (``WORST_CASE``). Synth
fails when a function's estimate leaves less than ``MARGIN_BYTES`` of the limit, naming the function and its biggest
variables; a value whose longest form is unknown fails it too (add its worst case here).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsii
from aws_cdk import CfnResource, Stack, aws_lambda as lambda_
from constructs import Construct, IValidation

LIMIT_BYTES = 4096  # https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
# What an estimate must leave of the limit: room for what it cannot see (a longer partition or region name than
# today's), and for variables to come.
MARGIN_BYTES = 1024
BUDGET_BYTES = LIMIT_BYTES - MARGIN_BYTES

# The longest pseudo parameters: partition ids are at most 10 characters (aws-us-gov), region codes at most 15
# today (us-isof-south-1, botocore's partitions): 20 leaves room for regions to come.
PARTITION = "p" * 10
REGION = "r" * 20
ACCOUNT = "1" * 12
PSEUDO = {"AWS::Partition": PARTITION, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::URLSuffix": "u" * 20}
# The longest value of a reference, by the referenced resource's type and attribute ("Ref" for a Ref):
WORST_CASE: dict[tuple[str, str], int] = {
    # DynamoDB: a table's name is at most 255 characters (the stack lets CloudFormation generate it)
    ("AWS::DynamoDB::GlobalTable", "Ref"): 255,
    ("AWS::DynamoDB::Table", "Ref"): 255,
    # a function's name is at most 64 characters
    ("AWS::Lambda::Function", "Arn"): len(f"arn:{PARTITION}:lambda:{REGION}:{ACCOUNT}:function:") + 64,
    # a role's name is at most 64 characters; the stack's roles have no path
    ("AWS::IAM::Role", "Arn"): len(f"arn:{PARTITION}:iam::{ACCOUNT}:role/") + 64,
    # a queue's name is at most 80 characters
    ("AWS::SQS::Queue", "Arn"): len(f"arn:{PARTITION}:sqs:{REGION}:{ACCOUNT}:") + 80,
    # a schedule group's and an event bus's names: at most 64 and 256 characters
    ("AWS::Scheduler::ScheduleGroup", "Ref"): 64,
    ("AWS::Events::EventBus", "Ref"): 256,
    ("AWS::Events::EventBus", "Name"): 256,
}


class UnboundedValueError(ValueError):
    """A value whose longest form the estimate does not know."""


def measured_bytes(variables: Mapping[str, str]) -> int:
    """What Lambda counts: the compact JSON of the whole map, in bytes (ASCII-escaped: never fewer bytes than
    UTF-8)."""
    return len(json.dumps(dict(variables), separators=(",", ":")).encode())


def worst_case(value: Any, resource_types: Mapping[str, str]) -> str:
    """A stand-in as long as the longest value ``value`` (a string, or a CloudFormation intrinsic) resolves to."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Ref" and argument in PSEUDO:
            return PSEUDO[argument]
        if function == "Ref":
            key = (resource_types.get(argument, "?"), "Ref")
        elif function == "Fn::GetAtt":
            key = (resource_types.get(argument[0], "?"), argument[1])
        elif function == "Fn::Join":
            separator, parts = argument
            return str(separator).join(worst_case(part, resource_types) for part in parts)
        else:
            key = ("?", function)
        if key in WORST_CASE:
            return "x" * WORST_CASE[key]
    raise UnboundedValueError(f"no worst-case length for {json.dumps(value)}")


def estimate(variables: Mapping[str, Any], resource_types: Mapping[str, str]) -> dict[str, str]:
    """The variables with every reference replaced by its longest value."""
    return {name: worst_case(value, resource_types) for name, value in variables.items()}


def problems(function: str, variables: Mapping[str, Any], resource_types: Mapping[str, str]) -> list[str]:
    """Why ``function``'s environment may not fit: an unknown reference, or an estimate over the budget."""
    try:
        worst = estimate(variables, resource_types)
    except UnboundedValueError as exc:
        return [f"the {function} function's environment cannot be sized: {exc} (add its worst case)"]
    size = measured_bytes(worst)
    if size <= BUDGET_BYTES:
        return []
    biggest = sorted(worst, key=lambda name: measured_bytes({name: worst[name]}), reverse=True)[:3]
    sizes = ", ".join(f"{name} ({measured_bytes({name: worst[name]}) - 2} B)" for name in biggest)
    return [
        f"the {function} function's environment may reach {size} bytes as Lambda counts them (its references at "
        f"their longest), over {BUDGET_BYTES} (Lambda's {LIMIT_BYTES} less a {MARGIN_BYTES}-byte margin); biggest: "
        f"{sizes}"
    ]


def _resource_types(stack: Stack) -> dict[str, str]:
    return {
        str(stack.resolve(child.logical_id)): child.cfn_resource_type
        for child in stack.node.find_all()
        if isinstance(child, CfnResource)
    }


class SizedFunction(lambda_.Function):
    """A function that keeps every variable it is given (at creation, or added later by the constructs that own
    them) and checks their size at synth, once all of them are there. (A synth-time view of the function's
    environment: its L1 property is a lazy value that does not cross from the CDK's runtime into Python.)"""

    def __init__(
        self, scope: Construct, construct_id: str, *, name: str, environment: Mapping[str, str], **props: Any
    ) -> None:
        super().__init__(scope, construct_id, environment=dict(environment), **props)
        self.variables = dict(environment)
        self.node.add_validation(EnvironmentSize(self, name))

    def add_environment(self, key: str, value: str, *, remove_in_edge: bool | None = None) -> lambda_.Function:
        self.variables[key] = value
        return super().add_environment(key, value, remove_in_edge=remove_in_edge)


@jsii.implements(IValidation)
class EnvironmentSize:
    """The synth-time check of one function's environment (``node.add_validation``)."""

    def __init__(self, function: SizedFunction, name: str) -> None:
        self._function = function
        self._name = name

    def validate(self) -> list[str]:
        stack = Stack.of(self._function)
        variables = {key: stack.resolve(value) for key, value in self._function.variables.items()}
        return problems(self._name, variables, _resource_types(stack))
