"""The table that holds the singleton (and its audit records), and the seed that fills in declared flags.

The seed is a custom resource of our own function (functions/seed: ``FlagStore.seed``). CloudFormation runs a
custom resource's Update only when its properties change, so the seed runs on the first deploy and whenever
the declarations change (their fingerprint is a property), not on every deploy.
"""

from __future__ import annotations

import hashlib
import json

from aws_cdk import CustomResource, Duration, RemovalPolicy, aws_dynamodb as dynamodb, aws_lambda as lambda_
from constructs import Construct

from singleton_flags.declarations import Declarations
from singleton_flags_service.contract import load_service_declarations

from . import constants
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

    def add_seed(self, function: lambda_.IFunction) -> CustomResource:
        """The seed custom resource, served by ``function`` (functions/singleton_flags_service/handlers/seed.py)."""
        self.seed = CustomResource(
            self,
            constants.SEED_ID,
            service_token=function.function_arn,
            resource_type=SEED_RESOURCE_TYPE,
            properties={"DeclarationsFingerprint": declarations_fingerprint(self.declarations)},
            service_timeout=Duration.seconds(constants.CUSTOM_RESOURCE_TIMEOUT_SECONDS),
            removal_policy=RemovalPolicy.DESTROY,  # its Delete does nothing: the table is retained
        )
        return self.seed

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
