"""The REST API: the routes of ``singleton_flags_service.api.routes.ROUTES``, every method AWS_IAM-authorised, the two
IAM
managed policies (reader, admin) a caller is given to invoke it, and the X-Ray sampling rule of its reads."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import cast

from aws_cdk import (
    Aws,
    CfnElement,
    CustomResource,
    Duration,
    aws_apigateway as apigw,
    aws_ec2 as ec2,
    aws_iam as iam,
    aws_lambda as lambda_,
    aws_xray as xray,
)
from constructs import Construct

from singleton_flags_service.api.http import allowed_methods
from singleton_flags_service.api.routes import (
    APPROVE_CHANGE_REQUEST,
    CREATE_CHANGE_REQUEST,
    GET_CHANGE_REQUEST,
    GET_DECLARATIONS,
    GET_FLAGS,
    GET_HISTORY,
    LIST_CHANGE_REQUESTS,
    REJECT_CHANGE_REQUEST,
    ROUTES,
    WITHDRAW_CHANGE_REQUEST,
    Route,
)
from singleton_flags_service.contract import READ_FUNCTION, WRITE_FUNCTION

from . import constants
from .config import ApiResourcePolicy, FlagsConfig
from .logs import log_group
from .nag import acknowledge, logical_id

# One JSON line per request: who (the IAM identity), what, how it ended and how long it took. Every byte is
# ingested for every request (reads included): fields another field or the function's log already carries are
# left out (caller ~ userArn, resourcePath ~ path, protocol, responseLength, integrationLatency).
ACCESS_LOG_FORMAT = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTime",
    "ip": "$context.identity.sourceIp",
    "userArn": "$context.identity.userArn",
    "httpMethod": "$context.httpMethod",
    "path": "$context.path",
    "status": "$context.status",
    "responseLatency": "$context.responseLatency",
    "errorType": "$context.error.responseType",
    "errorMessage": "$context.error.message",
    "xrayTraceId": "$context.xrayTraceId",
}
# X-Ray: GET requests of this stage (the read routes, and history) are traced at 1 % with no per-second
# reservoir; X-Ray's default rule (1 request a second, then 5 %) would record over a tenth of a busy read
# path. Writes keep the default rule. Priority: before the default rule, after rules an operator adds first.
READ_SAMPLING_RATE = 0.01
READ_SAMPLING_PRIORITY = 9000
# API Gateway's own refusals (missing signature, denied, throttled) in the contract's error shape.
GATEWAY_ERROR_TEMPLATE = '{"error": {"code": "$context.error.responseType", "message": $context.error.messageString}}'
# A throttled request (THROTTLED, 429) says when to retry, in delta-seconds (RFC 9110 section 10.2.3): the OFREP
# providers pause evaluations until then. The stage's token bucket refills every second.
THROTTLED_RETRY_AFTER_SECONDS = 1
_PATH_PARAMETER = re.compile(r"\{([^}]+)\}")


def execute_api_path(route: Route) -> str:
    """The route's path as it appears in an execute-api ARN: a path parameter matches any segment."""
    return _PATH_PARAMETER.sub("*", route.path)


def reader_routes() -> tuple[Route, ...]:
    return tuple(route for route in ROUTES if route.function == READ_FUNCTION)


# What an approver does: read the flags, their declarations and history, and work change requests; never a direct
# write (no PATCH, revert, restore, schedule), so a protected flag changes only through someone else's request.
APPROVER_ROUTES = (
    GET_FLAGS,
    GET_DECLARATIONS,
    GET_HISTORY,
    CREATE_CHANGE_REQUEST,
    LIST_CHANGE_REQUESTS,
    GET_CHANGE_REQUEST,
    APPROVE_CHANGE_REQUEST,
    REJECT_CHANGE_REQUEST,
    WITHDRAW_CHANGE_REQUEST,
)


def reader_deny_paths(routes: tuple[Route, ...] = ROUTES) -> tuple[str, ...]:
    """``METHOD/path`` patterns the reader policy denies: every static path a reader's wildcard grant would
    also match, with and without anything below it (``GET/flags/history`` and ``GET/flags/history/*``).

    API Gateway does not document how it routes a trailing slash, so both forms are denied whatever it does.
    The patterns come from the route table: a static route added under /flags is denied to readers by
    construction, whatever its method. A flag whose name only starts like a route (``history_days``) stays
    readable. Granting flag names one by one instead would hit IAM's 6,144-character managed policy limit.
    """
    readable = tuple(route for route in routes if route.function == READ_FUNCTION)
    grants = [(grant.method, execute_api_path(grant)) for grant in readable if execute_api_path(grant) != grant.path]
    denied: list[str] = []
    for path in sorted({route.path for route in routes if route not in readable and "{" not in route.path}):
        for method, pattern in grants:
            if fnmatchcase(path, pattern):
                for form in (f"{method}{path}", f"{method}{path}/*"):
                    if form not in denied:
                        denied.append(form)
    return tuple(denied)


def _method_and_path(pattern: str) -> tuple[str, str]:
    """``GET/flags/history/*`` -> (``GET``, ``/flags/history/*``)."""
    method, _, path = pattern.partition("/")
    return method, f"/{path}"


def method_throttling_key(route: Route) -> str:
    """The key of StageOptions.method_options for a route: ``<resource path>/<HTTP method>``."""
    return f"{route.path}/{route.method}"


def resource_policy(policy: ApiResourcePolicy) -> iam.PolicyDocument:
    """The API's resource policy (``api_resource_policy``): it narrows who may call, it grants nothing.

    The Allow names the stack's account as principal: within the account, a caller still needs the reader or admin
    policy (an account principal delegates to the account's IAM policies); a private API needs an Allow. The Deny
    refuses every request outside the configured account, organization or VPC endpoints, whatever any policy says.
    """
    invoke = "execute-api:Invoke"
    everything = "execute-api:/*"
    condition: dict[str, dict[str, str | list[str]]]
    if policy.account:
        condition = {"StringNotEquals": {"aws:PrincipalAccount": Aws.ACCOUNT_ID}}
    elif policy.organization_id:
        condition = {"StringNotEquals": {"aws:PrincipalOrgID": policy.organization_id}}
    else:
        condition = {"StringNotEquals": {"aws:SourceVpce": list(policy.vpc_endpoint_ids)}}
    return iam.PolicyDocument(
        statements=[
            iam.PolicyStatement(
                actions=[invoke], resources=[everything], principals=[iam.AccountPrincipal(Aws.ACCOUNT_ID)]
            ),
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                actions=[invoke],
                resources=[everything],
                principals=[iam.AnyPrincipal()],
                conditions=condition,
            ),
        ]
    )


class Api(Construct):
    """RestApi + stage (throttling, access logs, tracing) + the reader and admin managed policies."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FlagsConfig,
        functions: Mapping[str, lambda_.IFunction],
        account_setting: CustomResource | None = None,
    ) -> None:
        """``account_setting``: what sets API Gateway's account-level CloudWatch Logs role; the stage waits
        for it (its access logging cannot be created before the account has the role)."""
        super().__init__(scope, construct_id)
        self._config = config
        self._functions = functions
        self.access_logs = log_group(self, "AccessLogs", config.log_retention_days)
        self.rest_api = self._build_rest_api()
        if account_setting is not None:
            self.stage.node.add_dependency(account_setting)
        self._acknowledge_stage()
        self.sampling_rule = self._build_sampling_rule()
        self._build_routes()
        self._build_no_route_answers()
        self._build_gateway_responses()
        self.reader_policy = self._build_policy(
            constants.READER_POLICY_ID,
            "Invoke the read routes of the singleton-flags API (GET /flags, GET /flags/{name}, the OFREP POSTs)",
            allow=reader_routes(),
            deny=reader_deny_paths(),
        )
        self.approver_policy = self._build_policy(
            constants.APPROVER_POLICY_ID,
            "Read the singleton-flags API's flags, declarations and history, and create, approve, reject and "
            "withdraw change requests; no direct write",
            allow=APPROVER_ROUTES,
            deny=(),
        )
        self.admin_policy = self._build_policy(
            constants.ADMIN_POLICY_ID,
            "Invoke every route of the singleton-flags API (read, OFREP, change, history, revert, restore)",
            allow=ROUTES,
            deny=(),
        )

    @property
    def stage(self) -> apigw.Stage:
        return self.rest_api.deployment_stage

    def _acknowledge_stage(self) -> None:
        acknowledge(
            self.stage,
            "AwsSolutions-APIG6",
            "Execution logging is off on purpose: it would ingest every request's execution trace (the read path's "
            "main log cost). Every request is in the JSON access log and every function logs its own errors. "
            "(The account-level CloudWatch Logs role that access logging needs is set by ApiGatewayAccount.)",
        )
        acknowledge(
            self.stage,
            "AwsSolutions-APIG3",
            "Every method requires a SigV4-signed caller holding the reader or admin policy, and the stage is "
            "throttled; a WAF web ACL would add cost without a threat it addresses here.",
        )

    def _build_rest_api(self) -> apigw.RestApi:
        read, write = self._config.api_throttling.read, self._config.api_throttling.write
        policy = self._config.api_resource_policy
        private = policy is not None and bool(policy.vpc_endpoint_ids)
        return apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=constants.stack_name(self._config.stage),
            description="singleton-flags: application-wide flags in one DynamoDB item",
            endpoint_types=None if private else [apigw.EndpointType.REGIONAL],
            endpoint_configuration=(
                apigw.EndpointConfiguration(
                    types=[apigw.EndpointType.PRIVATE],
                    vpc_endpoints=[
                        ec2.InterfaceVpcEndpoint.from_interface_vpc_endpoint_attributes(
                            self, f"Endpoint{index}", vpc_endpoint_id=endpoint, port=443
                        )
                        for index, endpoint in enumerate(policy.vpc_endpoint_ids)
                    ],
                )
                if private and policy is not None
                else None
            ),
            policy=resource_policy(policy) if policy is not None else None,
            cloud_watch_role=False,
            default_method_options=apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM),
            deploy_options=apigw.StageOptions(
                stage_name=self._config.stage,
                tracing_enabled=True,
                throttling_rate_limit=read.rate_limit,
                throttling_burst_limit=read.burst_limit,
                method_options={
                    method_throttling_key(route): apigw.MethodDeploymentOptions(
                        throttling_rate_limit=write.rate_limit,
                        throttling_burst_limit=write.burst_limit,
                    )
                    for route in ROUTES
                    if route.function == WRITE_FUNCTION
                },
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FORMAT)),
            ),
        )

    def _build_sampling_rule(self) -> xray.CfnSamplingRule:
        """X-Ray sampling rules are account-wide: named per stage, matched on this stage's service name."""
        stage = self._config.stage
        return xray.CfnSamplingRule(
            self,
            "ReadSamplingRule",
            sampling_rule=xray.CfnSamplingRule.SamplingRuleProperty(
                rule_name=constants.sampling_rule_name(stage),
                priority=READ_SAMPLING_PRIORITY,
                fixed_rate=READ_SAMPLING_RATE,
                reservoir_size=0,
                service_name=f"{constants.stack_name(stage)}/{stage}",  # API Gateway's: <api name>/<stage>
                service_type="AWS::ApiGateway::Stage",
                host="*",
                http_method="GET",
                url_path="*",
                resource_arn="*",
                version=1,
            ),
        )

    def _build_routes(self) -> None:
        # Validates the declared path parameters only: bodies are validated by the functions, which answer
        # in the API's own error contract (an API Gateway model would answer in another shape).
        validator = self.rest_api.add_request_validator(
            "PathValidator", validate_request_parameters=True, validate_request_body=False
        )
        for route in ROUTES:
            resource = self.rest_api.root.resource_for_path(route.path)
            method = resource.add_method(
                route.method,
                apigw.LambdaIntegration(
                    self._functions[route.function],
                    allow_test_invoke=False,
                    timeout=Duration.seconds(constants.INTEGRATION_TIMEOUT_SECONDS),
                ),
                authorization_type=apigw.AuthorizationType.IAM,
                request_validator=validator,
                request_parameters={
                    f"method.request.path.{name}": True for name in _PATH_PARAMETER.findall(route.path)
                },
            )
            acknowledge(
                method,
                "AwsSolutions-COG4",
                "Callers are AWS principals authorised by IAM (AWS_IAM, SigV4) through the reader/admin managed "
                "policies; there are no end users and so no Cognito user pool.",
            )
        acknowledge(
            self.rest_api,
            "AwsSolutions-APIG2",
            "API Gateway validates the required path parameters (PathValidator). Bodies are validated by the "
            "write function against the flag declarations, answering in the API's error contract; an API Gateway "
            "model would duplicate those rules and answer in another shape.",
        )

    def _build_no_route_answers(self) -> None:
        """405 (with Allow) for a method a route path does not serve, 404 for a path the API does not have.

        API Gateway picks the most specific method, so an IAM-authorised ANY method with a MOCK integration on
        each route path answers only the methods no route claims, and a root ``{proxy+}`` answers only paths
        no resource matches. Without them, API Gateway answers 403 MISSING_AUTHENTICATION_TOKEN for both.
        """
        for path in sorted({route.path for route in ROUTES}):
            allowed = allowed_methods(path)
            self._add_mock(
                self.rest_api.root.resource_for_path(path),
                405,
                "METHOD_NOT_ALLOWED",
                f"this method is not supported on {path}; use {', '.join(allowed)}",
                allow=", ".join(allowed),
            )
        routed = {route.path for route in ROUTES}
        between = sorted(
            {
                prefix
                for path in routed
                for prefix in ("/".join(path.split("/")[:end]) for end in range(2, path.count("/") + 1))
                if prefix not in routed
            }
        )  # /ofrep, /ofrep/v1, /ofrep/v1/evaluate: resources on the way to a route, with no method of their own
        resources = [self.rest_api.root, self.rest_api.root.add_resource("{proxy+}")]
        resources += [self.rest_api.root.resource_for_path(path) for path in between]
        for resource in resources:
            self._add_mock(resource, 404, "NOT_FOUND", "no such route")

    def _add_mock(self, resource: apigw.IResource, status: int, code: str, message: str, allow: str = "") -> None:
        body = json.dumps({"error": {"code": code, "message": message}})
        headers = {"method.response.header.Allow": f"'{allow}'"} if allow else {}
        method = resource.add_method(
            "ANY",
            apigw.MockIntegration(
                request_templates={"application/json": '{"statusCode": 200}'},
                passthrough_behavior=apigw.PassthroughBehavior.WHEN_NO_MATCH,
                integration_responses=[
                    apigw.IntegrationResponse(
                        status_code=str(status),
                        response_templates={"application/json": body},
                        response_parameters=headers or None,
                    )
                ],
            ),
            authorization_type=apigw.AuthorizationType.IAM,
            method_responses=[
                apigw.MethodResponse(
                    status_code=str(status),
                    response_parameters=dict.fromkeys(headers, True) or None,
                )
            ],
        )
        acknowledge(
            method,
            "AwsSolutions-COG4",
            "Callers are AWS principals authorised by IAM (AWS_IAM, SigV4); this MOCK method only answers "
            "405/404 for requests no route serves.",
        )

    def _build_gateway_responses(self) -> None:
        for response_type, name in (
            (apigw.ResponseType.DEFAULT_4_XX, "Default4xx"),
            (apigw.ResponseType.DEFAULT_5_XX, "Default5xx"),
        ):
            self.rest_api.add_gateway_response(
                name,
                type=response_type,
                templates={"application/json": GATEWAY_ERROR_TEMPLATE},
            )
        self.rest_api.add_gateway_response(
            "Throttled",
            type=apigw.ResponseType.THROTTLED,
            status_code="429",
            response_headers={"Retry-After": f"'{THROTTLED_RETRY_AFTER_SECONDS}'"},
            templates={"application/json": GATEWAY_ERROR_TEMPLATE},
        )

    def _arn(self, method: str, path: str) -> str:
        return self.rest_api.arn_for_execute_api(method, path, self.stage.stage_name)

    def _route_arns(self, routes: tuple[Route, ...]) -> list[str]:
        return [self._arn(route.method, execute_api_path(route)) for route in routes]

    def grant_admin(self, grantee: iam.IGrantable) -> iam.Grant:
        """What the admin policy allows (every route), added to ``grantee``'s own policy."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=["execute-api:Invoke"], resource_arns=self._route_arns(ROUTES)
        )

    def _build_policy(
        self,
        construct_id: str,
        description: str,
        *,
        allow: tuple[Route, ...],
        deny: tuple[str, ...],
    ) -> iam.ManagedPolicy:
        statements = [
            iam.PolicyStatement(
                sid="InvokeRoutes",
                actions=["execute-api:Invoke"],
                resources=self._route_arns(allow),
            )
        ]
        if deny:
            statements.append(
                iam.PolicyStatement(
                    sid="DenyOtherRoutesUnderWildcard",
                    effect=iam.Effect.DENY,
                    actions=["execute-api:Invoke"],
                    resources=[self._arn(*_method_and_path(pattern)) for pattern in deny],
                )
            )
        policy = iam.ManagedPolicy(self, construct_id, description=description, statements=statements)
        for route in allow:
            if execute_api_path(route) != route.path:
                acknowledge(
                    policy,
                    "AwsSolutions-IAM5",
                    f"'*' stands for the path parameter of {route.method} {route.path} (any flag name), on this API "
                    "and stage only; static routes it would also match (and below them) are denied by the reader "
                    "policy.",
                    finding=f"Resource::{self._finding_arn(route.method, execute_api_path(route))}",
                )
        return policy

    def _finding_arn(self, method: str, path: str) -> str:
        """An execute-api ARN as cdk-nag prints it in a finding."""
        api_id = logical_id(cast(CfnElement, self.rest_api.node.default_child))  # the CfnRestApi
        stage_id = logical_id(cast(CfnElement, self.stage.node.default_child))  # the CfnStage
        return f"arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<{api_id}>/<{stage_id}>/{method}{path}"
