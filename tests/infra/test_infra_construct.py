"""The reusable constructs: SingletonFlags binds an application's function to a deployed service, FlagsService
builds the whole service in another stack and binds through it; either way the read grant reaches the flags item
and never an audit record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack, aws_dynamodb as dynamodb, aws_iam as iam, aws_lambda as lambda_
from aws_cdk.assertions import Template

from singleton_flags.declarations import parse_declarations
from singleton_flags.keys import AUDIT_PK, SINGLETON_PK
from singleton_flags_cdk import SingletonFlags
from singleton_flags_infra.config import load_config
from singleton_flags_infra.service import FlagsService
from singleton_flags_service.api.routes import ROUTES
from singleton_flags_service.contract import DECLARATIONS_FILE
from tests.support.doc_examples import examples
from tests.support.packaging import wheel_package_files
from tests.support.synth import application_function, layer_directory

pytestmark = pytest.mark.infra


MODES = ["deployed-table", "stage", "whole-service"]


def application(
    mode: str, *, layer: bool = True, architecture: lambda_.Architecture = lambda_.Architecture.ARM_64
) -> tuple[Stack, SingletonFlags | FlagsService, lambda_.Function]:
    """An application's stack: the flags (a deployed table, a stage found in SSM, or the whole service) and one
    function bound to them."""
    stack = Stack(App(), "Application", env={"account": "123456789012", "region": "eu-west-1"})
    flags: SingletonFlags | FlagsService
    if mode == "whole-service":
        flags = FlagsService(stack, "Flags", config=load_config())
    elif mode == "stage":
        flags = SingletonFlags(stack, "Flags", stage="prod", declarations=DECLARATIONS_FILE)
    else:
        table = dynamodb.TableV2.from_table_name(stack, "FlagsTable", "singleton-flags-prod-table")
        flags = SingletonFlags(stack, "Flags", table=table, declarations=DECLARATIONS_FILE, max_age=10, max_stale=120)
    function = application_function(stack, "Checkout", architecture)
    flags.bind(function, layer=layer)
    return stack, flags, function


def role_statements(template: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    """Every statement of every policy attached to the function's role."""
    [function] = [
        r
        for k, r in template["Resources"].items()
        if k.startswith(function_id) and r["Type"] == "AWS::Lambda::Function"
    ]
    role_ref = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements: list[dict[str, Any]] = []
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::IAM::Policy" and {"Ref": role_ref} in resource["Properties"]["Roles"]:
            statements += resource["Properties"]["PolicyDocument"]["Statement"]
    role = template["Resources"][role_ref]["Properties"]
    for policy in role.get("Policies", []):
        statements += policy["PolicyDocument"]["Statement"]
    assert not [arn for arn in role.get("ManagedPolicyArns", []) if "Dynamo" in str(arn)]
    return statements


def dynamodb_statements(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def actions(statement: dict[str, Any]) -> list[str]:
        action = statement["Action"]
        return action if isinstance(action, list) else [action]

    return [s for s in statements if any(a.startswith("dynamodb:") or a == "*" for a in actions(s))]


@pytest.mark.parametrize("mode", MODES)
def test_the_read_grant_reaches_the_flags_and_never_an_audit_record(mode: str) -> None:
    # Given an application's function bound to the flags
    stack, _, _ = application(mode)
    template = Template.from_stack(stack).to_json()
    # When its role's policies are read
    [statement] = dynamodb_statements(role_statements(template, "Checkout"))
    # Then one statement: GetItem only, on the table, every key in the flags' partition
    assert statement["Effect"] == "Allow"
    assert statement["Action"] == "dynamodb:GetItem"
    assert statement["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [SINGLETON_PK]}}
    # And no audit record (AUDIT#APP) can satisfy it: no wildcard, no other partition
    [keys] = statement["Condition"]["ForAllValues:StringEquals"].values()
    assert AUDIT_PK not in keys and not any("*" in key for key in keys)
    assert "*" not in str(statement["Resource"])


def test_the_pages_cdk_example_synthesizes_with_the_grant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an application's stack, its function and another role, and its flags.json
    shutil.copy(DECLARATIONS_FILE, tmp_path / "flags.json")
    config = load_config()
    monkeypatch.chdir(tmp_path)
    stack = Stack(App(), "Application", env={"account": "123456789012", "region": "eu-west-1"})
    page: dict[str, Any] = {
        "self": stack,
        "config": config,
        "my_function": application_function(stack, "MyFunction"),
        "another_role": iam.Role(stack, "AnotherRole", assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com")),
    }
    # When docs/reading-flags.md's CDK example runs
    exec(compile(examples()["cdk"], "reading-flags.md#cdk", "exec"), page)  # noqa: S102 - the page's own example
    # Then the function's role may read the flags item, and nothing else of the table
    template = Template.from_stack(stack).to_json()
    [statement] = dynamodb_statements(role_statements(template, "MyFunction"))
    assert statement["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [SINGLETON_PK]}}


def test_bind_sets_the_variables_the_client_reads() -> None:
    stack, _, _ = application("deployed-table", layer=False)
    template = Template.from_stack(stack)
    [function] = template.find_resources("AWS::Lambda::Function").values()
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables == {
        "SINGLETON_FLAGS_TABLE": "singleton-flags-prod-table",
        "SINGLETON_FLAGS_SORT_KEY": "FLAGS#V1",
        "SINGLETON_FLAGS_REGION": "eu-west-1",
        "SINGLETON_FLAGS_MAX_AGE": "10",
        "SINGLETON_FLAGS_MAX_STALE": "120",
    }


@pytest.mark.parametrize(
    "architecture", [lambda_.Architecture.ARM_64, lambda_.Architecture.X86_64], ids=["arm64", "x86_64"]
)
def test_bind_attaches_the_client_layer_for_the_functions_architecture(architecture: lambda_.Architecture) -> None:
    # Given a function of this architecture bound to a deployed service's table
    stack, _, _ = application("deployed-table", architecture=architecture)
    template = Template.from_stack(stack)
    # When its properties and the layer it names are read
    [function] = template.find_resources("AWS::Lambda::Function").values()
    [layer_ref] = function["Properties"]["Layers"]
    [layer] = template.find_resources("AWS::Lambda::LayerVersion").values()
    # Then the layer is the client's, for the function's architecture, and the client finds its declarations
    assert {"Ref": next(iter(template.find_resources("AWS::Lambda::LayerVersion")))} == layer_ref
    assert layer["Properties"]["CompatibleArchitectures"] == [architecture.name]
    assert "python3.13" in layer["Properties"]["CompatibleRuntimes"]
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables["SINGLETON_FLAGS_DECLARATIONS"] == "/opt/singleton-flags/declarations.json"


def test_the_client_layer_carries_the_wheels_files_powertools_and_the_applications_declarations(
    tmp_path: Path, wheelhouse: Path
) -> None:
    # Given the package's wheel, built as `make dist` builds it
    in_wheel = set(wheel_package_files(wheelhouse))
    # And an application's own declarations (one flag only)
    declarations = parse_declarations(
        {"flags": [{"name": "checkout_enabled", "type": "bool", "initial": True, "fallback": False}]}
    )
    # When its stack binds a function (the layer is built without Docker, into the assembly)
    app = App(outdir=str(tmp_path / "cdk.out"), context={"aws:cdk:enable-asset-metadata": True})
    stack = Stack(app, "Application", env={"region": "eu-west-1"})
    table = dynamodb.TableV2.from_table_name(stack, "FlagsTable", "singleton-flags-prod-table")
    flags = SingletonFlags(stack, "Flags", table=table, declarations=declarations, build_dir=tmp_path / "build")
    function = application_function(stack, "Checkout", lambda_.Architecture.ARM_64)
    flags.bind(function)
    assembly = app.synth()
    template = assembly.get_stack_artifact(stack.artifact_id).template
    [function_resource] = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    directory = layer_directory(template, Path(assembly.directory), function_resource["Properties"]["Layers"][0])
    site = directory / "python"
    # Then python/ holds exactly the wheel's files of the package, and Powertools (no extras, no pydantic)
    in_layer = {path.relative_to(site).as_posix() for path in (site / "singleton_flags").rglob("*") if path.is_file()}
    assert in_layer == in_wheel
    assert (site / "aws_lambda_powertools" / "utilities" / "parameters" / "base.py").is_file()
    assert not [entry.name for entry in site.iterdir() if entry.name.split("-")[0] in ("boto3", "botocore", "pydantic")]
    # And the declarations are the application's, where SINGLETON_FLAGS_DECLARATIONS points
    served = json.loads((directory / "singleton-flags" / "declarations.json").read_text())
    assert served == declarations.document()
    assert list(parse_declarations(served)) == ["checkout_enabled"]


def test_a_stage_is_found_through_ssm_parameters_and_never_a_cloudformation_export() -> None:
    # Given an application's stack bound to the stage "prod" of a deployed service
    stack, _, _ = application("stage")
    template = Template.from_stack(stack).to_json()
    # When its parameters are read
    defaults = {p.get("Default") for p in template.get("Parameters", {}).values()}
    ssm_types = {p["Type"] for p in template.get("Parameters", {}).values() if p.get("Default") in defaults}
    # Then the table comes from the service's SSM parameter, resolved at deploy time
    assert "/singleton-flags/prod/table-arn" in defaults
    assert ssm_types == {"AWS::SSM::Parameter::Value<String>"}
    # And nothing imports a CloudFormation export
    assert "Fn::ImportValue" not in json.dumps(template)


def test_the_service_publishes_its_table_api_and_layers_in_ssm_without_exports() -> None:
    # Given the whole service in an application's stack
    stack, _, _ = application("whole-service")
    template = Template.from_stack(stack).to_json()
    # When its SSM parameters are read
    names = {
        r["Properties"]["Name"]: r["Properties"]["Value"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::SSM::Parameter"
    }
    stage = load_config().stage
    # Then the table, the API URL and one client layer per architecture are discoverable by name
    assert set(names) == {
        f"/singleton-flags/{stage}/table-name",
        f"/singleton-flags/{stage}/table-arn",
        f"/singleton-flags/{stage}/api-url",
        f"/singleton-flags/{stage}/client-layer-arn/arm64",
        f"/singleton-flags/{stage}/client-layer-arn/x86_64",
    }
    layers = template["Resources"]
    for architecture in ("arm64", "x86_64"):
        ref = names[f"/singleton-flags/{stage}/client-layer-arn/{architecture}"]["Ref"]
        assert layers[ref]["Properties"]["CompatibleArchitectures"] == [architecture]
    # And no output is exported
    assert not [o for o in template.get("Outputs", {}).values() if "Export" in o]


def test_grant_admin_allows_every_route_of_the_services_api() -> None:
    # Given the whole service and an operator's role
    stack, flags, _ = application("whole-service", layer=False)
    operator = iam.Role(stack, "Operator", assumed_by=iam.AccountRootPrincipal())
    # When it is granted the admin routes
    assert isinstance(flags, FlagsService)
    flags.grant_admin(operator)
    template = Template.from_stack(stack).to_json()
    [role_id] = [
        k for k, r in template["Resources"].items() if k.startswith("Operator") and r["Type"] == "AWS::IAM::Role"
    ]
    [policy] = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    metrics, statement = sorted(policy["Properties"]["PolicyDocument"]["Statement"], key=lambda s: s["Action"])
    # Then one execute-api:Invoke statement naming every route, and nothing of the table
    assert statement["Action"] == "execute-api:Invoke"
    assert len(statement["Resource"]) == len(ROUTES)
    # And, as the admin policy, the readers' ServedVersion for `flagctl set --wait` (no resource-level permission)
    assert (metrics["Action"], metrics["Resource"]) == ("cloudwatch:GetMetricData", "*")


def test_a_layer_needs_the_applications_declarations_and_a_python_runtime() -> None:
    stack = Stack(App(), "Application")
    table = dynamodb.TableV2.from_table_name(stack, "FlagsTable", "singleton-flags-prod-table")
    flags = SingletonFlags(stack, "Flags", table=table)
    function = application_function(stack, "Checkout")
    with pytest.raises(ValueError, match="declarations="):
        flags.bind(function)
    node = lambda_.Function(
        stack,
        "Node",
        runtime=lambda_.Runtime.NODEJS_22_X,
        handler="index.handler",
        code=lambda_.Code.from_inline("exports.handler = async () => null"),
    )
    with pytest.raises(ValueError, match="Python runtimes"):
        SingletonFlags(stack, "Flags2", table=table, declarations=DECLARATIONS_FILE).bind(node)
    with pytest.raises(ValueError, match="exactly one of"):
        SingletonFlags(stack, "Flags3", table=table, stage="prod")
