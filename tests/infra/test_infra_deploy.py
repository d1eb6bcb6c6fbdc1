"""What a first deploy needs from the account and what sets one deployment apart from another: API Gateway's
account-level logging role, stages side by side in one account, tags, termination protection."""

from __future__ import annotations

import json
from typing import Any

import pytest

from singleton_flags_infra.config import CONTEXT_KEY, ConfigError, parse_config
from tests.support import templates as tt
from tests.support.synth import VARIANT_LOGGING_ROLE, Synth, cdk_json_context

pytestmark = pytest.mark.infra

ACCOUNT_SETTING = "Custom::ApiGatewayAccountLoggingRole"
ACCOUNT_HANDLER = "singleton_flags_service.handlers.apigw_account.handler"
PUSH_TO_LOGS = "arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"


def settings(**changes: Any) -> dict[str, Any]:
    return {**cdk_json_context()[CONTEXT_KEY], **changes}


def apigateway_roles(synth: Synth) -> dict[str, dict[str, Any]]:
    """Roles API Gateway may assume (the account-level CloudWatch Logs role)."""
    return {
        lid: role
        for lid, role in synth.resources("AWS::IAM::Role").items()
        if any(
            s["Principal"] == {"Service": "apigateway.amazonaws.com"}
            for s in role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        )
    }


def stage_dependencies(synth: Synth) -> list[str]:
    ((_, stage),) = synth.resources("AWS::ApiGateway::Stage").items()
    return tt.as_list(stage.get("DependsOn", []))


# ---------------------------------------------------------------------------------------------- account logging role


def test_auto_mode_creates_a_logging_role_and_sets_it_only_where_none_is_set(synth: Synth) -> None:
    # Given cdk.json (apigw_account_logging_role: auto)
    assert synth.config.apigw_account_logging_role == "auto"
    ((setting_id, setting),) = synth.resources(ACCOUNT_SETTING).items()
    # Then the setting applies the account and region's role (no role of the stack: one outlives every stage)
    assert not apigateway_roles(synth)
    assert tt.render(setting["Properties"]["RoleArn"]).endswith(":role/singleton-flags-apigw-logs-<AWS::Region>")
    # And that role gets AWS's documented policy, attached by an SDK call the setting waits for
    calls = {lid: json.dumps(r["Properties"]["Create"]) for lid, r in synth.resources("Custom::AWS").items()}
    (attach,) = [lid for lid, call in calls.items() if "attachRolePolicy" in call]
    assert PUSH_TO_LOGS.rpartition(":")[2] in calls[attach]
    assert set(calls) <= set(synth.template["Resources"][setting_id]["DependsOn"])
    # And the setting is our own function's custom resource, retained, and the stage waits for it
    assert setting["DeletionPolicy"] == "Retain"
    function_id = tt.referenced_id(setting["Properties"]["ServiceToken"])
    assert synth.template["Resources"][function_id]["Properties"]["Handler"] == ACCOUNT_HANDLER
    assert setting_id in stage_dependencies(synth)


def test_account_setting_function_may_only_read_and_set_the_account_and_pass_that_role(synth: Synth) -> None:
    ((_, setting),) = synth.resources(ACCOUNT_SETTING).items()
    function_id = tt.referenced_id(setting["Properties"]["ServiceToken"])
    role_id = tt.referenced_id(synth.template["Resources"][function_id]["Properties"]["Role"])
    statements = tt.role_statements(synth.template, role_id)
    by_action = {action: s for s in statements for action in tt.as_list(s["Action"])}
    assert set(by_action) == {
        "apigateway:GET",
        "apigateway:PATCH",
        "iam:PassRole",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
    }
    account = "arn:<AWS::Partition>:apigateway:<AWS::Region>::/account"
    assert tt.render(by_action["apigateway:GET"]["Resource"]) == account
    assert tt.render(by_action["apigateway:PATCH"]["Resource"]) == account
    assert by_action["iam:PassRole"]["Resource"] == setting["Properties"]["RoleArn"]
    assert by_action["iam:PassRole"]["Condition"] == {
        "StringEquals": {"iam:PassedToService": "apigateway.amazonaws.com"}
    }


def test_an_explicit_role_arn_is_set_only_where_none_is_set_and_no_role_is_created(variant: Synth) -> None:
    ((setting_id, setting),) = variant.resources(ACCOUNT_SETTING).items()
    assert setting["Properties"]["RoleArn"] == VARIANT_LOGGING_ROLE
    assert apigateway_roles(variant) == {}
    assert setting_id in stage_dependencies(variant)


def test_existing_mode_creates_nothing_at_the_account_level(two_stages: dict[str, Synth]) -> None:
    dev = two_stages["dev"]
    assert dev.config.apigw_account_logging_role == "existing"
    assert dev.resources(ACCOUNT_SETTING) == {}
    assert apigateway_roles(dev) == {}


@pytest.mark.parametrize("value", ["", "none", "arn:aws:iam::123:role/x", "arn:aws:iam::123456789012:user/x", 7])
def test_a_bad_logging_role_setting_is_refused_naming_its_key(value: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(settings(apigw_account_logging_role=value))
    assert caught.value.path == f"{CONTEXT_KEY}.apigw_account_logging_role"


@pytest.mark.parametrize(
    "value",
    [
        "auto",
        "existing",
        "arn:aws:iam::123456789012:role/service-role/apigw-logs",
        "arn:aws-us-gov:iam::123456789012:role/apigw",
    ],
)
def test_the_logging_role_setting_accepts_its_three_forms(value: str) -> None:
    assert parse_config(settings(apigw_account_logging_role=value)).apigw_account_logging_role == value


# ---------------------------------------------------------------------------------------------- stages side by side


def flags_alarm_namespaces(synth: Synth) -> set[str]:
    """Every namespace an alarm watches: its metric's, or each metric its expression queries."""
    namespaces = set()
    for alarm in synth.resources("AWS::CloudWatch::Alarm").values():
        properties = alarm["Properties"]
        queries = [query["MetricStat"]["Metric"] for query in properties.get("Metrics", []) if "MetricStat" in query]
        namespaces.update(metric["Namespace"] for metric in [properties, *queries] if "Namespace" in metric)
    return {namespace for namespace in namespaces if not namespace.startswith("AWS/")}


def test_two_stages_in_one_app_share_no_name_and_no_metric(two_stages: dict[str, Synth]) -> None:
    prod, dev = two_stages["prod"], two_stages["dev"]

    def names(synth: Synth) -> dict[str, Any]:
        ((_, api),) = synth.resources("AWS::ApiGateway::RestApi").items()
        groups = sorted(
            group["Properties"]["Name"] for group in synth.resources("AWS::Scheduler::ScheduleGroup").values()
        )
        ((_, rule),) = synth.resources("AWS::XRay::SamplingRule").items()
        ((_, alarm_rule),) = synth.resources("AWS::Events::Rule").items()
        ((_, dashboard),) = synth.resources("AWS::CloudWatch::Dashboard").items()
        return {
            "api": api["Properties"]["Name"],
            "groups": groups,
            "guards' alarm prefix": json.dumps(alarm_rule["Properties"]["EventPattern"]["detail"]["alarmName"]),
            "sampling rule": rule["Properties"]["SamplingRule"]["RuleName"],
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
    from singleton_flags_infra.application import build_app

    _, stack = build_app({**cdk_json_context(), "stage": "dev"})
    assert stack.stack_name == "singleton-flags-dev"
    assert stack.config.stage == "dev"


# ---------------------------------------------------------------------------------------------- tags and protection

# Types in this stack whose CloudFormation schema has tags: each must carry them (tags live per replica on a
# global table).
TAGGABLE = {
    "AWS::Lambda::Function",
    "AWS::IAM::Role",
    "AWS::DynamoDB::GlobalTable",
    "AWS::SQS::Queue",
    "AWS::Logs::LogGroup",
    "AWS::ApiGateway::RestApi",
    "AWS::ApiGateway::Stage",
    "AWS::KMS::Key",
    "AWS::SNS::Topic",
    "AWS::XRay::SamplingRule",
    "AWS::Events::EventBus",
    "AWS::Events::Rule",
    "AWS::Lambda::EventSourceMapping",
}


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
