"""API Gateway's account-level CloudWatch Logs role, which the stage's access logging needs.

API Gateway writes logs to CloudWatch (access logs included) only once the account and region have a
CloudWatch Logs role (account setting ``cloudwatchRoleArn``); without it, creating the stage fails. That
setting is shared by every API of the account and region, so it is never overwritten: a custom resource of
our own function (functions/apigw_account) reads it and sets a role only where none is set, and is retained
(as is the role it created), since other APIs may log through it once it is set. ``cdk.json``
``apigw_account_logging_role``: ``auto`` (create a role and set it where none is), ``existing`` (the account
already has one: nothing is created), or the ARN of a role to set where none is.
"""

from __future__ import annotations

from aws_cdk import (
    Aws,
    CustomResource,
    Duration,
    RemovalPolicy,
    aws_iam as iam,
    aws_lambda as lambda_,
)
from constructs import Construct

from singleton_flags_service import vocabulary

from . import constants
from .config import LOGGING_ROLE_AUTO, LOGGING_ROLE_EXISTING, FlagsConfig
from .logs import log_group
from .nag import acknowledge

HANDLER = "singleton_flags_service.handlers.apigw_account.handler"
RESOURCE_TYPE = "Custom::ApiGatewayAccountLoggingRole"
# AWS's managed policy for this role, as API Gateway's "Set up CloudWatch logging for REST APIs" page names it.
PUSH_TO_LOGS_POLICY = "service-role/AmazonAPIGatewayPushToCloudWatchLogs"


class ApiGatewayAccount(Construct):
    """``setting``: the custom resource the stage must wait for (None with ``existing``)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: FlagsConfig, code: lambda_.Code) -> None:
        super().__init__(scope, construct_id)
        self.role: iam.Role | None = None
        self.setting: CustomResource | None = None
        mode = config.apigw_account_logging_role
        if mode == LOGGING_ROLE_EXISTING:
            return
        role_arn = self._build_role().role_arn if mode == LOGGING_ROLE_AUTO else mode
        function = self._build_function(config, code, role_arn)
        self.setting = CustomResource(
            self,
            "LoggingRole",
            service_token=function.function_arn,
            resource_type=RESOURCE_TYPE,
            properties={"RoleArn": role_arn},
            service_timeout=Duration.seconds(constants.CUSTOM_RESOURCE_TIMEOUT_SECONDS),
            removal_policy=RemovalPolicy.RETAIN,  # the account setting outlives the stack: never undone
        )

    def _build_role(self) -> iam.Role:
        self.role = iam.Role(
            self,
            "ApiGatewayLogsRole",
            assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
            description="API Gateway's account-level CloudWatch Logs role (set by singleton-flags where none was set)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(PUSH_TO_LOGS_POLICY)],
        )
        self.role.apply_removal_policy(RemovalPolicy.RETAIN)  # the account setting may point at it after us
        acknowledge(
            self.role,
            "AwsSolutions-IAM4",
            "AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for API Gateway's account-level "
            "CloudWatch Logs role; API Gateway creates the log groups of any API in the region with it.",
            finding="Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs",
        )
        return self.role

    def _build_function(self, config: FlagsConfig, code: lambda_.Code, role_arn: str) -> lambda_.Function:
        logs_group = log_group(self, "AccountSettingLogs", config.log_retention_days)
        account_arn = f"arn:{Aws.PARTITION}:apigateway:{Aws.REGION}::/account"
        role = iam.Role(
            self,
            "AccountSettingRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="singleton-flags: read API Gateway's account setting, set its CloudWatch Logs role if unset",
            inline_policies={
                "Account": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(actions=["apigateway:GET"], resources=[account_arn]),
                        iam.PolicyStatement(actions=["apigateway:PATCH"], resources=[account_arn]),
                        iam.PolicyStatement(
                            actions=["iam:PassRole"],
                            resources=[role_arn],
                            conditions={"StringEquals": {"iam:PassedToService": "apigateway.amazonaws.com"}},
                        ),
                    ]
                ),
                "Logs": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[logs_group.log_group_arn]
                        ),
                    ]
                ),
            },
        )
        function = lambda_.Function(
            self,
            "AccountSettingFunction",
            description=f"{vocabulary.DEFAULT_SERVICE} ({config.stage}): API Gateway account CloudWatch Logs role",
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.ARM_64,
            handler=HANDLER,
            code=code,
            memory_size=128,
            timeout=Duration.seconds(120),  # UpdateAccount is retried for a minute while IAM propagates a new role
            role=role,
            log_group=logs_group,
            logging_format=lambda_.LoggingFormat.JSON,
            application_log_level_v2=lambda_.ApplicationLogLevel.INFO,
            system_log_level_v2=lambda_.SystemLogLevel[config.system_log_level],
        )
        acknowledge(
            function,
            "AwsSolutions-L1",
            f"{constants.LAMBDA_RUNTIME} is the runtime every function of the project is tested on; it runs once "
            "per deploy, with the standard library and the runtime's boto3 only.",
        )
        return function
