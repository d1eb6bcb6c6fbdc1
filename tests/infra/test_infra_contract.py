"""The contract between the stack and the functions, through the synthesized stack: what the stack writes (each
function's environment, the deployment document in their asset) is read by each function's own reader into the
configuration cdk.json asked for; and every environment fits Lambda's 4 KB, whatever the references resolve to."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from singleton_flags_infra import environment_size
from singleton_flags_infra.constants import SCHEDULE_MAX_EVENT_AGE_SECONDS
from singleton_flags_service import contract
from singleton_flags_service.contract import CHANGE_EVENTS_HANDLER, HANDLERS, RECONCILE_HANDLER, SEED_HANDLER
from tests.support import templates as tt
from tests.support.synth import Synth, cdk_json_context, synthesize

pytestmark = pytest.mark.infra

HANDLER_OF = {
    **HANDLERS,
    contract.SEED_FUNCTION: SEED_HANDLER,
    contract.CHANGE_EVENTS_FUNCTION: CHANGE_EVENTS_HANDLER,
    contract.RECONCILE_FUNCTION: RECONCILE_HANDLER,
}
# What CloudFormation resolves a reference to, for the readers to read (a deployment's values, made up).
ACCOUNT, REGION = "123456789012", "eu-west-1"
RESOLVED = {
    ("AWS::DynamoDB::GlobalTable", "Ref"): lambda lid: f"singleton-flags-prod-{lid}-1A2B3C4D5E6F",
    ("AWS::Lambda::Function", "Arn"): lambda lid: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{lid}",
    ("AWS::IAM::Role", "Arn"): lambda lid: f"arn:aws:iam::{ACCOUNT}:role/{lid}",
    ("AWS::SQS::Queue", "Arn"): lambda lid: f"arn:aws:sqs:{REGION}:{ACCOUNT}:{lid}",
}


def resolve(template: dict[str, Any], value: Any) -> str:
    """A variable's value as deployed: a literal as it is, a reference as CloudFormation would resolve it."""
    if isinstance(value, str):
        return value
    ((function, argument),) = value.items()
    lid, attribute = (argument, "Ref") if function == "Ref" else argument
    return RESOLVED[(template["Resources"][lid]["Type"], attribute)](lid)


def deployed(synth: Synth, name: str, document: Path) -> dict[str, str]:
    """The environment ``name`` runs with, once deployed from this template, its asset's document beside it."""
    _, resource = tt.function_by_handler(synth.template, HANDLER_OF[name])
    variables = resource["Properties"]["Environment"]["Variables"]
    return {
        **{key: resolve(synth.template, value) for key, value in variables.items()},
        contract.DEPLOYMENT_FILE_VARIABLE: str(document),
    }


def asset_document(synth: Synth) -> Path:
    """The deployment document in the functions' asset (the path the functions read it from, under the asset)."""
    (key,) = {
        tt.function_by_handler(synth.template, handler)[1]["Properties"]["Code"]["S3Key"]
        for handler in HANDLERS.values()
    }
    return (
        synth.outdir / f"asset.{key.removesuffix('.zip')}" / "singleton_flags_service" / contract.DEPLOYMENT_FILE.name
    )


def logical_id(synth: Synth, resource_type: str, prefix: str) -> str:
    (lid,) = [lid for lid in synth.resources(resource_type) if lid.startswith(prefix)]
    return lid


def target(synth: Synth, prefix: str, function: str, dead_letters: str) -> contract.OneTimeTarget:
    """Where the one-time schedules of one construct (``prefix``: Maintenance, Guards) go, as cdk.json's stack built
    them: its group, the function they invoke, its Scheduler role and its dead-letter queue."""
    template = synth.template
    group = synth.resources("AWS::Scheduler::ScheduleGroup")[logical_id(synth, "AWS::Scheduler::ScheduleGroup", prefix)]
    function_id, _ = tt.function_by_handler(template, HANDLERS[function])
    return contract.OneTimeTarget(
        group=group["Properties"]["Name"],
        target_arn=resolve(template, {"Fn::GetAtt": [function_id, "Arn"]}),
        role_arn=resolve(
            template, {"Fn::GetAtt": [logical_id(synth, "AWS::IAM::Role", f"{prefix}SchedulerRole"), "Arn"]}
        ),
        dead_letter_arn=resolve(template, {"Fn::GetAtt": [logical_id(synth, "AWS::SQS::Queue", dead_letters), "Arn"]}),
        retry_attempts=3,
        max_event_age_seconds=SCHEDULE_MAX_EVENT_AGE_SECONDS,
    )


def asked_for(synth: Synth, name: str) -> object:
    """The configuration cdk.json asks ``name`` to run with, stated from cdk.json (and the resources it built)."""
    config = synth.config
    table_id, _ = synth.one("AWS::DynamoDB::GlobalTable")
    settings = contract.Settings(
        table_name=resolve(synth.template, {"Ref": table_id}),
        max_age_seconds=config.cache_max_age_seconds,
        max_stale_seconds=config.max_stale_seconds,
        audit_retention_days=config.audit_retention_days,
    )
    windows = tuple(
        contract.WindowDefinition(window.name, window.start, window.end, window.timezone, window.duration_seconds)
        for window in config.maintenance_windows
    )
    if name == contract.CHANGE_EVENTS_FUNCTION:
        return contract.ChangeEventSettings(
            event_bus_name=f"singleton-flags-{config.stage}", stage=config.stage, table_name=settings.table_name
        )
    if name in ("read", contract.SEED_FUNCTION):
        return settings
    if name in ("maintenance", "guard"):
        return contract.WindowsConfiguration(settings, windows)
    scheduled_changes = target(synth, "Maintenance", "maintenance", "MaintenanceDeadLetterQueue")
    guard_closes = target(synth, "Guards", "guard", "GuardsScheduleDeadLetterQueue")
    if name == contract.RECONCILE_FUNCTION:
        return contract.ReconcileConfiguration(settings, scheduled_changes, guard_closes)
    return contract.WriteConfiguration(
        dataclasses.replace(settings, guard_alarm_prefix=config.guard_prefix),
        windows,
        scheduled_changes=scheduled_changes,
        guard_closes=guard_closes,
    )


# ---------------------------------------------------------------------------------------------- the round trip


@pytest.mark.parametrize("name", sorted(contract.READERS))
def test_each_function_reads_back_what_cdk_json_asked_for(any_synth: Synth, name: str) -> None:
    # Given the synthesized stack: the function's environment (its references resolved as CloudFormation would) and
    # the deployment document in its asset
    environment = deployed(any_synth, name, asset_document(any_synth))
    # When the function's own reader reads them at its cold start
    configuration = contract.READERS[name](environment)
    # Then it runs with the configuration cdk.json asked for
    assert configuration == asked_for(any_synth, name)


def test_every_window_the_write_function_reads_back_is_evaluated_as_deployed(any_synth: Synth) -> None:
    # Given the write function's configuration read back / When its cold start parses the windows' crons
    from singleton_flags_service.maintenance.windows import window_schedules

    configuration = contract.READERS["write"](deployed(any_synth, "write", asset_document(any_synth)))
    assert isinstance(configuration, contract.WriteConfiguration)
    schedules = window_schedules(configuration.windows)
    # Then each is the window Scheduler runs: the crons and zone of the stack's own schedules
    deployed_schedules = {
        lid: resource["Properties"] for lid, resource in any_synth.resources("AWS::Scheduler::Schedule").items()
    }
    for schedule in schedules:
        for action, cron in (("start", schedule.start), ("end", schedule.end)):
            (properties,) = [
                p
                for lid, p in deployed_schedules.items()
                if re.search(rf"{schedule.name.replace('-', '')}{action}", lid)
            ]
            assert (properties["ScheduleExpression"], properties["ScheduleExpressionTimezone"]) == (
                cron.expression,
                schedule.timezone,
            )


# ---------------------------------------------------------------------------------------------- Lambda's 4 KB


def estimates(synth: Synth) -> dict[str, int]:
    """Each function's environment as Lambda counts it, its references at their longest."""
    types = {lid: resource["Type"] for lid, resource in synth.template["Resources"].items()}
    sizes = {}
    for name, handler in HANDLER_OF.items():
        _, resource = tt.function_by_handler(synth.template, handler)
        variables = resource["Properties"]["Environment"]["Variables"]
        sizes[name] = environment_size.measured_bytes(environment_size.estimate(variables, types))
    return sizes


def test_the_estimate_is_what_lambda_measures_with_every_reference_at_its_longest() -> None:
    # Given variables: a literal, and references whose longest forms are known
    types = {"Table": "AWS::DynamoDB::GlobalTable", "Fn": "AWS::Lambda::Function"}
    variables = {"A": 'say "hi"', "T": {"Ref": "Table"}, "F": {"Fn::GetAtt": ["Fn", "Arn"]}}
    worst = environment_size.estimate(variables, types)
    # Then a literal counts as itself, a table's name at DynamoDB's 255, a function's ARN with a 64-character name
    assert worst["A"] == 'say "hi"' and len(worst["T"]) == 255
    assert len(worst["F"]) == len(f"arn:aws-us-gov:lambda:{'r' * 20}:{ACCOUNT}:function:") + 64
    # And the size is the compact JSON of the whole map, its quotes escaped, as Lambda's error shows what it measured
    assert environment_size.measured_bytes(worst) == len(json.dumps(worst, separators=(",", ":")))
    assert environment_size.measured_bytes({"A": 'say "hi"'}) == len('{"A":"say \\"hi\\""}')


def test_at_the_budget_passes_one_byte_over_fails_naming_the_biggest_variables() -> None:
    # Given an environment whose estimate is exactly the budget (4,096 less the margin)
    padding = environment_size.BUDGET_BYTES - environment_size.measured_bytes({"BIG": "", "SMALL": "s"})
    at_budget = {"BIG": "x" * padding, "SMALL": "s"}
    assert environment_size.measured_bytes(at_budget) == environment_size.BUDGET_BYTES
    assert environment_size.problems("write", at_budget, {}) == []
    # When one byte more / Then refused, naming the function, the figures and its biggest variable first
    (problem,) = environment_size.problems("write", {**at_budget, "SMALL": "ss"}, {})
    assert problem.startswith("the write function's environment may reach 3073 bytes")
    assert "over 3072 (Lambda's 4096 less a 1024-byte margin); biggest: BIG (" in problem


def test_a_reference_of_unknown_length_cannot_be_sized() -> None:
    (problem,) = environment_size.problems("write", {"URL": {"Fn::GetAtt": ["Api", "RootResourceId"]}}, {})
    assert "the write function's environment cannot be sized" in problem and "RootResourceId" in problem


def test_a_synth_that_could_exceed_the_margin_fails_naming_the_function_and_its_biggest_variables(
    tmp_path: Path,
) -> None:
    from singleton_flags_infra.application import build_app

    # Given cdk.json's stack, and a value that takes the write function's environment over the budget
    app, stack = build_app(cdk_json_context(), outdir=str(tmp_path))
    stack.functions.write.add_environment("HUGE_VALUE", "x" * environment_size.MARGIN_BYTES * 2)
    # When it is synthesized / Then the synth fails before anything is deployed, saying which function and why
    with pytest.raises(Exception, match="Validation failed") as failed:
        app.synth()
    message = str(failed.value)
    assert "singleton-flags-prod/Functions/WriteFunction" in message
    assert "the write function's environment may reach" in message
    assert "biggest: HUGE_VALUE (2063 B), TABLE_NAME (270 B)" in message
    assert "read function" not in message  # only the function over the budget


@pytest.fixture(scope="module")
def at_the_window_limit(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """cdk.json's stack with as many windows as a deployment may declare, each with a 40-character name."""
    context = copy.deepcopy(cdk_json_context())
    context["singleton-flags"]["maintenance_windows"] = [
        {
            "name": f"nightly-maintenance-window-number-{index:06d}",
            "start": f"cron({index} 2 * * ? *)",
            "duration_minutes": 5,
            "timezone": "Europe/Paris",
            "description": "A window at the limit of what a deployment may declare.",
        }
        for index in range(contract.MAX_WINDOWS)
    ]
    return synthesize(context, tmp_path_factory.mktemp("synth-window-limit"))


def test_a_synth_at_the_window_limit_passes_and_no_environment_grows(at_the_window_limit: Synth, synth: Synth) -> None:
    # Given the stack at the window limit (it synthesized: every environment passed the check)
    document = json.loads(asset_document(at_the_window_limit).read_text())
    assert len(document["maintenance_windows"]) == contract.MAX_WINDOWS
    windows = [
        lid for lid in at_the_window_limit.resources("AWS::Scheduler::Schedule") if lid.startswith("Maintenance")
    ]
    assert len(windows) == 2 * contract.MAX_WINDOWS
    # Then the stack stays well within CloudFormation's 500 resources: at least 150 left for an embedding application
    assert len(at_the_window_limit.template["Resources"]) < 350
    # And each function's environment is the size it is with cdk.json's one window, within the budget
    assert estimates(at_the_window_limit) == estimates(synth)
    assert max(estimates(synth).values()) <= environment_size.BUDGET_BYTES
