"""The functions as synthesized: runtime, layer, logging, environment, and each role's exact rights."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from singleton_flags_infra.constants import POWERTOOLS_VERSION
from singleton_flags_service.contract import HANDLERS
from tests.support import templates as tt
from tests.support.packaging import ROOT as REPO_ROOT
from tests.support.synth import Synth

pytestmark = pytest.mark.infra

# The reader reaches the flags' partition only; writers also the audit trail, the write API its idempotency keys;
# every writer the record of a migration (its writes follow the seam), which the write API also writes.
LEADING_KEYS = {
    "read": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["SETTINGS#APP"]}},
    "write": {
        "ForAllValues:StringLike": {
            "dynamodb:LeadingKeys": [
                "SETTINGS#APP",
                "AUDIT#APP",
                "GUARD#APP",
                "IDEMPOTENCY#*",
                "SCHEDULE#APP",
                "CHANGE_REQUEST#APP",
                "PROTECTION#APP",
                "MIGRATION#APP",
            ]
        }
    },
    # the scheduled changes' items: created, listed and cancelled by the write API, applied by the maintenance function
    "maintenance": {
        "ForAllValues:StringEquals": {
            "dynamodb:LeadingKeys": ["SETTINGS#APP", "AUDIT#APP", "SCHEDULE#APP", "MIGRATION#APP"]
        }
    },
    # a guard-revert writes the flags and their record; the guard's end, its own item
    "guard": {
        "ForAllValues:StringEquals": {
            "dynamodb:LeadingKeys": ["SETTINGS#APP", "AUDIT#APP", "GUARD#APP", "MIGRATION#APP"]
        }
    },
}
# Stated here on purpose (not imported from infra): least privilege is what these tests pin down.
TABLE_ACTIONS = {
    "read": {"dynamodb:GetItem"},
    # ConditionCheckItem: a keyed no-op is remembered with a ConditionCheck of the flags' version
    "write": {
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:PutItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:Query",
    },
    # Query: the store re-seeds a missing singleton after the newest audit record, from either writer
    "maintenance": {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:Query"},
    "guard": {"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:Query"},
}
# What each function may do beyond the table, its logs and X-Ray (stated here on purpose, as TABLE_ACTIONS).
ON_FAILURE_QUEUE = {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}  # CDK's SqsDestination
OTHER_ACTIONS = {
    "read": set(),
    # a guard's alarms checked (DescribeAlarms, nothing else of CloudWatch); its close scheduled; the scheduled
    # changes' one-time schedules created and deleted, passing them the Scheduler role (test_infra_scheduled_changes)
    "write": {"cloudwatch:DescribeAlarms", "scheduler:CreateSchedule", "scheduler:DeleteSchedule", "iam:PassRole"},
    "maintenance": ON_FAILURE_QUEUE,
    "guard": {"cloudwatch:DescribeAlarms"} | ON_FAILURE_QUEUE,
}
FAILURE_QUEUE_PREFIX = {"maintenance": "MaintenanceFailureQueue", "guard": "GuardsFailureQueue"}
LOG_ACTIONS = {"logs:CreateLogStream", "logs:PutLogEvents"}
XRAY_ACTIONS = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
MEMORY = {"read": 256, "write": 512, "maintenance": 256, "guard": 256}
TIMEOUT = {"read": 5, "write": 20, "maintenance": 30, "guard": 30}


def function(synth: Synth, name: str) -> tuple[str, dict[str, Any]]:
    return tt.function_by_handler(synth.template, HANDLERS[name])


def role_of(synth: Synth, name: str) -> str:
    _, resource = function(synth, name)
    return tt.referenced_id(resource["Properties"]["Role"])


# ---------------------------------------------------------------------------------------------- Powertools pin


def test_powertools_version_is_the_tested_one() -> None:
    # requirements.txt pins what the tests run with, and the stack deploys the layer of that same version
    pins = re.findall(
        r"^aws-lambda-powertools(?:\[[^\]]*\])?==([\w.]+)\s*$",
        (REPO_ROOT / "requirements.txt").read_text(),
        re.MULTILINE,
    )
    assert pins == [POWERTOOLS_VERSION]
    assert importlib.metadata.version("aws-lambda-powertools") == POWERTOOLS_VERSION


def test_bundled_powertools_is_a_layer_asset_built_for_the_runtime_and_architecture(variant: Synth) -> None:
    # Given powertools: bundled (a region without AWS's public layer) / Then no SSM parameter is resolved
    assert variant.config.powertools == "bundled"
    assert not [
        p
        for p in variant.template.get("Parameters", {}).values()
        if str(p.get("Default", "")).startswith("/aws/service/powertools/")
    ]
    layers = variant.resources("AWS::Lambda::LayerVersion")
    ((layer_id, layer),) = [(lid, layer) for lid, layer in layers.items() if "Powertools" in lid]
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    for resource in variant.resources("AWS::Lambda::Function").values():
        # standard library + boto3 only
        if resource["Properties"]["Handler"] != "singleton_flags_service.handlers.apigw_account.handler":
            assert {"Ref": layer_id} in resource["Properties"]["Layers"]
    # And the asset holds the pinned release, with the native wheels of Lambda's arm64 Python 3.13
    asset = variant.outdir / layer["Metadata"]["aws:asset:path"]
    (metadata,) = (asset / "python").glob("aws_lambda_powertools-*.dist-info")
    assert metadata.name == f"aws_lambda_powertools-{POWERTOOLS_VERSION}.dist-info"
    native = [path.name for path in (asset / "python").rglob("*.so")]
    assert native and all("cpython-313-aarch64-linux-gnu" in name for name in native), native


def test_layer_is_the_pinned_public_powertools_layer(synth: Synth) -> None:
    parameters = synth.template["Parameters"]
    path = f"/aws/service/powertools/python/arm64/python3.13/{POWERTOOLS_VERSION}"
    (parameter_id,) = [pid for pid, p in parameters.items() if p.get("Default") == path]
    assert parameters[parameter_id]["Type"] == "AWS::SSM::Parameter::Value<String>"
    for name in HANDLERS:
        _, resource = function(synth, name)
        assert {"Ref": parameter_id} in resource["Properties"]["Layers"]


def test_only_the_write_function_gets_croniter_as_a_layer_of_the_pinned_package(synth: Synth) -> None:
    # Given the synthesized stack / Then one more layer: croniter as installed, for the write function only
    ((layer_id, layer),) = [
        (lid, layer) for lid, layer in synth.resources("AWS::Lambda::LayerVersion").items() if "Cron" in lid
    ]
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    for name in HANDLERS:
        _, resource = function(synth, name)
        assert ({"Ref": layer_id} in resource["Properties"]["Layers"]) is (name == "write")
    asset = synth.outdir / layer["Metadata"]["aws:asset:path"]
    assert (asset / "python" / "croniter" / "croniter.py").is_file()
    assert list((asset / "python").glob("croniter-*.dist-info/**/LICENSE*"))
    assert not list(asset.rglob("tests")) and not list(asset.rglob("*.pyc"))
    assert importlib.metadata.version("croniter") in layer["Properties"]["Description"]


# ---------------------------------------------------------------------------------------------- functions


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_function_runtime_and_settings(synth: Synth, name: str) -> None:
    _, resource = function(synth, name)
    properties = resource["Properties"]
    assert properties["Runtime"] == "python3.13"
    assert properties["Architectures"] == ["arm64"]
    assert properties["Handler"] == HANDLERS[name]
    assert properties["TracingConfig"] == {"Mode": "Active"}
    assert properties["MemorySize"] == MEMORY[name]
    assert properties["Timeout"] == TIMEOUT[name]
    logging = properties["LoggingConfig"]
    assert (logging["LogFormat"], logging["ApplicationLogLevel"], logging["SystemLogLevel"]) == ("JSON", "INFO", "WARN")
    log_group = synth.template["Resources"][tt.referenced_id(logging["LogGroup"])]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] == synth.config.log_retention_days


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_function_environment(synth: Synth, name: str) -> None:
    _, resource = function(synth, name)
    environment = dict(resource["Properties"]["Environment"]["Variables"])  # a copy: the synth is shared
    table_id, _ = synth.one("AWS::DynamoDB::GlobalTable")
    expected = {
        "TABLE_NAME": {"Ref": table_id},
        "POWERTOOLS_PARAMETERS_MAX_AGE": "5",
        "FLAGS_MAX_STALE_SECONDS": "300",
        "FLAGS_AUDIT_RETENTION_DAYS": "365",
        "POWERTOOLS_SERVICE_NAME": "singleton-flags",
        "POWERTOOLS_METRICS_NAMESPACE": "SingletonFlags/prod",
    }
    if name == "write":  # a guard's alarm names are checked against the prefix; its close is scheduled
        expected["FLAGS_GUARD_ALARM_PREFIX"] = "singleton-flags-prod-guard-"
        guard_id, _ = function(synth, "guard")
        ((_, group),) = [
            item for item in synth.resources("AWS::Scheduler::ScheduleGroup").items() if item[0].startswith("Guards")
        ]
        (role_id,) = [lid for lid in synth.resources("AWS::IAM::Role") if lid.startswith("GuardsSchedulerRole")]
        (dlq_id,) = [lid for lid in synth.resources("AWS::SQS::Queue") if lid.startswith("GuardsScheduleDeadLetter")]
        expected |= {
            "GUARD_SCHEDULE_GROUP": group["Properties"]["Name"],
            "GUARD_SCHEDULE_TARGET_ARN": {"Fn::GetAtt": [guard_id, "Arn"]},
            "GUARD_SCHEDULE_ROLE_ARN": {"Fn::GetAtt": [role_id, "Arn"]},
            "GUARD_SCHEDULE_DLQ_ARN": {"Fn::GetAtt": [dlq_id, "Arn"]},
            "GUARD_SCHEDULE_RETRY_ATTEMPTS": "3",
            "GUARD_SCHEDULE_MAX_EVENT_AGE_SECONDS": "3600",
        }
    if name == "write":  # where its one-time schedules go (test_infra_scheduled_changes.py checks the values)
        one_time = {key: environment.pop(key) for key in list(environment) if key.startswith("ONE_TIME_SCHEDULE_")}
        assert set(one_time) == {
            "ONE_TIME_SCHEDULE_GROUP",
            "ONE_TIME_SCHEDULE_TARGET_ARN",
            "ONE_TIME_SCHEDULE_ROLE_ARN",
            "ONE_TIME_SCHEDULE_DLQ_ARN",
            "ONE_TIME_SCHEDULE_RETRY_ATTEMPTS",
            "ONE_TIME_SCHEDULE_MAX_EVENT_AGE_SECONDS",
        }
    assert environment == expected


def deployment_document(synth: Synth) -> dict[str, Any]:
    """The deployment document in the functions' asset (one asset for every function)."""
    (key,) = {function(synth, name)[1]["Properties"]["Code"]["S3Key"] for name in HANDLERS}
    asset = synth.outdir / f"asset.{key.removesuffix('.zip')}"
    document: dict[str, Any] = json.loads((asset / "singleton_flags_service" / "deployment.json").read_text())
    return document


def test_the_windows_travel_in_the_deployment_document_and_follow_the_config(variant: Synth) -> None:
    # Given two windows in cdk.json (one by its duration, one by an explicit end cron)
    # Then the document in the functions' asset has both, in order, with their crons as deployed and their lengths
    assert deployment_document(variant) == {
        "maintenance_windows": [
            {
                "name": "weekly-patching",
                "start": "cron(0 3 ? * SUN *)",
                "end": "cron(0 4 ? * SUN *)",
                "timezone": "Europe/Paris",
                "duration_seconds": 3600,
            },
            {
                "name": "nightly-reindex",
                "start": "cron(30 23 * * ? *)",
                "end": "cron(15 1 * * ? *)",
                "timezone": "America/New_York",
                "duration_seconds": 6300,
            },
        ]
    }
    # And no function's environment carries them
    for name in HANDLERS:
        variables = function(variant, name)[1]["Properties"]["Environment"]["Variables"]
        assert not {"MAINTENANCE_WINDOWS", "MAINTENANCE_SCHEDULES"} & set(variables)


def test_system_log_level_follows_the_config(variant: Synth) -> None:
    # Given system_log_level INFO (START/END/REPORT lines wanted) / Then every function logs them
    for name in HANDLERS:
        _, resource = function(variant, name)
        assert resource["Properties"]["LoggingConfig"]["SystemLogLevel"] == "INFO"


def test_code_asset_is_exactly_the_tracked_runtime_files_of_the_service_and_the_client(synth: Synth) -> None:
    # The functions share one asset: the service's package as the repository holds it (its handlers, its runtime,
    # declarations.json) beside the client's package, and the stage's deployment document; nothing else generated,
    # no CDK app, no tests, bench or tools
    keys = {function(synth, name)[1]["Properties"]["Code"]["S3Key"] for name in HANDLERS}
    (key,) = keys
    asset = synth.outdir / f"asset.{key.removesuffix('.zip')}"
    files = {path.relative_to(asset).as_posix() for path in asset.rglob("*") if path.is_file()}
    tracked = subprocess.run(
        ["git", "ls-files", "functions/singleton_flags_service", "client/src/singleton_flags"],  # noqa: S607
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    expected = {path.removeprefix("functions/").removeprefix("client/src/") for path in tracked}
    assert files == {path for path in expected if not path.endswith(".md")} | {
        "singleton_flags_service/deployment.json"
    }
    assert {
        "singleton_flags_service/declarations.json",
        "singleton_flags_service/api/routes.py",
        "singleton_flags_service/handlers/read_api.py",
        "singleton_flags/reader.py",
    } <= files
    assert {Path(f).parts[0] for f in files} == {"singleton_flags_service", "singleton_flags"}


# ---------------------------------------------------------------------------------------------- roles


@pytest.mark.parametrize("name", sorted(HANDLERS))
def test_each_function_has_its_own_role_with_exactly_what_it_uses(synth: Synth, name: str) -> None:
    role_id = role_of(synth, name)
    role = synth.template["Resources"][role_id]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
    ]
    statements = tt.role_statements(synth.template, role_id)  # also refuses any attached managed policy
    assert all(statement["Effect"] == "Allow" for statement in statements)
    # the maintenance and guard functions also hand failed asynchronous events to their on-failure queue (CDK's
    # SqsDestination grants what sending takes: SendMessage, with GetQueueUrl and GetQueueAttributes)
    assert tt.actions(statements) == TABLE_ACTIONS[name] | LOG_ACTIONS | XRAY_ACTIONS | OTHER_ACTIONS[name]

    table_id, _ = synth.one("AWS::DynamoDB::GlobalTable")
    (table_statement,) = [s for s in statements if any(a.startswith("dynamodb:") for a in tt.as_list(s["Action"]))]
    assert set(tt.as_list(table_statement["Action"])) == TABLE_ACTIONS[name]
    assert table_statement["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}  # the table only: no index, no *
    assert table_statement["Condition"] == LEADING_KEYS[name]

    _, resource = function(synth, name)
    log_group_id = tt.referenced_id(resource["Properties"]["LoggingConfig"]["LogGroup"])
    (log_statement,) = [s for s in statements if any(a.startswith("logs:") for a in tt.as_list(s["Action"]))]
    assert log_statement["Resource"] == {"Fn::GetAtt": [log_group_id, "Arn"]}  # its own log group only

    (xray_statement,) = [s for s in statements if any(a.startswith("xray:") for a in tt.as_list(s["Action"]))]
    assert xray_statement["Resource"] == "*"  # X-Ray has no resource-level permissions

    if name in FAILURE_QUEUE_PREFIX:
        (sqs_statement,) = [s for s in statements if any(a.startswith("sqs:") for a in tt.as_list(s["Action"]))]
        prefix = FAILURE_QUEUE_PREFIX[name]
        (queue_id,) = [lid for lid in synth.resources("AWS::SQS::Queue") if lid.startswith(prefix)]
        assert sqs_statement["Resource"] == {"Fn::GetAtt": [queue_id, "Arn"]}  # its own on-failure queue only

    cloudwatch = [s for s in statements if any(a.startswith("cloudwatch:") for a in tt.as_list(s["Action"]))]
    granted = {a for s in cloudwatch for a in tt.as_list(s["Action"]) if a.startswith("cloudwatch:")}
    # DescribeAlarms takes no resource-level permission for composite alarms: '*', unconditioned; no other
    # CloudWatch action (the statement may share '*' with X-Ray's actions: CDK merges statements of one resource)
    assert granted == ({"cloudwatch:DescribeAlarms"} & OTHER_ACTIONS[name])
    assert all(s["Resource"] == "*" and "Condition" not in s for s in cloudwatch)


# How IAM authorises each entry of a TransactWriteItems: by the permission of the operation it stands for.
TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


class _RecordingClient:
    """A DynamoDB client that records the IAM action of every call it makes, a transaction's entries included."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.actions: set[str] = set()

    def __getattr__(self, operation: str) -> Any:
        call = getattr(self._real, operation)

        def recorded(**params: Any) -> Any:
            if operation == "transact_write_items":
                for entry in params["TransactItems"]:
                    self.actions.update(TRANSACT_ITEM_ACTIONS[kind] for kind in entry)
            else:
                self.actions.add("dynamodb:" + "".join(part.capitalize() for part in operation.split("_")))
            return call(**params)

        return recorded


def test_the_write_role_allows_every_dynamodb_action_the_write_path_sends(synth: Synth) -> None:
    # Given the write path on moto: a keyed change, a keyed no-op, history, and a write that restores the item
    from moto import mock_aws

    from bench.workload import seed_table
    from local.dynamodb_local import create_table
    from singleton_flags.keys import singleton_key
    from singleton_flags_service.contract import load_service_declarations
    from singleton_flags_service.writes.idempotency import Idempotency
    from singleton_flags_service.writes.store import FlagStore

    declarations = load_service_declarations()
    with mock_aws():
        real = boto3_dynamodb_client()
        create_table(real, "flags")
        seed_table(real, "flags", declarations)
        client = _RecordingClient(real)
        store = FlagStore(client, "flags", declarations, sleep=lambda _: None)
        for key in ("applies", "no-op"):
            request = {"flags": {"signup_enabled": False}}
            store.change(
                {"signup_enabled": False}, actor="a", reason="r", idempotency=Idempotency.of("a", key, request)
            )
        store.history()
        real.delete_item(TableName="flags", Key=singleton_key())
        store.change({"signup_enabled": True}, actor="a", reason="r")
    # When the write role's table statement is read from the template
    table_statements = [
        statement
        for statement in tt.role_statements(synth.template, role_of(synth, "write"))
        if any(action.startswith("dynamodb:") for action in tt.as_list(statement["Action"]))
    ]
    granted = {action for statement in table_statements for action in tt.as_list(statement["Action"])}
    # Then every action the write path sent is granted (a ConditionCheck needs ConditionCheckItem of its own)
    assert "dynamodb:ConditionCheckItem" in client.actions
    assert client.actions <= granted, client.actions - granted


def boto3_dynamodb_client() -> Any:
    import boto3

    return boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def test_roles_are_not_shared(synth: Synth) -> None:
    assert len({role_of(synth, name) for name in HANDLERS}) == len(HANDLERS)
