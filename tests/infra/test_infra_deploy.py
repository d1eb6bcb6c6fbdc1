"""What sets one deployment apart from another: tags, termination protection."""

from __future__ import annotations

from typing import Any

import pytest
from infra_support import Synth, cdk_json_context

from infra.config import CONTEXT_KEY, ConfigError, parse_config

pytestmark = pytest.mark.infra


def settings(**changes: Any) -> dict[str, Any]:
    return {**cdk_json_context()[CONTEXT_KEY], **changes}


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
