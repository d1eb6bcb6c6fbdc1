"""The REST API as synthesized: routes, AWS_IAM everywhere, throttling, access logs, policies, outputs."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from singleton_flags_service.api.routes import ROUTES
from singleton_flags_service.contract import HANDLERS
from tests.support import templates as tt
from tests.support.synth import Synth

pytestmark = pytest.mark.infra

WRITE_ROUTES = {
    ("PATCH", "/flags"),
    ("GET", "/flags/history"),
    ("GET", "/flags/declarations"),
    ("GET", "/flags/windows"),
    ("POST", "/flags/revert"),
    ("POST", "/flags/restore"),
    ("POST", "/flags/schedules"),
    ("GET", "/flags/schedules"),
    ("DELETE", "/flags/schedules/{id}"),
    ("GET", "/flags/guards"),
    ("POST", "/flags/change-requests"),
    ("GET", "/flags/change-requests"),
    ("GET", "/flags/change-requests/{id}"),
    ("POST", "/flags/change-requests/{id}/approve"),
    ("POST", "/flags/change-requests/{id}/reject"),
    ("POST", "/flags/change-requests/{id}/withdraw"),
    ("GET", "/flags/migration"),
    ("POST", "/flags/migration"),
    ("POST", "/flags/migration/finalise"),
}


def resource_paths(synth: Synth) -> dict[str, str]:
    """Logical id of each AWS::ApiGateway::Resource -> its full path (the root is '/')."""
    raw = synth.resources("AWS::ApiGateway::Resource")
    ((api_id, _),) = synth.resources("AWS::ApiGateway::RestApi").items()

    def path(lid: str) -> str:
        parent = raw[lid]["Properties"]["ParentId"]
        prefix = "" if parent == {"Fn::GetAtt": [api_id, "RootResourceId"]} else path(parent["Ref"])
        return f"{prefix}/{raw[lid]['Properties']['PathPart']}"

    return {lid: path(lid) for lid in raw}


def methods(synth: Synth) -> dict[tuple[str, str], dict[str, Any]]:
    paths = resource_paths(synth)
    found = {}
    for method in synth.resources("AWS::ApiGateway::Method").values():
        properties = method["Properties"]
        resource = properties["ResourceId"]
        path = paths[resource["Ref"]] if "Ref" in resource else "/"  # the root is a GetAtt of the RestApi
        found[(properties["HttpMethod"], path)] = properties
    return found


def integrated_function(synth: Synth, properties: dict[str, Any]) -> str:
    """The handler of the Lambda function a proxy integration calls."""
    uri = tt.render(properties["Integration"]["Uri"])
    (function_id,) = [lid for lid in synth.resources("AWS::Lambda::Function") if f"<{lid}.Arn>" in uri]
    return synth.template["Resources"][function_id]["Properties"]["Handler"]


def test_every_route_and_only_the_routes(synth: Synth) -> None:
    found = {key: properties for key, properties in methods(synth).items() if key[0] != "ANY"}
    assert set(found) == {(route.method, route.path) for route in ROUTES}
    for route in ROUTES:
        properties = found[(route.method, route.path)]
        assert properties["Integration"]["Type"] == "AWS_PROXY"
        assert properties["Integration"]["IntegrationHttpMethod"] == "POST"
        assert integrated_function(synth, properties) == HANDLERS[route.function]


def test_every_method_is_iam_authorised(any_synth: Synth) -> None:
    all_methods = any_synth.resources("AWS::ApiGateway::Method")
    assert all_methods
    for lid, method in all_methods.items():
        if method["Properties"]["HttpMethod"] == "OPTIONS":
            continue
        assert method["Properties"]["AuthorizationType"] == "AWS_IAM", lid


def test_path_parameters_are_required_and_validated(synth: Synth) -> None:
    properties = methods(synth)[("GET", "/flags/{name}")]
    assert properties["RequestParameters"] == {"method.request.path.name": True}
    validator = synth.template["Resources"][properties["RequestValidatorId"]["Ref"]]["Properties"]
    assert validator["ValidateRequestParameters"] is True


def test_lambda_permissions_are_per_method_without_test_invoke(synth: Synth) -> None:
    permissions = synth.resources("AWS::Lambda::Permission").values()
    api_permissions = [p for p in permissions if p["Properties"]["Principal"] == "apigateway.amazonaws.com"]
    source_arns = [tt.render(p["Properties"]["SourceArn"]) for p in api_permissions]
    assert len(source_arns) == len(ROUTES)
    assert not [arn for arn in source_arns if "/test-invoke-stage/" in arn]
    ((stage_id, _),) = synth.resources("AWS::ApiGateway::Stage").items()
    for route in ROUTES:
        path = re.sub(r"\{[^}]+\}", "*", route.path)  # a path parameter is any segment in the ARN
        assert any(arn.endswith(f"/<{stage_id}>/{route.method}{path}") for arn in source_arns), route


def test_stage_throttling_tracing_and_access_logs(any_synth: Synth) -> None:
    _, stage = any_synth.one("AWS::ApiGateway::Stage")
    properties = stage["Properties"]
    config = any_synth.config
    assert properties["StageName"] == config.stage
    assert properties["TracingEnabled"] is True
    settings = {(s["HttpMethod"], s["ResourcePath"]): s for s in properties["MethodSettings"]}
    read, write = config.api_throttling.read, config.api_throttling.write
    default = settings.pop(("*", "/*"))
    assert (default["ThrottlingRateLimit"], default["ThrottlingBurstLimit"]) == (read.rate_limit, read.burst_limit)
    expected = {(method, path.replace("/", "~1")) for method, path in WRITE_ROUTES}
    assert set(settings) == {(method, "/" + path) for method, path in expected}
    for setting in settings.values():
        assert (setting["ThrottlingRateLimit"], setting["ThrottlingBurstLimit"]) == (
            write.rate_limit,
            write.burst_limit,
        )
    access = properties["AccessLogSetting"]
    log_group = any_synth.template["Resources"][tt.referenced_id(access["DestinationArn"])]
    assert log_group["Properties"]["RetentionInDays"] == config.log_retention_days
    fields = json.loads(access["Format"])
    assert fields["userArn"] == "$context.identity.userArn"
    # who, what, how it ended, how long: nothing the other fields or the function's own log already say
    assert set(fields) == {
        "requestId",
        "requestTime",
        "ip",
        "userArn",
        "httpMethod",
        "path",
        "status",
        "responseLatency",
        "errorType",
        "errorMessage",
        "xrayTraceId",
    }


# ---------------------------------------------------------------------------------------------- time budgets

API_GATEWAY_MAX_INTEGRATION_MS = 29_000  # REST API quota: 50 ms - 29 s (without a quota increase)


def test_each_function_times_out_before_its_integration_which_fits_api_gateways_quota(synth: Synth) -> None:
    # A function that outlives its integration keeps working for a caller that already got a 504
    functions = synth.resources("AWS::Lambda::Function")
    for (method, path), properties in methods(synth).items():
        integration = properties["Integration"]
        if integration["Type"] != "AWS_PROXY":
            continue
        timeout_ms = integration.get("TimeoutInMillis")
        assert timeout_ms is not None and timeout_ms <= API_GATEWAY_MAX_INTEGRATION_MS, (method, path)
        (function_id,) = [lid for lid in functions if f"<{lid}.Arn>" in tt.render(integration["Uri"])]
        assert functions[function_id]["Properties"]["Timeout"] * 1000 < timeout_ms, (method, path)
    _, write = tt.function_by_handler(synth.template, HANDLERS["write"])
    assert write["Properties"]["Timeout"] == 20


# ---------------------------------------------------------------------------------------------- tracing


def test_read_routes_are_traced_at_a_low_rate_by_a_per_stage_sampling_rule(any_synth: Synth) -> None:
    ((_, rule),) = any_synth.resources("AWS::XRay::SamplingRule").items()
    properties = rule["Properties"]["SamplingRule"]
    stage = any_synth.config.stage
    assert properties["RuleName"] == f"flags-{stage}-read" and len(properties["RuleName"]) <= 32
    assert properties["ServiceName"] == f"singleton-flags-{stage}/{stage}"  # API Gateway's: <api name>/<stage>
    assert properties["ServiceType"] == "AWS::ApiGateway::Stage"
    assert properties["HTTPMethod"] == "GET"
    assert properties["URLPath"] == "*"  # with or without the stage prefix: every GET of this stage
    assert (properties["ReservoirSize"], properties["FixedRate"]) == (0, 0.01)
    assert properties["Version"] == 1


def test_api_is_regional_and_gateway_errors_follow_the_contract(synth: Synth) -> None:
    _, api = synth.one("AWS::ApiGateway::RestApi")
    assert api["Properties"]["EndpointConfiguration"] == {"Types": ["REGIONAL"]}
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in synth.resources("AWS::ApiGateway::GatewayResponse").values()
    }
    assert set(responses) == {"DEFAULT_4XX", "DEFAULT_5XX", "THROTTLED"}
    for response in responses.values():
        template = response["ResponseTemplates"]["application/json"]
        rendered = template.replace("$context.error.messageString", '"denied"').replace(
            "$context.error.responseType", "ACCESS_DENIED"
        )
        assert json.loads(rendered) == {"error": {"code": "ACCESS_DENIED", "message": "denied"}}


def test_a_throttled_request_says_when_to_retry_in_delta_seconds(synth: Synth) -> None:
    # Given the stage's throttling
    # When API Gateway throttles a request (an OFREP provider's among them)
    (throttled,) = (
        r["Properties"]
        for r in synth.resources("AWS::ApiGateway::GatewayResponse").values()
        if r["Properties"]["ResponseType"] == "THROTTLED"
    )
    # Then 429 with Retry-After in delta-seconds (a quoted literal in the template) and the contract's error shape
    assert throttled["StatusCode"] == "429"
    assert throttled["ResponseParameters"] == {"gatewayresponse.header.Retry-After": "'1'"}
    assert "$context.error.responseType" in throttled["ResponseTemplates"]["application/json"]


def managed_policy(synth: Synth, output: str) -> list[dict[str, Any]]:
    policy_id = tt.referenced_id(synth.template["Outputs"][output]["Value"])
    return synth.template["Resources"][policy_id]["Properties"]["PolicyDocument"]["Statement"]


def invoke_arns(synth: Synth, statement: dict[str, Any]) -> set[str]:
    ((api_id, _),) = synth.resources("AWS::ApiGateway::RestApi").items()
    ((stage_id, _),) = synth.resources("AWS::ApiGateway::Stage").items()
    assert statement["Action"] == "execute-api:Invoke"
    prefix = f"arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<{api_id}>/<{stage_id}>/"
    rendered = [tt.render(resource) for resource in tt.as_list(statement["Resource"])]
    assert all(arn.startswith(prefix) for arn in rendered), rendered
    return {arn.removeprefix(prefix) for arn in rendered}


def test_reader_policy_allows_read_routes_and_denies_history(synth: Synth) -> None:
    allow, deny = managed_policy(synth, "ReaderPolicyArn")
    assert allow["Effect"] == "Allow"
    assert invoke_arns(synth, allow) == {
        "GET/flags",
        "GET/flags/*",
        "POST/ofrep/v1/evaluate/flags",
        "POST/ofrep/v1/evaluate/flags/*",
    }
    assert deny["Effect"] == "Deny"
    # every static child of /flags, in both forms (a trailing slash and below), from the route table
    assert invoke_arns(synth, deny) == {
        "GET/flags/history",
        "GET/flags/history/*",
        "GET/flags/revert",
        "GET/flags/revert/*",
        "GET/flags/restore",
        "GET/flags/restore/*",
        "GET/flags/declarations",
        "GET/flags/declarations/*",
        "GET/flags/windows",
        "GET/flags/windows/*",
        "GET/flags/schedules",
        "GET/flags/schedules/*",
        "GET/flags/guards",
        "GET/flags/guards/*",
        "GET/flags/change-requests",
        "GET/flags/change-requests/*",
        "GET/flags/migration",
        "GET/flags/migration/*",
        "GET/flags/migration/finalise",
        "GET/flags/migration/finalise/*",
    }


def allowed(synth: Synth, output: str, request: str) -> bool:
    """IAM's evaluation of ``request`` (``METHOD/path``) under one managed policy: an explicit deny wins,
    then an allow; ``*`` matches any run of characters, ``/`` included (as in an execute-api ARN)."""
    from fnmatch import fnmatchcase

    verdicts = {
        statement["Effect"]: any(fnmatchcase(request, pattern) for pattern in invoke_arns(synth, statement))
        for statement in managed_policy(synth, output)
    }
    return not verdicts.get("Deny", False) and verdicts.get("Allow", False)


@pytest.mark.parametrize(
    ("request_path", "reader"),
    [
        ("GET/flags", True),
        ("GET/flags/signup_enabled", True),
        ("GET/flags/history_days", True),  # a flag whose name begins like a static route stays readable
        ("POST/ofrep/v1/evaluate/flags", True),
        ("POST/ofrep/v1/evaluate/flags/signup_enabled", True),
        ("GET/ofrep/v1/evaluate/flags", False),
        ("PATCH/ofrep/v1/evaluate/flags", False),
        ("POST/ofrep/v1/configuration", False),
        ("GET/flags/history", False),
        ("GET/flags/history/", False),
        ("GET/flags/history/x", False),
        ("GET/flags/revert", False),
        ("GET/flags/revert/", False),
        ("POST/flags/revert", False),
        ("POST/flags/restore", False),
        ("GET/flags/restore/", False),
        ("GET/flags/declarations", False),
        ("GET/flags/declarations/", False),
        ("GET/flags/declarations/x", False),
        ("GET/flags/windows", False),
        ("GET/flags/windows/", False),
        ("GET/flags/windows/weekly-patching", False),
        ("GET/flags/windows_open", True),  # a flag whose name begins like a console route stays readable
        ("GET/flags/schedules", False),
        ("GET/flags/schedules/", False),
        ("GET/flags/schedules/20270301T080000Z-3f9a1c2b", False),
        ("GET/flags/schedules/20270301T080000Z-3f9a1c2b/", False),
        ("POST/flags/schedules", False),
        ("POST/flags/schedules/", False),
        ("DELETE/flags/schedules/20270301T080000Z-3f9a1c2b", False),
        ("DELETE/flags/schedules/20270301T080000Z-3f9a1c2b/", False),
        ("GET/flags/guards", False),
        ("GET/flags/guards/", False),
        ("GET/flags/guards/x", False),
        ("GET/flags/migration", False),
        ("GET/flags/migration/", False),
        ("POST/flags/migration", False),
        ("POST/flags/migration/finalise", False),
        ("GET/flags/migration_days", True),  # a flag whose name begins like the migration route stays readable
        ("PATCH/flags", False),
        ("PATCH/flags/signup_enabled", False),
        ("DELETE/flags", False),
    ],
)
def test_reader_policy_as_iam_evaluates_it(synth: Synth, request_path: str, reader: bool) -> None:
    assert allowed(synth, "ReaderPolicyArn", request_path) is reader


def test_a_new_static_route_under_flags_is_denied_to_readers_by_construction() -> None:
    from singleton_flags_infra.api import reader_deny_paths
    from singleton_flags_service.api.routes import Route
    from singleton_flags_service.contract import WRITE_FUNCTION

    routes = (*ROUTES, Route("GET", "/flags/schedules", WRITE_FUNCTION), Route("PUT", "/flags/guards", WRITE_FUNCTION))
    denied = reader_deny_paths(routes)
    assert {"GET/flags/schedules", "GET/flags/schedules/*", "GET/flags/guards", "GET/flags/guards/*"} <= set(denied)
    assert "GET/flags/*" not in denied and "GET/flags" not in denied


def test_admin_policy_allows_every_route(synth: Synth) -> None:
    allow, metrics = managed_policy(synth, "AdminPolicyArn")
    # and reads the readers' ServedVersion, for `flagctl set --wait` (GetMetricData takes no resource)
    assert metrics == {
        "Sid": "ReadPropagationMetrics",
        "Effect": "Allow",
        "Action": "cloudwatch:GetMetricData",
        "Resource": "*",
    }
    assert allow["Effect"] == "Allow"
    assert invoke_arns(synth, allow) == {
        "GET/flags",
        "GET/flags/*",
        "PATCH/flags",
        "GET/flags/history",
        "GET/flags/declarations",
        "GET/flags/windows",
        "POST/flags/revert",
        "POST/flags/restore",
        "POST/flags/schedules",
        "GET/flags/schedules",
        "DELETE/flags/schedules/*",
        "GET/flags/guards",
        "POST/flags/change-requests",
        "GET/flags/change-requests",
        "GET/flags/change-requests/*",
        "POST/flags/change-requests/*/approve",
        "POST/flags/change-requests/*/reject",
        "POST/flags/change-requests/*/withdraw",
        "GET/flags/migration",
        "POST/flags/migration",
        "POST/flags/migration/finalise",
        "POST/ofrep/v1/evaluate/flags",
        "POST/ofrep/v1/evaluate/flags/*",
    }


def test_approver_policy_works_change_requests_and_never_writes_directly(synth: Synth) -> None:
    # Given the approver policy
    (allow,) = managed_policy(synth, "ApproverPolicyArn")
    assert allow["Effect"] == "Allow"
    # Then it reads the flags, declarations and history, and works change requests
    for request in (
        "GET/flags",
        "GET/flags/declarations",
        "GET/flags/history",
        "POST/flags/change-requests",
        "GET/flags/change-requests",
        "GET/flags/change-requests/6bd63cc8ef60d925e769847b1a05e8aa",
        "POST/flags/change-requests/6bd63cc8ef60d925e769847b1a05e8aa/approve",
        "POST/flags/change-requests/6bd63cc8ef60d925e769847b1a05e8aa/reject",
        "POST/flags/change-requests/6bd63cc8ef60d925e769847b1a05e8aa/withdraw",
    ):
        assert allowed(synth, "ApproverPolicyArn", request), request
    # And it writes nothing directly
    for request in (
        "PATCH/flags",
        "POST/flags/revert",
        "POST/flags/restore",
        "POST/flags/schedules",
        "GET/flags/migration",
        "POST/flags/migration",
        "POST/flags/migration/finalise",
    ):
        assert not allowed(synth, "ApproverPolicyArn", request), request


def test_the_reader_policy_denies_the_change_request_routes(synth: Synth) -> None:
    for request in ("GET/flags/change-requests", "GET/flags/change-requests/6bd63cc8ef60d925e769847b1a05e8aa"):
        assert not allowed(synth, "ReaderPolicyArn", request), request


def test_outputs(synth: Synth) -> None:
    outputs = synth.template["Outputs"]
    assert {"ApiUrl", "TableName", "ReaderPolicyArn", "AdminPolicyArn"} <= set(outputs)
    table_id, _ = synth.one("AWS::DynamoDB::GlobalTable")
    assert outputs["TableName"]["Value"] == {"Ref": table_id}
    ((api_id, _),) = synth.resources("AWS::ApiGateway::RestApi").items()
    ((stage_id, _),) = synth.resources("AWS::ApiGateway::Stage").items()
    assert tt.render(outputs["ApiUrl"]["Value"]) == (
        f"https://<{api_id}>.execute-api.<AWS::Region>.<AWS::URLSuffix>/<{stage_id}>/"
    )


def test_other_methods_answer_405_with_allow_and_unknown_paths_404(synth: Synth) -> None:
    # Given the synthesized API / Then each route path has an IAM-authorised MOCK ANY answering 405 + Allow
    mocks = {path: properties for (method, path), properties in methods(synth).items() if method == "ANY"}
    expected_allow = {
        "/flags": "GET, PATCH",
        "/flags/{name}": "GET",
        "/flags/history": "GET",
        "/flags/declarations": "GET",
        "/flags/windows": "GET",
        "/flags/revert": "POST",
        "/flags/restore": "POST",
        "/flags/schedules": "GET, POST",
        "/flags/schedules/{id}": "DELETE",
        "/flags/guards": "GET",
        "/flags/change-requests": "GET, POST",
        "/flags/change-requests/{id}": "GET",
        "/flags/change-requests/{id}/approve": "POST",
        "/flags/change-requests/{id}/reject": "POST",
        "/flags/change-requests/{id}/withdraw": "POST",
        "/flags/migration": "GET, POST",
        "/flags/migration/finalise": "POST",
        "/ofrep/v1/evaluate/flags": "POST",
        "/ofrep/v1/evaluate/flags/{key}": "POST",
    }
    # the resources on the way to the OFREP routes have no route: 404, as an unknown path (not API Gateway's 403)
    on_the_way = {"/ofrep", "/ofrep/v1", "/ofrep/v1/evaluate"}
    assert set(mocks) == {*expected_allow, "/", "/{proxy+}", *on_the_way}
    for path, properties in mocks.items():
        assert properties["AuthorizationType"] == "AWS_IAM", path
        integration = properties["Integration"]
        assert integration["Type"] == "MOCK", path
        (response,) = integration["IntegrationResponses"]
        body = json.loads(response["ResponseTemplates"]["application/json"])
        if path in expected_allow:
            assert response["StatusCode"] == "405"
            assert body["error"]["code"] == "METHOD_NOT_ALLOWED"
            assert response["ResponseParameters"] == {"method.response.header.Allow": f"'{expected_allow[path]}'"}
        else:  # the root, the greedy proxy and the resources on the way: paths no route matches
            assert response["StatusCode"] == "404"
            assert body["error"]["code"] == "NOT_FOUND"
