"""The consumer example synthesizes: its signup function gets the client layer, the client's variables and a
read grant on the flags item only, the service is found through SSM, and nothing imports an export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from singleton_flags.keys import SINGLETON_PK
from tests.support.example import EXAMPLE, synthesize

pytestmark = pytest.mark.infra


def test_the_consumer_example_synthesizes_bound_to_the_flags(tmp_path: Path) -> None:
    # Given the example's stack, bound to the stage "prod"
    template, layer = synthesize(tmp_path / "cdk.out", tmp_path / "build")
    resources = template["Resources"].values()
    # When its signup function is read
    [function] = [r for r in resources if r["Type"] == "AWS::Lambda::Function" and "Layers" in r["Properties"]]
    variables = function["Properties"]["Environment"]["Variables"]
    # Then it reads its flags from the layer's declarations, the example's own
    assert variables["SINGLETON_FLAGS_DECLARATIONS"] == "/opt/singleton-flags/declarations.json"
    assert variables["SINGLETON_FLAGS_MAX_AGE"] == "5"
    served = json.loads((layer / "singleton-flags" / "declarations.json").read_text())
    assert [flag["name"] for flag in served["flags"]] == ["signup_enabled", "maintenance_mode"]
    assert served == json.loads((EXAMPLE / "flags.json").read_text())
    # And its role may GetItem the flags' partition and nothing else of the table
    statements = [
        s
        for r in resources
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if "dynamodb" in json.dumps(s["Action"])
    ]
    assert [(s["Action"], s["Condition"]) for s in statements] == [
        ("dynamodb:GetItem", {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [SINGLETON_PK]}})
    ]
    # And the service is found through its SSM parameter, never an export
    parameters = template["Parameters"].values()
    assert {"/singleton-flags/prod/table-arn"} <= {p.get("Default") for p in parameters}
    assert "Fn::ImportValue" not in json.dumps(template)
    # And its route is a function URL for SigV4-signed callers only
    [url] = [r for r in resources if r["Type"] == "AWS::Lambda::Url"]
    assert url["Properties"]["AuthType"] == "AWS_IAM"
