"""A first deploy anywhere: the Powertools mode checked against the region known at synth, ARNs in the partition's
token, ListStreams on '*', one API Gateway logging role per account and region, and the optional resource policy
and reserved concurrency."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import Token

from singleton_flags_infra.application import build_app
from singleton_flags_infra.config import ConfigError, parse_config
from tests.support.synth import Synth, cdk_json_context, synthesize

pytestmark = pytest.mark.infra

KEY = "singleton-flags"


def context(**changes: Any) -> dict[str, Any]:
    result = copy.deepcopy(cdk_json_context())
    result[KEY].update(changes)
    return result


@pytest.mark.parametrize("region", ["us-gov-west-1", "me-central-1", "ap-east-2", "cn-north-1"])
def test_layer_outside_powertools_matrix_fails_synth_naming_the_fix(
    region: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the CLI's region (CDK_DEFAULT_REGION) where Powertools publishes no parameter, and the default `layer`
    monkeypatch.setenv("CDK_DEFAULT_REGION", region)
    # When the app is built
    with pytest.raises(ConfigError) as error:
        build_app(context())
    # Then synth stops, naming the key, the region and the fix
    assert str(error.value) == (
        f"singleton-flags.powertools: 'layer' resolves Powertools' public SSM parameter, which is not published in "
        f'{region} (the region of CDK_DEFAULT_REGION); set "powertools": "bundled" (the pinned release installed '
        "at synth as a layer of the stack), or deploy to a region of Powertools' parameter matrix"
    )


def test_a_region_named_in_cdk_json_wins_over_the_cli_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDK_DEFAULT_REGION", "us-east-1")
    with pytest.raises(ConfigError, match=r"not published in cn-north-1 \(the region of singleton-flags.region\)"):
        build_app(context(region="cn-north-1"))


@pytest.mark.parametrize("region", ["us-gov-west-1", "cn-north-1"])
def test_bundled_deploys_anywhere(region: str) -> None:
    config = parse_config(context(region=region, powertools="bundled")[KEY])
    assert (config.region, config.powertools) == (region, "bundled")


@pytest.mark.parametrize("region", ["us-east-1", None])
def test_layer_is_kept_in_the_matrix_and_where_no_region_is_known(
    region: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given us-east-1, or no region at all (an environment-agnostic synth)
    if region is None:
        monkeypatch.delenv("CDK_DEFAULT_REGION", raising=False)
    else:
        monkeypatch.setenv("CDK_DEFAULT_REGION", region)
    # When the app is built
    _, stack = build_app(context())
    # Then the public layer is used, and the stack stays environment-agnostic
    assert stack.config.powertools == "layer"
    assert stack.config.region == (region or "")
    assert Token.is_unresolved(stack.region)


def test_a_region_named_in_cdk_json_pins_the_stack_to_it() -> None:
    _, stack = build_app(context(region="eu-west-1"))
    assert stack.region == "eu-west-1"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for element in value for item in _strings(element)]
    if isinstance(value, dict):
        return [item for element in value.values() for item in _strings(element)]
    return []


def test_every_arn_the_stack_builds_takes_the_partition_from_its_token(any_synth: Synth) -> None:
    # Given either synthesized template; when every string of its resources is read
    configured = any_synth.config.apigw_account_logging_role  # a role ARN given in cdk.json is the user's own
    literal = [
        text
        for text in _strings(any_synth.template["Resources"])
        if ("arn:aws:" in text or "arn:aws-" in text) and text != configured
    ]
    # Then none names a partition: every ARN is joined with AWS::Partition (GovCloud, China)
    assert literal == []


def test_list_streams_has_its_own_statement_on_star(synth: Synth) -> None:
    statements = [
        statement
        for policy in synth.resources("AWS::IAM::Policy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if "dynamodb:ListStreams" in json.dumps(statement["Action"])
    ]
    assert statements == [{"Action": "dynamodb:ListStreams", "Effect": "Allow", "Resource": "*"}]


def test_auto_uses_the_account_and_regions_role_never_a_role_of_the_stack(synth: Synth) -> None:
    # Given cdk.json's `auto`
    template = json.dumps(synth.template["Resources"])
    # Then no IAM role of the stack is assumed by API Gateway
    roles = synth.resources("AWS::IAM::Role").values()
    assert not [
        r for r in roles if "apigateway.amazonaws.com" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])
    ]
    # And the role is created by an SDK call accepting that it exists, named from the region only (not the stage)
    [create] = [r for r in synth.resources("Custom::AWS").values() if "createRole" in json.dumps(r)]
    call = json.dumps(create["Properties"]["Create"])
    assert "EntityAlreadyExists" in call and "Delete" not in create["Properties"]
    assert "singleton-flags-apigw-logs-" in call and "prod" not in call
    assert "singleton-flags-apigw-logs-" in template


def test_guard_names_are_refused_at_synth() -> None:
    with pytest.raises(ConfigError, match=r"stage: must not contain a '-guard' segment, got 'prod-guard'"):
        build_app({**context(), "stage": "prod-guard"})
    with pytest.raises(ConfigError, match=r"'singleton-flags-dev-' would match alarms of other stages"):
        parse_config(context(guard_alarm_prefix="singleton-flags-dev-")[KEY])
    assert parse_config(context(guard_alarm_prefix="singleton-flags-prod-guard-team-a-")[KEY]).guard_prefix


@pytest.fixture(scope="module")
def options(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(
        context(api_resource_policy={"organization_id": "o-abcdefghij"}, read_reserved_concurrency=50),
        Path(tmp_path_factory.mktemp("synth-options")),
    )


def test_the_resource_policy_and_reserved_concurrency_are_off_by_default(synth: Synth) -> None:
    _, api = synth.one("AWS::ApiGateway::RestApi")
    assert "Policy" not in api["Properties"]
    functions = synth.resources("AWS::Lambda::Function").values()
    assert not [f for f in functions if "ReservedConcurrentExecutions" in f["Properties"]]


def test_the_resource_policy_narrows_callers_to_the_organization(options: Synth) -> None:
    _, api = options.one("AWS::ApiGateway::RestApi")
    allow, deny = api["Properties"]["Policy"]["Statement"]
    assert allow["Effect"] == "Allow" and "AWS::AccountId" in json.dumps(allow["Principal"])
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"StringNotEquals": {"aws:PrincipalOrgID": "o-abcdefghij"}}
    reserved = [
        f["Properties"]["ReservedConcurrentExecutions"]
        for f in options.resources("AWS::Lambda::Function").values()
        if "ReservedConcurrentExecutions" in f["Properties"]
    ]
    assert reserved == [50]
