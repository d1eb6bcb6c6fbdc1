"""SnapStart on the read function (``read_snapstart``): a published version restored from a snapshot, and an alias
that the API invokes; refused at synth where Lambda would refuse it at deploy."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack, aws_lambda as lambda_

from singleton_flags_infra.config import ConfigError, parse_config, snapstart_runtime_problem
from singleton_flags_infra.functions import SnapStartRules
from singleton_flags_service.api.routes import ROUTES
from singleton_flags_service.contract import HANDLERS, READ_FUNCTION
from tests.support import templates as tt
from tests.support.synth import Synth, cdk_json_context, synthesize

pytestmark = pytest.mark.infra

KEY = "singleton-flags"


@pytest.fixture(scope="module")
def snapstart(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """cdk.json's stage with SnapStart on the read function, synthesized by a CLI whose region offers it."""
    context = copy.deepcopy(cdk_json_context())
    context[KEY]["read_snapstart"] = True
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CDK_DEFAULT_REGION", "eu-west-1")
        return synthesize(context, tmp_path_factory.mktemp("synth-snapstart"))


def read_function_id(template: dict[str, Any]) -> str:
    return tt.function_by_handler(template, HANDLERS[READ_FUNCTION])[0]


def test_the_read_function_is_published_and_invoked_through_an_alias(snapstart: Synth) -> None:
    template = snapstart.template
    function_id = read_function_id(template)
    # Then the read function snapshots its published versions
    properties = template["Resources"][function_id]["Properties"]
    assert properties["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    # And one version of it is published, and one alias points at that version
    versions = snapstart.resources("AWS::Lambda::Version")
    assert [tt.referenced_id(res["Properties"]["FunctionName"]) for res in versions.values()] == [function_id]
    (version_id,) = versions
    _, alias = snapstart.one("AWS::Lambda::Alias")
    assert tt.referenced_id(alias["Properties"]["FunctionName"]) == function_id
    assert alias["Properties"]["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}


def test_the_api_and_its_permissions_target_the_alias(snapstart: Synth) -> None:
    template = snapstart.template
    function_id = read_function_id(template)
    alias_id, _ = snapstart.one("AWS::Lambda::Alias")
    read_routes = [route for route in ROUTES if route.function == READ_FUNCTION]
    # Then every read route's integration invokes the alias, never the unpublished function
    uris = [
        tt.render(method["Properties"]["Integration"]["Uri"])
        for method in snapstart.resources("AWS::ApiGateway::Method").values()
        if method["Properties"].get("Integration", {}).get("Type") == "AWS_PROXY"
    ]
    alias_uris = [uri for uri in uris if f"<{alias_id}>" in uri]
    assert len(alias_uris) == len(read_routes)
    assert not [uri for uri in uris if f"<{function_id}.Arn>" in uri]
    # And API Gateway's permissions to invoke are granted on the alias, none on the function itself
    targets = [
        tt.render(permission["Properties"]["FunctionName"])
        for permission in snapstart.resources("AWS::Lambda::Permission").values()
        if permission["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    assert targets.count(f"<{alias_id}>") == len(read_routes)
    assert not [target for target in targets if function_id in target]


def test_without_the_option_there_is_no_version_and_no_alias(synth: Synth) -> None:
    # Given cdk.json as shipped (SnapStart off) / Then the read function is invoked as before: no version, no alias
    assert synth.config.read_snapstart is False
    assert not synth.resources("AWS::Lambda::Version")
    assert not synth.resources("AWS::Lambda::Alias")
    assert "SnapStart" not in synth.template["Resources"][read_function_id(synth.template)]["Properties"]


def settings(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(cdk_json_context()[KEY])
    raw.update(changes)
    return raw


@pytest.mark.parametrize(
    ("region", "words"),
    [
        ("ap-southeast-6", "not available in ap-southeast-6"),  # Asia Pacific (New Zealand)
        ("ap-east-2", "not available in ap-east-2"),  # Asia Pacific (Taipei)
        ("us-gov-west-1", "not available in us-gov-west-1"),
        ("cn-north-1", "not available in cn-north-1"),
        (None, "region is unknown at synth"),
    ],
)
def test_snapstart_is_refused_where_lambda_does_not_offer_it(region: str | None, words: str) -> None:
    # Given Powertools bundled (the layer's own region check would speak first in some of these regions)
    raw = settings(read_snapstart=True, powertools="bundled")
    if region is not None:
        raw["region"] = region
    with pytest.raises(ConfigError, match=words) as caught:
        parse_config(raw, default_region=None)
    assert caught.value.path == f"{KEY}.read_snapstart"


def test_snapstart_is_a_boolean_and_off_by_default() -> None:
    assert parse_config(settings(region="us-east-1")).read_snapstart is False
    assert parse_config(settings(read_snapstart=True, region="us-east-1")).read_snapstart is True
    assert parse_config(settings(read_snapstart=True), default_region="eu-central-1").read_snapstart is True
    with pytest.raises(ConfigError, match="must be true or false"):
        parse_config(settings(read_snapstart="yes", region="us-east-1"))


def test_runtimes_below_python_3_12_are_refused() -> None:
    assert snapstart_runtime_problem("python3.13") == ""
    assert snapstart_runtime_problem("python3.12") == ""
    assert "python3.12 or later, not python3.11" in snapstart_runtime_problem("python3.11")
    assert "not nodejs22.x" in snapstart_runtime_problem("nodejs22.x")


def rules_for(tmp_path: Path, provisioned: int | None) -> list[str]:
    stack = Stack(App(outdir=str(tmp_path)), "Rules")
    function = lambda_.Function(
        stack,
        "Read",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
        snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS,
    )
    alias = lambda_.Alias(
        stack,
        "Live",
        alias_name="live",
        version=function.current_version,
        provisioned_concurrent_executions=provisioned,
    )
    return SnapStartRules(function, alias).validate()


def test_provisioned_concurrency_fails_the_synth(tmp_path: Path) -> None:
    # Given a SnapStart function without provisioned concurrency / Then nothing to refuse
    assert rules_for(tmp_path, None) == []
    # When its alias is given provisioned concurrency / Then the synth is refused, naming the alias
    assert rules_for(tmp_path, 2) == ["Rules/Live: SnapStart does not support provisioned concurrency"]
