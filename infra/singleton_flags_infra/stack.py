"""The stack: composes one construct per concern (``compose``) and outputs what a caller needs; builds nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from singleton_flags.declarations import Declarations
from singleton_flags_cdk.construct import TABLE_ARN_PARAMETER

from . import constants
from .account import ApiGatewayAccount
from .api import Api
from .config import FlagsConfig
from .discovery import Discovery
from .events import ChangeEvents
from .functions import Functions
from .guards import Guards
from .maintenance import Maintenance
from .monitoring import Monitoring
from .reconciler import Reconciler
from .scheduled_changes import ScheduledChanges
from .storage import Storage


@dataclass(frozen=True)
class Service:
    """What ``compose`` builds: one construct per concern."""

    storage: Storage
    functions: Functions
    apigw_account: ApiGatewayAccount
    api: Api
    maintenance: Maintenance
    change_events: ChangeEvents
    scheduled_changes: ScheduledChanges
    guards: Guards
    monitoring: Monitoring
    discovery: Discovery


def compose(scope: Construct, *, config: FlagsConfig, declarations: Declarations | None = None) -> Service:
    """The service's constructs, children of ``scope``: the stack's own (its logical IDs unchanged), or those of
    ``singleton_flags_cdk.SingletonFlags`` in another stack."""
    storage = Storage(scope, constants.STORAGE_ID, declarations=declarations)
    functions = Functions(scope, constants.FUNCTIONS_ID, config=config, table=storage.table)
    seed = storage.add_seed(functions.seed, stage=config.stage)
    apigw_account = ApiGatewayAccount(scope, constants.ACCOUNT_ID, config=config, code=functions.code)
    api = Api(
        scope,
        constants.API_ID,
        config=config,
        functions=functions.functions,
        account_setting=apigw_account.setting,
    )
    maintenance = Maintenance(scope, constants.MAINTENANCE_ID, config=config, function=functions.maintenance)
    change_events = ChangeEvents(
        scope, constants.CHANGE_EVENTS_ID, config=config, table=storage.table, function=functions.change_events
    )
    scheduled_changes = ScheduledChanges(
        scope,
        constants.SCHEDULED_CHANGES_ID,
        writer=functions.write,
        target=functions.maintenance,
        maintenance=maintenance,
    )
    guards = Guards(
        scope, constants.GUARDS_ID, config=config, guard_function=functions.guard, write_function=functions.write
    )
    Reconciler(
        scope,
        constants.RECONCILER_ID,
        function=functions.reconcile,
        scheduled_changes=scheduled_changes.target,
        guard_closes=guards.close_target,
    )
    monitoring = Monitoring(
        scope,
        constants.MONITORING_ID,
        config=config,
        stage=api.stage,
        functions={**functions.functions, constants.RECONCILE_FUNCTION: functions.reconcile},
        dead_letter_queue=maintenance.dead_letter_queue,
        failure_queue=maintenance.failure_queue,
        change_events=change_events,
        guard_queues=guards.queues,
    )
    discovery = Discovery(
        scope,
        constants.DISCOVERY_ID,
        stage=config.stage,
        table=storage.table,
        api_url=api.rest_api.url,
        declarations=declarations,
    )
    # the seed reads the ARN the stage published before this deploy: the parameter is updated after it runs
    discovery.parameters[TABLE_ARN_PARAMETER].node.add_dependency(seed)
    return Service(
        storage,
        functions,
        apigw_account,
        api,
        maintenance,
        change_events,
        scheduled_changes,
        guards,
        monitoring,
        discovery,
    )


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
        """``declarations`` defaults to the service's own (``singleton_flags_service.contract.DECLARATIONS_FILE``);
        tests pass another set."""
        super().__init__(scope, construct_id, **kwargs)
        self.config = config
        service = compose(self, config=config, declarations=declarations)
        self.storage = service.storage
        self.functions = service.functions
        self.apigw_account = service.apigw_account
        self.api = service.api
        self.maintenance = service.maintenance
        self.change_events = service.change_events
        self.scheduled_changes = service.scheduled_changes
        self.guards = service.guards
        self.monitoring = service.monitoring
        self.discovery = service.discovery
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
            (
                constants.OUTPUT_APPROVER_POLICY_ARN,
                self.api.approver_policy.managed_policy_arn,
                "Attach to a caller that may approve change requests of protected flags (no direct write)",
            ),
            (
                constants.OUTPUT_EVENT_BUS_NAME,
                self.change_events.bus.event_bus_name,
                "Event bus of this stage's Flags Changed events (one per version)",
            ),
        ):
            CfnOutput(self, output_id, value=value, description=description)
        if self.change_events.topic is not None:
            CfnOutput(
                self,
                constants.OUTPUT_CHANGE_EVENTS_TOPIC_ARN,
                value=self.change_events.topic.topic_arn,
                description="SNS topic receiving every Flags Changed event (change_events.sns_topic)",
            )
