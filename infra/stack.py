"""The stack: composes one construct per concern and outputs what a caller needs. Nothing is built here."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra import constants
from infra.account import ApiGatewayAccount
from infra.api import Api
from infra.config import FlagsConfig
from infra.functions import Functions
from infra.maintenance import Maintenance
from infra.monitoring import Monitoring
from infra.storage import Storage
from singleton_flags.declarations import Declarations


class FlagsStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FlagsConfig,
        declarations: Declarations | None = None,
        **kwargs: Any,
    ) -> None:
        """``declarations`` defaults to functions/singleton_flags/declarations.json (tests pass another set)."""
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        self.storage = Storage(self, constants.STORAGE_ID, declarations=declarations)
        self.functions = Functions(self, constants.FUNCTIONS_ID, config=config, table=self.storage.table)
        self.storage.add_seed(self.functions.seed)
        self.apigw_account = ApiGatewayAccount(self, constants.ACCOUNT_ID, config=config, code=self.functions.code)
        self.api = Api(
            self,
            constants.API_ID,
            config=config,
            functions=self.functions.functions,
            account_setting=self.apigw_account.setting,
        )
        self.maintenance = Maintenance(
            self, constants.MAINTENANCE_ID, config=config, function=self.functions.maintenance
        )
        self.monitoring = Monitoring(
            self,
            constants.MONITORING_ID,
            config=config,
            stage=self.api.stage,
            functions=self.functions.functions,
            dead_letter_queue=self.maintenance.dead_letter_queue,
            failure_queue=self.maintenance.failure_queue,
        )
        self._build_outputs()

    def _build_outputs(self) -> None:
        CfnOutput(
            self,
            constants.OUTPUT_API_URL,
            value=self.api.rest_api.url,
            description="Base URL of the flags API (SigV4-signed calls only)",
        )
        CfnOutput(
            self,
            constants.OUTPUT_TABLE_NAME,
            value=self.storage.table.table_name,
            description="DynamoDB table holding the singleton and its audit records",
        )
        CfnOutput(
            self,
            constants.OUTPUT_READER_POLICY_ARN,
            value=self.api.reader_policy.managed_policy_arn,
            description="Attach to a caller that may read flags (GET /flags, GET /flags/{name})",
        )
        CfnOutput(
            self,
            constants.OUTPUT_ADMIN_POLICY_ARN,
            value=self.api.admin_policy.managed_policy_arn,
            description="Attach to a caller that may change, list history and revert flags",
        )
