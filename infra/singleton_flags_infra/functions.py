"""The Lambda functions, each with its own least-privilege role: read, write and maintenance (the handlers of
``singleton_flags_service.contract.HANDLERS``), the seed custom resource's function, and the change-events function
(the
table's stream; no right on the table's items: infra/events.py grants it the stream and its bus).

The code asset is the service's and the client's packages as installed (no Docker), with this stage's deployment
document (infra/assets.py): boto3 comes with the runtime, Powertools from AWS's public layer pinned to the tested
version, or (``powertools: bundled``) from a layer asset installed at synth for the functions' runtime and
architecture (infra/powertools.py). Each function's environment is the contract's
(``singleton_flags_service.contract``), checked at synth against Lambda's 4 KB (infra/environment_size.py).

With ``read_snapstart`` the read function snapshots its published versions (Lambda SnapStart): each deploy that
changes it publishes one, and the API invokes it through an alias (``api_targets``); off, nothing of it is built.
"""

from __future__ import annotations

from importlib import metadata

import jsii
from aws_cdk import (
    Duration,
    RemovalPolicy,
    Stack,
    aws_dynamodb as dynamodb,
    aws_iam as iam,
    aws_lambda as lambda_,
    aws_logs as logs,
    aws_ssm as ssm,
)
from constructs import Construct, IValidation

from singleton_flags.keys import (
    AUDIT_PK,
    CHANGE_REQUEST_PK,
    GUARD_PK,
    IDEMPOTENCY_PK_PREFIX,
    MIGRATION_PK,
    PROTECTION_PK,
    SCHEDULE_PK,
    SINGLETON_PK,
)
from singleton_flags_service import vocabulary
from singleton_flags_service.contract import (
    CHANGE_EVENTS_FUNCTION,
    CHANGE_EVENTS_HANDLER,
    GUARD_FUNCTION,
    HANDLERS,
    MAINTENANCE_FUNCTION,
    READ_FUNCTION,
    RECONCILE_FUNCTION,
    RECONCILE_HANDLER,
    SEED_FUNCTION,
    SEED_HANDLER,
    WRITE_FUNCTION,
)

from . import constants
from .assets import functions_asset_dir
from .config import (
    POWERTOOLS_BUNDLED,
    FlagsConfig,
    deployment_document,
    function_environment,
)
from .cron_layer import cron_layer_directory
from .environment_size import SizedFunction
from .logs import log_group
from .nag import acknowledge
from .powertools import bundled_layer_directory

# What each function does to the table, and nothing more. TransactWriteItems is authorised per contained
# action (Update, Put, ConditionCheck), so it needs no action of its own. Query serves GET /flags/history, and
# both writers' re-seed of a missing singleton (it resumes after the newest audit record: one Query, Limit 1).
# The write API also remembers a keyed no-op: its key's Put with a ConditionCheck of the flags' version.
DYNAMODB_ACTIONS: dict[str, tuple[str, ...]] = {
    READ_FUNCTION: ("dynamodb:GetItem",),
    WRITE_FUNCTION: (
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:PutItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:Query",
    ),
    MAINTENANCE_FUNCTION: ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:Query"),
    # a guard-revert is a revert (GetItem, the transaction's Update and Put, Query to restore a missing item); the
    # guards' partition: GetItem, Query (the baking guards of an alarm), UpdateItem (a guard's end)
    GUARD_FUNCTION: ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:Query"),
    # FlagStore.seed: read the item, restore it from the trail (Query), add flags as a version (transaction)
    SEED_FUNCTION: ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:Query"),
    # the pending items (Query), each overdue one recorded once (UpdateItem): infra/reconciler.py
    RECONCILE_FUNCTION: ("dynamodb:Query", "dynamodb:UpdateItem"),
    # the audit record of each new image of the flags item (singleton_flags_service.events.AuditCheck); its stream
    # and PutEvents are granted by infra/events.py
    CHANGE_EVENTS_FUNCTION: ("dynamodb:GetItem",),
}
TRACED = frozenset(HANDLERS)  # the seed runs once per deploy: no trace
# The partitions each function may touch (dynamodb:LeadingKeys names partition keys only): the reader the flags
# and nothing else; the writers also the audit trail, the write API its Idempotency-Key items and the guards it
# creates and lists, the write API (create, list, cancel) and the maintenance function (apply) the scheduled
# changes' items, the guard function the guards it ends; the write API its change requests and (for the history) the
# records of lowered protection; every writer the migration's record (while a migration expands, its writes read
# the mapping and both declarations there; the write API writes it); the change-events function the audit trail
# and the migration's record (read).
# The later item (FLAGS#V2) is in the flags' partition.
PARTITIONS: dict[str, tuple[str, ...]] = {
    READ_FUNCTION: (SINGLETON_PK,),
    WRITE_FUNCTION: (
        SINGLETON_PK,
        AUDIT_PK,
        GUARD_PK,
        f"{IDEMPOTENCY_PK_PREFIX}*",
        SCHEDULE_PK,
        CHANGE_REQUEST_PK,
        PROTECTION_PK,
        MIGRATION_PK,
    ),
    MAINTENANCE_FUNCTION: (SINGLETON_PK, AUDIT_PK, SCHEDULE_PK, MIGRATION_PK),
    GUARD_FUNCTION: (SINGLETON_PK, AUDIT_PK, GUARD_PK, MIGRATION_PK),
    SEED_FUNCTION: (SINGLETON_PK, AUDIT_PK, PROTECTION_PK, MIGRATION_PK),
    RECONCILE_FUNCTION: (SCHEDULE_PK, GUARD_PK),
    CHANGE_EVENTS_FUNCTION: (AUDIT_PK, MIGRATION_PK),
}


def leading_keys_condition(name: str) -> dict[str, dict[str, list[str]]]:
    """Every key of the request in the function's partitions (StringLike only where a pattern is needed)."""
    keys = list(PARTITIONS[name])
    operator = "ForAllValues:StringLike" if any("*" in key for key in keys) else "ForAllValues:StringEquals"
    return {operator: {"dynamodb:LeadingKeys": keys}}


def title_of(name: str) -> str:
    """A function's name as its construct ids start: ``read`` -> ``Read``, ``change_events`` -> ``ChangeEvents``."""
    return "".join(part.capitalize() for part in name.split("_"))


# What never goes into the asset: caches, tests, editor and tool litter. declarations.json stays.
ASSET_EXCLUDES = [
    "**/__pycache__",
    "**/*.pyc",
    "**/.pytest_cache",
    "**/.mypy_cache",
    "**/.ruff_cache",
    "**/tests",
    "**/test_*.py",
    "**/conftest.py",
    "**/*.md",
    "**/.DS_Store",
    "**/*.egg-info",
]


READ_ALIAS_ID = "ReadAlias"
READ_ALIAS_NAME = "live"


@jsii.implements(IValidation)
class SnapStartRules:
    """At synth, what Lambda would refuse of a SnapStart function at deploy: provisioned concurrency on its version
    or its alias (https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html). A runtime below Python 3.12 is
    refused earlier: by the config (``read_snapstart``) and by the CDK's ``Function`` itself."""

    def __init__(self, function: lambda_.Function, alias: lambda_.Alias) -> None:
        self._function = function
        self._alias = alias

    def validate(self) -> list[str]:
        stack = Stack.of(self._function)
        provisioned = [
            child.node.path
            for child in (self._alias, self._function.current_version)
            if isinstance(child.node.default_child, (lambda_.CfnAlias, lambda_.CfnVersion))
            and stack.resolve(child.node.default_child.provisioned_concurrency_config) is not None
        ]
        return [f"{path}: SnapStart does not support provisioned concurrency" for path in provisioned]


class Functions(Construct):
    """read, write and maintenance functions, keyed by the names of ``singleton_flags_service.contract.HANDLERS``."""

    def __init__(self, scope: Construct, construct_id: str, *, config: FlagsConfig, table: dynamodb.ITableV2) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self._table = table
        self.code = self._code = lambda_.Code.from_asset(
            str(functions_asset_dir(constants.BUILD_DIR, deployment_document(config))), exclude=ASSET_EXCLUDES
        )
        self._layer = self._build_powertools_layer()
        self._cron_layer = self._build_cron_layer()
        self.functions: dict[str, lambda_.Function] = {
            name: self._build_function(name, handler) for name, handler in HANDLERS.items()
        }
        # Not in `functions` (alarmed per invocation): CloudFormation reports a failed seed as a failed deploy.
        self.seed = self._build_function(SEED_FUNCTION, SEED_HANDLER)
        self.change_events = self._build_function(CHANGE_EVENTS_FUNCTION, CHANGE_EVENTS_HANDLER)
        self.reconcile = self._build_function(RECONCILE_FUNCTION, RECONCILE_HANDLER)  # infra/reconciler.py
        # What the API invokes for each route's function: the read function's alias where SnapStart is on
        self.read_alias = self._build_read_alias() if config.read_snapstart else None
        self.api_targets: dict[str, lambda_.IFunction] = {
            **self.functions,
            **({READ_FUNCTION: self.read_alias} if self.read_alias is not None else {}),
        }

    @property
    def read(self) -> lambda_.Function:
        return self.functions[READ_FUNCTION]

    @property
    def write(self) -> lambda_.Function:
        return self.functions[WRITE_FUNCTION]

    @property
    def maintenance(self) -> lambda_.Function:
        return self.functions[MAINTENANCE_FUNCTION]

    @property
    def guard(self) -> lambda_.Function:
        return self.functions[GUARD_FUNCTION]

    def _build_read_alias(self) -> lambda_.Alias:
        """SnapStart (``read_snapstart``) applies to published versions only: each deploy that changes the function
        publishes a version (``current_version``), and the API invokes it through this alias."""
        alias = lambda_.Alias(self, READ_ALIAS_ID, alias_name=READ_ALIAS_NAME, version=self.read.current_version)
        alias.node.add_validation(SnapStartRules(self.read, alias))
        return alias

    def _build_powertools_layer(self) -> lambda_.ILayerVersion:
        if self._config.powertools == POWERTOOLS_BUNDLED:
            # Where AWS publishes no layer (or its parameter is missing): the pinned release, installed for
            # the functions' runtime and architecture, as a layer of this stack.
            return lambda_.LayerVersion(
                self,
                constants.POWERTOOLS_LAYER_ID,
                code=lambda_.Code.from_asset(str(bundled_layer_directory())),
                compatible_runtimes=[lambda_.Runtime.PYTHON_3_13],
                compatible_architectures=[lambda_.Architecture.ARM_64],
                description=f"aws-lambda-powertools {constants.POWERTOOLS_VERSION} ({constants.LAMBDA_RUNTIME}, "
                f"{constants.LAMBDA_ARCHITECTURE}), bundled",
            )
        # Resolved by CloudFormation at deploy time from AWS's public parameter (a stack parameter of type
        # AWS::SSM::Parameter::Value<String>): no lookup at synth, no account needed to synthesize.
        arn = ssm.StringParameter.value_for_string_parameter(self, constants.POWERTOOLS_LAYER_PARAMETER)
        return lambda_.LayerVersion.from_layer_version_arn(self, constants.POWERTOOLS_LAYER_ID, arn)

    def _build_cron_layer(self) -> lambda_.LayerVersion:
        """croniter, which only the write function imports (GET /flags/windows)."""
        return lambda_.LayerVersion(
            self,
            "CronLayer",
            code=lambda_.Code.from_asset(str(cron_layer_directory())),
            compatible_runtimes=[lambda_.Runtime.PYTHON_3_13],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description=f"croniter {metadata.version('croniter')}: the write function's maintenance-window crons",
        )

    def _environment(self, name: str) -> dict[str, str]:
        return function_environment(self._config, self._table.table_name, name)

    def _snapstart(self, name: str) -> bool:
        return name == READ_FUNCTION and self._config.read_snapstart

    def _build_role(self, name: str, logs_group: logs.ILogGroup) -> iam.Role:
        rights = f"{', '.join(DYNAMODB_ACTIONS[name])} on the flags table"
        policies = {
            "Table": iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        actions=list(DYNAMODB_ACTIONS[name]),
                        resources=[self._table.table_arn],
                        conditions=leading_keys_condition(name),
                    )
                ]
            )
        }
        if name == CHANGE_EVENTS_FUNCTION:
            rights += ", its stream, PutEvents to its bus"  # granted by infra/events.py
        return iam.Role(
            self,
            f"{title_of(name)}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{vocabulary.DEFAULT_SERVICE} {name} function: {rights}",
            inline_policies={
                **policies,
                # Instead of AWSLambdaBasicExecutionRole (any log group): only this function's own log group,
                # which the stack creates, so CreateLogGroup is not needed.
                "Logs": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                            resources=[logs_group.log_group_arn],
                        )
                    ]
                ),
            },
        )

    def _build_function(self, name: str, handler: str) -> lambda_.Function:
        title = title_of(name)
        logs_group = log_group(self, f"{title}Logs", self._config.log_retention_days)
        role = self._build_role(name, logs_group)
        function = SizedFunction(
            self,
            f"{title}Function",
            name=name,
            description=f"{vocabulary.DEFAULT_SERVICE} ({self._config.stage}): {name}",
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.ARM_64,
            handler=handler,
            code=self._code,
            layers=[self._layer, self._cron_layer] if name == WRITE_FUNCTION else [self._layer],
            memory_size=constants.MEMORY_MB[name],
            timeout=Duration.seconds(constants.TIMEOUT_SECONDS[name]),
            environment=self._environment(name),
            role=role,
            tracing=lambda_.Tracing.ACTIVE if name in TRACED else lambda_.Tracing.DISABLED,
            log_group=logs_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel[self._config.system_log_level],
            # Off unless configured: reserving concurrency fails the deploy where it would leave the account less
            # than Lambda's minimum unreserved (new accounts start at that minimum); the preflight checks it.
            reserved_concurrent_executions=self._config.read_reserved_concurrency if name == READ_FUNCTION else None,
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS if self._snapstart(name) else None,
            # a replaced version is deleted, not retained: a published version's snapshot is cached and billed
            # while the version is active
            current_version_options=(
                lambda_.VersionOptions(removal_policy=RemovalPolicy.DESTROY) if self._snapstart(name) else None
            ),
        )
        acknowledge(
            function,
            "AwsSolutions-L1",
            f"{constants.LAMBDA_RUNTIME} is the runtime the project tests and the pinned Powertools layer is "
            "published for; moving runtime is a deliberate change of the layer parameter too.",
        )
        if name in TRACED:
            acknowledge(
                role,
                "AwsSolutions-IAM5",
                "Added by Lambda active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords do not support "
                "resource-level permissions, so their resource is '*' (actions are explicit, no action wildcard).",
                finding="Resource::*",
            )
        return function
