"""The deployed service is the one deployed before the split into distributions: updating a stack deployed from
``tests/infra/golden/template.json`` replaces no stateful resource and changes none of its properties, except the
intended changes listed below, each with its reason (the golden template itself is never regenerated).

Which resources are stateful, what is compared and what is normalised: ``tests.support.golden``.
"""

from __future__ import annotations

from tests.support.golden import compared, differences, golden_resources, is_stateful
from tests.support.synth import Synth

# What the rule finds in the golden template, by type: a type missing here means the rule or the template changed.
STATEFUL_IN_GOLDEN = {
    "AWS::DynamoDB::GlobalTable": 1,
    "AWS::Logs::LogGroup": 8,
    "AWS::SQS::Queue": 6,
    "AWS::Scheduler::ScheduleGroup": 2,
    "AWS::Events::EventBus": 1,
    "AWS::SSM::Parameter": 5,
    "AWS::IAM::Role": 1,  # the API Gateway logging role, retained: the account's setting keeps pointing at it
    "AWS::IAM::ManagedPolicy": 2,
    "AWS::ApiGateway::RestApi": 1,
    "Custom::ApiGatewayAccountLoggingRole": 1,
    "Custom::FlagsSeed": 1,
}


# Intended changes to stateful resources since the golden template: logical ID -> why. Nothing else may change.
INTENDED_REMOVALS = {
    # One logging role per account and region replaces the per-stage role; it was retained (DeletionPolicy Retain),
    # so a stack deployed before keeps it in the account (docs/deploy.md says how to find and delete it).
    "ApiGatewayAccountApiGatewayLogsRoleA0DB6F8D": "replaced by the account and region's logging role",
}
INTENDED_ADDITIONS = {
    "ApiGatewayAccountAccountRole0BB8BCB0": "the account and region's logging role, created unless it exists",
    "ApiGatewayAccountAccountRolePolicy09188F6A": "its managed policy, attached unless attached",
    "ApiGatewayAccountAccountRoleLogs7B03235B": "the log group of the custom resource creating that role",
    "FunctionsReconcileLogsDAB0AF51": "the schedule reconciler's log group",
    "ApiApproverPolicy4DEF54C8": "the approver policy: change requests of protected flags, no direct write",
}
# logical ID -> the property paths that may differ, and why
INTENDED_CHANGES = {
    "StorageSeed873561D9": (
        {".Properties.TableArn", ".Properties.TableArnParameter"},
        "the seed runs when the table is replaced and marks the old table's flags item superseded",
    ),
    "ApiGatewayAccountLoggingRole752148A9": (
        {".Properties.RoleArn.Fn::GetAtt", ".Properties.RoleArn.Fn::Join"},
        "the account's setting names the account and region's logging role instead of the stage's",
    ),
    "ApiAdminPolicy3042CD5A": (
        {".Properties.PolicyDocument.Statement[0].Resource"},
        "the admin policy invokes every route, the change-request routes included",
    ),
    "ApiReaderPolicy81AF86C6": (
        {".Properties.PolicyDocument.Statement[1].Resource"},
        "the reader policy denies the change-request routes (reasons and identities), as it denies the history",
    ),
}


def test_the_rule_finds_the_stateful_resources_of_the_golden_template() -> None:
    # Given the template deployed before the split
    golden = golden_resources()
    # When the rule picks its stateful resources
    found: dict[str, int] = {}
    for resource in golden.values():
        if is_stateful(resource):
            found[resource["Type"]] = found.get(resource["Type"], 0) + 1
    # Then it finds the table, the queues, the log groups, the schedule groups, the bus, the parameters, the
    # retained role, the API and its policies, and the custom resources
    assert found == STATEFUL_IN_GOLDEN


def test_every_stateful_resource_keeps_its_logical_id_type_and_properties(synth: Synth) -> None:
    # Given the stateful resources of the template deployed before the split
    golden = {logical_id: r for logical_id, r in golden_resources().items() if is_stateful(r)}
    # When the app synthesizes today, from cdk.json's context
    current = synth.template["Resources"]
    # Then each is still there under its logical ID, but for the intended removals
    assert sorted(set(golden) - set(current)) == sorted(INTENDED_REMOVALS)
    # And with the same type, properties and policies (asset hashes aside), but for the intended changes' paths
    changed = {
        logical_id: {path for path, _, _ in differences(compared(golden[logical_id]), compared(current[logical_id]))}
        for logical_id in golden
        if logical_id in current and compared(current[logical_id]) != compared(golden[logical_id])
    }
    assert changed == {logical_id: paths for logical_id, (paths, _) in INTENDED_CHANGES.items()}


def test_every_stateful_resource_added_since_the_golden_template_is_intended(synth: Synth) -> None:
    # Given the template deployed before the split, and the app's synth today
    golden, current = golden_resources(), synth.template["Resources"]
    # When the stateful resources it did not have are listed
    added = {logical_id for logical_id, r in current.items() if logical_id not in golden and is_stateful(r)}
    # Then each is an intended addition, with its reason
    assert sorted(added) == sorted(INTENDED_ADDITIONS)
