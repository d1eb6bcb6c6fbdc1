"""The table that holds the singleton (and its audit records), and the seed that fills in declared flags.

The seed is a custom resource of our own function (functions/seed: ``FlagStore.seed``). CloudFormation runs a
custom resource's Update only when its properties change, so the seed runs on the first deploy and whenever
the declarations change (their fingerprint is a property), not on every deploy. The table's ARN is a property
too: a replaced table runs the seed's Update, which marks the flags item of the table the stage published before
superseded by the new one (``singleton_flags_service.writes.supersede``). The stage's ``table-arn`` parameter
depends on the seed (``Discovery`` is told to wait for it), so the seed reads the old ARN before it is overwritten.
"""

from __future__ import annotations

import hashlib
import json

from aws_cdk import (
    Aws,
    CustomResource,
    Duration,
    RemovalPolicy,
    Stack,
    aws_dynamodb as dynamodb,
    aws_iam as iam,
    aws_lambda as lambda_,
)
from constructs import Construct

from singleton_flags.declarations import Declarations
from singleton_flags.keys import (
    PARTITION_KEY,
    SINGLETON_PK,
    SORT_KEY,
    SUPERSEDED_AT_ATTR,
    SUPERSEDED_BY_ATTR,
    SUPERSEDED_REASON_ATTR,
)
from singleton_flags_cdk.construct import TABLE_ARN_PARAMETER, discovery_parameter
from singleton_flags_service.contract import load_service_declarations

from . import constants
from .nag import acknowledge, finding_arn
from .table import table_definition

SEED_RESOURCE_TYPE = "Custom::FlagsSeed"
_ATTRIBUTE_TYPES = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER}
_BILLING = {"PAY_PER_REQUEST": dynamodb.Billing.on_demand}


def declarations_fingerprint(declarations: Declarations) -> str:
    """Changes whenever a declaration changes: a property of the seed, so its Update runs."""
    document = json.dumps({name: spec.as_doc() for name, spec in declarations.items()}, sort_keys=True)
    return hashlib.sha256(document.encode()).hexdigest()[:16]


class Storage(Construct):
    """TableV2 of ``singleton_flags_infra.table.table_definition`` (PK/SK, on demand, TTL, NEW_IMAGE stream), with PITR,
    deletion protection, retained; ``add_seed`` adds the seed."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        declarations: Declarations | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.declarations = declarations if declarations is not None else load_service_declarations()
        self.table = self._build_table()
        self.seed: CustomResource | None = None

    def add_seed(self, function: lambda_.IFunction, *, stage: str) -> CustomResource:
        """The seed custom resource, served by ``function`` (functions/singleton_flags_service/handlers/seed.py),
        with the rights to mark the item of the table ``stage`` published before this one superseded."""
        parameter = discovery_parameter(stage, TABLE_ARN_PARAMETER)
        self._grant_marking(function, parameter)
        self.seed = CustomResource(
            self,
            constants.SEED_ID,
            service_token=function.function_arn,
            resource_type=SEED_RESOURCE_TYPE,
            properties={
                "DeclarationsFingerprint": declarations_fingerprint(self.declarations),
                "TableArn": self.table.table_arn,  # a replaced table changes it: the seed's Update runs
                "TableArnParameter": parameter,
            },
            service_timeout=Duration.seconds(constants.CUSTOM_RESOURCE_TIMEOUT_SECONDS),
            removal_policy=RemovalPolicy.DESTROY,  # its Delete does nothing: the table is retained
        )
        return self.seed

    def _grant_marking(self, function: lambda_.IFunction, parameter: str) -> None:
        """Read the stage's ``table-arn`` parameter; set the superseded marker, and nothing else, on the flags
        item of a table this stack created before (its generated name starts with the stack's name)."""
        stack = Stack.of(self)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ssm:GetParameter"],
                resources=[stack.format_arn(service="ssm", resource="parameter", resource_name=parameter.lstrip("/"))],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:UpdateItem"],
                resources=[stack.format_arn(service="dynamodb", resource="table", resource_name=f"{Aws.STACK_NAME}-*")],
                conditions={
                    "ForAllValues:StringEquals": {
                        "dynamodb:LeadingKeys": [SINGLETON_PK],
                        "dynamodb:Attributes": [
                            PARTITION_KEY,
                            SORT_KEY,
                            SUPERSEDED_BY_ATTR,
                            SUPERSEDED_AT_ATTR,
                            SUPERSEDED_REASON_ATTR,
                        ],
                    },
                    "StringEqualsIfExists": {"dynamodb:ReturnValues": "NONE"},
                },
            )
        )
        if function.role is not None:
            acknowledge(
                function.role,
                "AwsSolutions-IAM5",
                "The seed marks a replaced table's flags item superseded: that table's name is known only at deploy "
                "time (the stage's table-arn parameter), so the resource is the tables this stack names "
                "(<stack>-*), narrowed to UpdateItem on the flags partition and the marker's attributes.",
                finding="Resource::" + finding_arn(self, "dynamodb", "table/<AWS::StackName>-*"),
            )

    def _build_table(self) -> dynamodb.TableV2:
        definition = table_definition()
        key_type = _ATTRIBUTE_TYPES[definition.key_type]
        return dynamodb.TableV2(
            self,
            constants.TABLE_ID,
            partition_key=dynamodb.Attribute(name=definition.partition_key, type=key_type),
            sort_key=dynamodb.Attribute(name=definition.sort_key, type=key_type),
            billing=_BILLING[definition.billing_mode](),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
            time_to_live_attribute=definition.ttl_attribute,
            # the change events' source: every committed audit record, as written (infra/events.py)
            dynamo_stream=dynamodb.StreamViewType[definition.stream_view_type],
            encryption=dynamodb.TableEncryptionV2.aws_managed_key(),
        )
