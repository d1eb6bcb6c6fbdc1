"""The deployed service is the one last deployed: updating a stack deployed from ``tests/infra/golden/template.json``
replaces no stateful resource and changes none of its properties.

Which resources are stateful, what is compared and what is normalised: ``tests.support.golden``.
"""

from __future__ import annotations

from tests.support.golden import compared, golden_resources, is_stateful
from tests.support.synth import Synth

# What the rule finds in the golden template, by type: a type missing here means the rule or the template changed.
STATEFUL_IN_GOLDEN = {
    "AWS::DynamoDB::GlobalTable": 1,
    "AWS::Logs::LogGroup": 9,
    "AWS::SQS::Queue": 6,
    "AWS::Scheduler::ScheduleGroup": 2,
    "AWS::Events::EventBus": 1,
    "AWS::SSM::Parameter": 5,
    "Custom::AWS": 2,  # the account and region's API Gateway logging role: created unless it exists, its policy
    "AWS::IAM::ManagedPolicy": 2,
    "AWS::ApiGateway::RestApi": 1,
    "Custom::ApiGatewayAccountLoggingRole": 1,
    "Custom::FlagsSeed": 1,
}


def test_the_rule_finds_the_stateful_resources_of_the_golden_template() -> None:
    # Given the template deployed before the split
    golden = golden_resources()
    # When the rule picks its stateful resources
    found: dict[str, int] = {}
    for resource in golden.values():
        if is_stateful(resource):
            found[resource["Type"]] = found.get(resource["Type"], 0) + 1
    # Then it finds the table, the queues, the log groups, the schedule groups, the bus, the parameters, the API
    # and its policies, and the custom resources
    assert found == STATEFUL_IN_GOLDEN


def test_every_stateful_resource_keeps_its_logical_id_type_and_properties(synth: Synth) -> None:
    # Given the stateful resources of the template deployed before the split
    golden = {logical_id: r for logical_id, r in golden_resources().items() if is_stateful(r)}
    # When the app synthesizes today, from cdk.json's context
    current = synth.template["Resources"]
    # Then each is still there under its logical ID
    assert sorted(set(golden) - set(current)) == []
    # And with the same type, properties and policies (asset hashes aside)
    changed = {
        logical_id: compared(current[logical_id])
        for logical_id in golden
        if compared(current[logical_id]) != compared(golden[logical_id])
    }
    assert changed == {}, {logical_id: compared(golden[logical_id]) for logical_id in changed}
