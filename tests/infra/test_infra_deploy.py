"""What sets one deployment apart from another: stages side by side in one account, tags, termination
protection."""

from __future__ import annotations

import json
from typing import Any

import pytest
import template_tools as tt
from infra_support import Synth, cdk_json_context

from infra.config import CONTEXT_KEY, ConfigError, parse_config

pytestmark = pytest.mark.infra


def settings(**changes: Any) -> dict[str, Any]:
    return {**cdk_json_context()[CONTEXT_KEY], **changes}


# ---------------------------------------------------------------------------------------------- stages side by side


def flags_alarm_namespaces(synth: Synth) -> set[str]:
    return {alarm["Properties"]["Namespace"] for alarm in synth.resources("AWS::CloudWatch::Alarm").values()
            if not alarm["Properties"]["Namespace"].startswith("AWS/")}


def test_two_stages_in_one_app_share_no_name_and_no_metric(two_stages: dict[str, Synth]) -> None:
    prod, dev = two_stages["prod"], two_stages["dev"]

    def names(synth: Synth) -> dict[str, Any]:
        (_, api), = synth.resources("AWS::ApiGateway::RestApi").items()
        (_, group), = synth.resources("AWS::Scheduler::ScheduleGroup").items()
        (_, dashboard), = synth.resources("AWS::CloudWatch::Dashboard").items()
        return {
            "api": api["Properties"]["Name"],
            "group": group["Properties"]["Name"],
            "dashboard": json.dumps(dashboard["Properties"]["DashboardName"]),
            "namespaces": flags_alarm_namespaces(synth),
        }

    before, after = names(prod), names(dev)
    for key in before:
        assert before[key] != after[key], key
    # Every alarm on the functions' own metrics watches its stage's namespace, the one its functions write to
    for synth in (prod, dev):
        assert flags_alarm_namespaces(synth) == {f"SingletonFlags/{synth.config.stage}"}
        for function in synth.resources("AWS::Lambda::Function").values():
            variables = function["Properties"].get("Environment", {}).get("Variables", {})
            if "POWERTOOLS_METRICS_NAMESPACE" in variables:
                assert variables["POWERTOOLS_METRICS_NAMESPACE"] == f"SingletonFlags/{synth.config.stage}"


def test_the_stage_can_be_picked_on_the_command_line() -> None:
    # Given `-c stage=dev` next to cdk.json's object / When the config is read / Then dev wins, validated
    assert parse_config(settings(), stage="dev").stage == "dev"
    assert parse_config(settings()).stage == "prod"
    with pytest.raises(ConfigError) as caught:
        parse_config(settings(), stage="Dev!")
    assert caught.value.path == "stage"


def test_build_app_reads_the_stage_from_the_context() -> None:
    from infra.application import build_app

    _, stack = build_app({**cdk_json_context(), "stage": "dev"})
    assert stack.stack_name == "singleton-flags-dev"
    assert stack.config.stage == "dev"


# ---------------------------------------------------------------------------------------------- tags and protection

# Types in this stack whose CloudFormation schema has tags: each must carry them (tags live per replica on a
# global table).
TAGGABLE = {"AWS::Lambda::Function", "AWS::IAM::Role", "AWS::DynamoDB::GlobalTable", "AWS::SQS::Queue",
            "AWS::Logs::LogGroup", "AWS::ApiGateway::RestApi", "AWS::ApiGateway::Stage", "AWS::KMS::Key",
            "AWS::SNS::Topic", "AWS::XRay::SamplingRule"}


def tags_of(resource: dict[str, Any]) -> dict[str, Any] | None:
    properties = resource.get("Properties", {})
    if resource["Type"] == "AWS::DynamoDB::GlobalTable":
        (replica,) = properties["Replicas"]
        raw = replica.get("Tags")
    else:
        raw = properties.get("Tags")
    if raw is None:
        return None
    if isinstance(raw, dict):
        return raw
    return {tag["Key"]: tag["Value"] for tag in raw}


def test_every_taggable_resource_carries_project_and_stage(any_synth: Synth) -> None:
    expected = {"project": "singleton-flags", "stage": any_synth.config.stage}
    seen_types = set()
    for lid, resource in any_synth.template["Resources"].items():
        tags = tags_of(resource)
        if resource["Type"] in TAGGABLE:
            assert tags is not None, f"{lid} ({resource['Type']}) has no tags"
        if tags is not None:
            seen_types.add(resource["Type"])
            assert {key: tags.get(key) for key in expected} == expected, lid
    assert seen_types >= TAGGABLE & {r["Type"] for r in any_synth.template["Resources"].values()}


def test_termination_protection_follows_the_config(synth: Synth, variant: Synth) -> None:
    assert synth.config.termination_protection is True
    assert synth.termination_protection is True
    assert variant.termination_protection is False


def test_termination_protection_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(settings(termination_protection="yes"))
    assert caught.value.path == f"{CONTEXT_KEY}.termination_protection"
