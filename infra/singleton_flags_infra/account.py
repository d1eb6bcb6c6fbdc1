"""API Gateway's account-level CloudWatch Logs role, which the stage's access logging needs.

API Gateway writes logs to CloudWatch (access logs included) only once the account and region have a
CloudWatch Logs role (account setting ``cloudwatchRoleArn``); without it, creating the stage fails. That
setting is shared by every API of the account and region, so it is never overwritten: a custom resource of
our own function (functions/apigw_account) reads it and sets a role only where none is set, and is retained
(as is the role), since other APIs may log through it once it is set. ``cdk.json``
``apigw_account_logging_role``: ``auto`` (one role per account and region, set where none is), ``existing`` (the
account already has one: nothing is created), or the ARN of a role to set where none is.

With ``auto`` the role is the account and region's, not the stage's: it is named from the region
(``singleton-flags-apigw-logs-<region>``; IAM role names are unique in an account), and created by an SDK call
(``iam:CreateRole``) whose ``EntityAlreadyExists`` is accepted, never by a CloudFormation resource of the stack. The
first stage in an account and region creates it; every later stage finds it and uses the same ARN; no stack deletes
it (the call has no Delete), so two stages leave one retained role, not two.
"""

from __future__ import annotations

import json

from aws_cdk import (
    Aws,
    CustomResource,
    Duration,
    Fn,
    RemovalPolicy,
    Stack,
    aws_iam as iam,
    aws_lambda as lambda_,
    custom_resources as cr,
)
from constructs import Construct

from singleton_flags_service import vocabulary

from . import constants
from .config import LOGGING_ROLE_AUTO, LOGGING_ROLE_EXISTING, FlagsConfig
from .logs import log_group
from .nag import acknowledge

HANDLER = "singleton_flags_service.handlers.apigw_account.handler"
# The construct id of the CDK's AwsCustomResource provider function, a singleton of the stack.
SDK_CALL_PROVIDER_ID = "AWS" + cr.AwsCustomResource.PROVIDER_FUNCTION_UUID.replace("-", "")
RESOURCE_TYPE = "Custom::ApiGatewayAccountLoggingRole"
# AWS's managed policy for this role, as API Gateway's "Set up CloudWatch logging for REST APIs" page names it.
PUSH_TO_LOGS_POLICY = "service-role/AmazonAPIGatewayPushToCloudWatchLogs"
# The account and region's role (``auto``): one name per region, since IAM role names are account-wide.
ACCOUNT_ROLE_PREFIX = f"{vocabulary.DEFAULT_SERVICE}-apigw-logs-"
ROLE_EXISTS = "EntityAlreadyExists"
APIGATEWAY_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "apigateway.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


def account_role_name() -> str:
    """``singleton-flags-apigw-logs-<region>`` (at most 47 characters of IAM's 64), resolved at deploy time."""
    return Fn.join("", [ACCOUNT_ROLE_PREFIX, Aws.REGION])


class ApiGatewayAccount(Construct):
    """``setting``: the custom resource the stage must wait for (None with ``existing``)."""

    def __init__(self, scope: Construct, construct_id: str, *, config: FlagsConfig, code: lambda_.Code) -> None:
        super().__init__(scope, construct_id)
        self.role: iam.Role | None = None
        self.setting: CustomResource | None = None
        mode = config.apigw_account_logging_role
        if mode == LOGGING_ROLE_EXISTING:
            return
        created: list[cr.AwsCustomResource] = []
        if mode == LOGGING_ROLE_AUTO:
            role_arn = self._account_role_arn()
            created = self._build_account_role(config, role_arn)
        else:
            role_arn = mode
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
        for call in created:
            self.setting.node.add_dependency(call)

    def _account_role_arn(self) -> str:
        return Fn.join("", [f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:role/", account_role_name()])

    def _build_account_role(self, config: FlagsConfig, role_arn: str) -> list[cr.AwsCustomResource]:
        """Create the account and region's role unless it exists, then attach AWS's managed policy (idempotent).
        Both calls run on Create only, and nothing runs on Delete: the role outlives every stage."""
        name = account_role_name()
        policy_arn = f"arn:{Aws.PARTITION}:iam::aws:policy/{PUSH_TO_LOGS_POLICY}"
        logs_group = log_group(self, "AccountRoleLogs", config.log_retention_days)
        statements = [
            iam.PolicyStatement(actions=["iam:CreateRole", "iam:TagRole"], resources=[role_arn]),
            iam.PolicyStatement(
                actions=["iam:AttachRolePolicy"],
                resources=[role_arn],
                conditions={"ArnEquals": {"iam:PolicyARN": policy_arn}},
            ),
        ]
        create = cr.AwsCustomResource(
            self,
            "AccountRole",
            on_create=cr.AwsSdkCall(
                service="IAM",
                action="createRole",
                parameters={
                    "RoleName": name,
                    "AssumeRolePolicyDocument": json.dumps(APIGATEWAY_TRUST),
                    "Description": "API Gateway's account-level CloudWatch Logs role (one per account and region, "
                    "created by singleton-flags where none was set)",
                    "Tags": [{"Key": constants.TAG_PROJECT, "Value": vocabulary.DEFAULT_SERVICE}],
                },
                physical_resource_id=cr.PhysicalResourceId.of(ACCOUNT_ROLE_PREFIX + "role"),
                ignore_error_codes_matching=ROLE_EXISTS,
            ),
            policy=cr.AwsCustomResourcePolicy.from_statements(statements),
            install_latest_aws_sdk=False,
            log_group=logs_group,
            timeout=Duration.minutes(2),
        )
        attach = cr.AwsCustomResource(
            self,
            "AccountRolePolicy",
            on_create=cr.AwsSdkCall(
                service="IAM",
                action="attachRolePolicy",
                parameters={"RoleName": name, "PolicyArn": policy_arn},
                physical_resource_id=cr.PhysicalResourceId.of(ACCOUNT_ROLE_PREFIX + "policy"),
            ),
            policy=cr.AwsCustomResourcePolicy.from_statements(statements),
            install_latest_aws_sdk=False,
            log_group=logs_group,
            timeout=Duration.minutes(2),
        )
        attach.node.add_dependency(create)
        self._acknowledge_sdk_calls()
        return [create, attach]

    def _acknowledge_sdk_calls(self) -> None:
        """The SDK calls' function is the CDK's own singleton (AwsCustomResource's provider)."""
        provider = Stack.of(self).node.find_child(SDK_CALL_PROVIDER_ID)
        acknowledge(
            provider.node.find_child("ServiceRole"),
            "AwsSolutions-IAM4",
            "The CDK's AwsCustomResource provider logs with AWSLambdaBasicExecutionRole; it runs two IAM calls "
            "once per account and region (create the API Gateway logging role, attach its policy).",
            finding="Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
        )

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
