"""The stack: composes one construct per concern (``compose``) and outputs what a caller needs; builds nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra import constants
from infra.account import ApiGatewayAccount
from infra.api import Api
from infra.config import FlagsConfig
from infra.functions import Functions
from infra.guards import Guards
from infra.maintenance import Maintenance
from infra.monitoring import Monitoring
from infra.storage import Storage
from singleton_flags.declarations import Declarations


@dataclass(frozen=True)
class Service:
    """What ``compose`` builds: one construct per concern."""

    storage: Storage
    functions: Functions
    apigw_account: ApiGatewayAccount
    api: Api
    maintenance: Maintenance
    guards: Guards
    monitoring: Monitoring


def compose(scope: Construct, *, config: FlagsConfig, declarations: Declarations | None = None) -> Service:
    """The service's constructs, children of ``scope``: the stack's own (its logical IDs unchanged), or those of
    ``singleton_flags.cdk.SingletonFlags`` in another stack."""
    storage = Storage(scope, constants.STORAGE_ID, declarations=declarations)
    functions = Functions(scope, constants.FUNCTIONS_ID, config=config, table=storage.table)
    storage.add_seed(functions.seed)
    apigw_account = ApiGatewayAccount(scope, constants.ACCOUNT_ID, config=config, code=functions.code)
    api = Api(
        scope,
        constants.API_ID,
        config=config,
        functions=functions.functions,
        account_setting=apigw_account.setting,
    )
    maintenance = Maintenance(scope, constants.MAINTENANCE_ID, config=config, function=functions.maintenance)
    guards = Guards(
        scope, constants.GUARDS_ID, config=config, guard_function=functions.guard, write_function=functions.write
    )
    monitoring = Monitoring(
        scope,
        constants.MONITORING_ID,
        config=config,
        stage=api.stage,
        functions=functions.functions,
        dead_letter_queue=maintenance.dead_letter_queue,
        failure_queue=maintenance.failure_queue,
        guard_queues=guards.queues,
    )
    return Service(storage, functions, apigw_account, api, maintenance, guards, monitoring)


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
        service = compose(self, config=config, declarations=declarations)
        self.storage = service.storage
        self.functions = service.functions
        self.apigw_account = service.apigw_account
        self.api = service.api
        self.maintenance = service.maintenance
        self.guards = service.guards
        self.monitoring = service.monitoring
        self._build_outputs()

    def _build_outputs(self) -> None:
        for output_id, value, description in (
            (constants.OUTPUT_API_URL, self.api.rest_api.url, "Base URL of the flags API (SigV4-signed calls only)"),
            (
                constants.OUTPUT_TABLE_NAME,
                self.storage.table.table_name,
                "DynamoDB table holding the singleton and its audit records",
            ),
            (
                constants.OUTPUT_READER_POLICY_ARN,
                self.api.reader_policy.managed_policy_arn,
                "Attach to a caller that may read flags (GET /flags, GET /flags/{name})",
            ),
            (
                constants.OUTPUT_ADMIN_POLICY_ARN,
                self.api.admin_policy.managed_policy_arn,
                "Attach to a caller that may change, list history, revert and restore flags",
            ),
        ):
            CfnOutput(self, output_id, value=value, description=description)
