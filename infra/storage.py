"""The table that holds the singleton (and its audit records), and the seed that fills in declared flags."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aws_cdk import RemovalPolicy, aws_dynamodb as dynamodb, aws_iam as iam, aws_logs as logs, custom_resources as cr
from constructs import Construct
from flags.declarations import Declarations, load_declarations
from flags.keys import PARTITION_KEY, SORT_KEY, TTL_ATTR
from flags.seed import seed_update_params

from infra import constants
from infra.logs import log_group


def seed_call(table_name: str, declarations: Declarations) -> dict[str, Any]:
    """The UpdateItem parameters the seed sends on create and on every update (flags.seed builds them)."""
    return seed_update_params(table_name, declarations)


def declarations_fingerprint(declarations: Declarations) -> str:
    """Changes whenever a declaration changes, so the seed's physical id (and its update) follows."""
    document = json.dumps({name: spec.as_doc() for name, spec in declarations.items()}, sort_keys=True)
    return hashlib.sha256(document.encode()).hexdigest()[:16]


class Storage(Construct):
    """TableV2 (PK/SK, on demand, PITR, deletion protection, retained, TTL) and the seed custom resource."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        log_retention_days: int,
        declarations: Declarations | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._log_retention_days = log_retention_days
        self.declarations = declarations if declarations is not None else load_declarations()
        self.table = self._build_table()
        self.seed = self._build_seed()

    def _build_table(self) -> dynamodb.TableV2:
        return dynamodb.TableV2(
            self,
            constants.TABLE_ID,
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing=dynamodb.Billing.on_demand(),
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
            time_to_live_attribute=TTL_ATTR,
            encryption=dynamodb.TableEncryptionV2.aws_managed_key(),
        )

    def _build_seed_role(self, seed_logs: logs.ILogGroup) -> iam.Role:
        # Instead of the default role with AWSLambdaBasicExecutionRole (any log group): only the seed's log
        # group. The custom resource adds its own statement (UpdateItem on the table) to this role.
        return iam.Role(
            self,
            "SeedRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="singleton-flags seed: UpdateItem on the flags table, on create and on update",
            inline_policies={
                "Logs": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                            resources=[seed_logs.log_group_arn],
                        )
                    ]
                )
            },
        )

    def _build_seed(self) -> cr.AwsCustomResource:
        seed_logs = log_group(self, "SeedLogs", self._log_retention_days)
        call = cr.AwsSdkCall(
            service="DynamoDB",
            action="UpdateItem",
            parameters=seed_call(self.table.table_name, self.declarations),
            physical_resource_id=cr.PhysicalResourceId.of(f"seed-{declarations_fingerprint(self.declarations)}"),
        )
        return cr.AwsCustomResource(
            self,
            constants.SEED_ID,
            on_create=call,
            on_update=call,
            install_latest_aws_sdk=False,  # the runtime's SDK does UpdateItem; no download at deploy time
            log_group=seed_logs,
            role=self._build_seed_role(seed_logs),
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [iam.PolicyStatement(actions=["dynamodb:UpdateItem"], resources=[self.table.table_arn])]
            ),
        )
