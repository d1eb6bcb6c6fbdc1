"""The preflight: what cdk.json implies (offline), and what only the account knows, each check failing against a
botocore Stubber with the fix it names; its exit status is 0 when nothing must be fixed, 1 otherwise."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from singleton_flags_infra import constants
from singleton_flags_infra.config import parse_config
from singleton_flags_infra.preflight import (
    FAIL,
    OK,
    Clients,
    account_findings,
    check_bootstrap,
    check_concurrency,
    check_logging_role,
    check_powertools,
    check_stack,
    run,
)
from tests.support.packaging import ROOT

REGION = "eu-west-1"
ROLE_ARN = "arn:aws:iam::123456789012:role/apigw-logs"


def context(**overrides: Any) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"]["singleton-flags"]
    return {**raw, **overrides}


def cdk_json(tmp_path: Path, **overrides: Any) -> str:
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps({"context": {"singleton-flags": context(**overrides)}}), encoding="utf-8")
    return str(path)


class Stubbed:
    """Six clients, each with its Stubber (no credentials, no network: the Stubber answers)."""

    def __init__(self) -> None:
        def client(service: str) -> Any:
            return boto3.client(
                service, region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
            )

        self.clients = Clients(
            ssm=client("ssm"),
            apigateway=client("apigateway"),
            iam=client("iam"),
            lambda_=client("lambda"),
            cloudformation=client("cloudformation"),
            dynamodb=client("dynamodb"),
        )
        self.stubs = {name: Stubber(getattr(self.clients, name)) for name in Clients.__slots__}
        for stub in self.stubs.values():
            stub.activate()

    def all_clear(self, *, powertools_published: bool = True) -> None:
        """The answers of an account where nothing needs fixing, in the order the checks call."""
        ssm, apigw, iam = self.stubs["ssm"], self.stubs["apigateway"], self.stubs["iam"]
        ssm.add_response("get_parameter", parameter("/cdk-bootstrap/hnb659fds/version", "28"))
        apigw.add_response("get_account", {"cloudwatchRoleArn": ROLE_ARN})
        iam.add_response("get_role", role(), {"RoleName": "apigw-logs"})
        self.stubs["lambda_"].add_response("get_account_settings", account_settings(1000))
        self.stubs["cloudformation"].add_client_error(
            "describe_stacks", "ValidationError", "Stack with id singleton-flags-prod does not exist"
        )
        self.stubs["dynamodb"].add_response("list_tables", {"TableNames": []})
        arn = f"arn:aws:lambda:{REGION}:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-arm64:1"
        if powertools_published:
            ssm.add_response("get_parameter", parameter(constants.POWERTOOLS_LAYER_PARAMETER, arn))
        else:
            ssm.add_client_error("get_parameter", "ParameterNotFound")


def parameter(name: str, value: str) -> dict[str, Any]:
    return {"Parameter": {"Name": name, "Type": "String", "Value": value}}


def role() -> dict[str, Any]:
    return {
        "Role": {
            "Path": "/",
            "RoleName": "apigw-logs",
            "RoleId": "AROAEXAMPLEEXAMPLE01",
            "Arn": ROLE_ARN,
            "CreateDate": "2026-01-01T00:00:00Z",
        }
    }


def account_settings(unreserved: int) -> dict[str, Any]:
    return {"AccountLimit": {"ConcurrentExecutions": unreserved, "UnreservedConcurrentExecutions": unreserved}}


@pytest.fixture
def aws() -> Iterator[Stubbed]:
    stubbed = Stubbed()
    yield stubbed
    for stub in stubbed.stubs.values():
        stub.assert_no_pending_responses()


CONFIG = parse_config(context())


# ---------------------------------------------------------------------------------------------- offline


def test_the_offline_report_says_what_cdk_json_implies_and_exits_0(tmp_path: Path) -> None:
    # Given cdk.json naming its region, in Powertools' matrix
    out = io.StringIO()
    # When the preflight runs offline
    status = run(["--offline", "--cdk-json", cdk_json(tmp_path, region="eu-west-1")], out=out)
    report = out.getvalue()
    # Then it reports the stage's names, region and Powertools mode, windows and environment sizes, and exits 0
    assert status == 0, report
    assert "[  ok] region: eu-west-1 (from cdk.json)" in report
    assert "[  ok] powertools: layer" in report
    assert "[  ok] windows: 1 maintenance window(s) of at most 50" in report
    assert "[  ok] environment write: " in report and "of Lambda's 4096" in report
    assert report.rstrip().endswith("preflight: nothing to fix")


def test_the_offline_report_fails_a_region_without_the_powertools_parameter(tmp_path: Path) -> None:
    # Given cdk.json naming GovCloud with the default `layer` mode
    out = io.StringIO()
    # When the preflight runs offline
    status = run(["--offline", "--cdk-json", cdk_json(tmp_path, region="us-gov-west-1")], out=out)
    # Then it fails, naming the key and the fix, and exits 1
    assert status == 1
    assert "singleton-flags.powertools: 'layer' resolves Powertools' public SSM parameter, which is not published" in (
        out.getvalue()
    )
    assert "not published in us-gov-west-1 (the region of singleton-flags.region)" in out.getvalue()
    assert 'set "powertools": "bundled"' in out.getvalue()


def test_the_offline_report_reports_each_stage_asked_for(tmp_path: Path) -> None:
    # Given two stages asked for on the command line
    out = io.StringIO()
    # When the preflight runs offline
    status = run(["--offline", "--cdk-json", cdk_json(tmp_path), "--stage", "dev", "--stage", "prod-guard-x"], out=out)
    # Then the good one is reported and the stage under another stage's guard prefix is refused
    assert status == 1
    assert "stack singleton-flags-dev" in out.getvalue()
    assert "stage: must not contain a '-guard' segment, got 'prod-guard-x'" in out.getvalue()


# ---------------------------------------------------------------------------------------------- account


def test_an_account_where_nothing_needs_fixing_exits_0(tmp_path: Path, aws: Stubbed) -> None:
    # Given an account bootstrapped, with an existing logging role, room for concurrency and the parameter
    aws.all_clear()
    out = io.StringIO()
    # When the preflight runs with credentials
    status = run(
        ["--cdk-json", cdk_json(tmp_path, region=REGION)], clients_factory=lambda _: (aws.clients, REGION), out=out
    )
    # Then nothing fails
    assert status == 0, out.getvalue()
    assert "[fail]" not in out.getvalue()


def test_a_region_not_bootstrapped_fails_with_the_bootstrap_command(aws: Stubbed) -> None:
    aws.stubs["ssm"].add_client_error("get_parameter", "ParameterNotFound")
    finding = check_bootstrap(aws.clients, REGION)
    assert (finding.level, finding.fix) == (FAIL, f"npx cdk bootstrap aws://<account>/{REGION}")


def test_an_old_bootstrap_fails(aws: Stubbed) -> None:
    aws.stubs["ssm"].add_response("get_parameter", parameter("/cdk-bootstrap/hnb659fds/version", "5"))
    finding = check_bootstrap(aws.clients, REGION)
    assert finding.level == FAIL
    assert finding.message == "version 5, the stack needs 6 or later"


def test_a_logging_role_set_but_deleted_fails_with_the_command_that_repoints_it(aws: Stubbed) -> None:
    # Given an account whose API Gateway setting names a role deleted since
    aws.stubs["apigateway"].add_response("get_account", {"cloudwatchRoleArn": ROLE_ARN})
    aws.stubs["iam"].add_client_error("get_role", "NoSuchEntity", expected_params={"RoleName": "apigw-logs"})
    # When the logging role is checked
    [finding] = check_logging_role(aws.clients, CONFIG)
    # Then it fails, saying the stack will not repair it, and how to
    assert finding.level == FAIL
    assert f"the account's CloudWatch role {ROLE_ARN} no longer exists" in finding.message
    assert "aws apigateway update-account --patch-operations op=replace,path=/cloudwatchRoleArn" in finding.fix


def test_no_logging_role_with_existing_fails(aws: Stubbed) -> None:
    aws.stubs["apigateway"].add_response("get_account", {})
    [finding] = check_logging_role(aws.clients, parse_config(context(apigw_account_logging_role="existing")))
    assert finding.level == FAIL
    assert "apigw_account_logging_role is 'existing'" in finding.message


def test_reserved_concurrency_that_leaves_less_than_the_minimum_unreserved_fails(aws: Stubbed) -> None:
    # Given an account with 110 unreserved and 20 reserved for the read function
    aws.stubs["lambda_"].add_response("get_account_settings", account_settings(110))
    config = parse_config(context(read_reserved_concurrency=20))
    # When the concurrency is checked
    finding = check_concurrency(aws.clients, config)
    # Then it fails: 90 would be left, under Lambda's 100
    assert finding.level == FAIL
    assert "would leave 90 unreserved, under Lambda's minimum of 100" in finding.message
    assert finding.fix.startswith("lower read_reserved_concurrency to at most 10")


def test_reserved_concurrency_within_the_quota_passes(aws: Stubbed) -> None:
    aws.stubs["lambda_"].add_response("get_account_settings", account_settings(1000))
    finding = check_concurrency(aws.clients, parse_config(context(read_reserved_concurrency=20)))
    assert finding.level == OK


def test_a_failed_protected_stack_fails_with_the_recovery_sequence(aws: Stubbed) -> None:
    # Given a first deploy that failed, its stack kept with termination protection on
    aws.stubs["cloudformation"].add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": "singleton-flags-prod",
                    "CreationTime": "2026-01-01T00:00:00Z",
                    "StackStatus": "ROLLBACK_COMPLETE",
                    "EnableTerminationProtection": True,
                }
            ]
        },
        {"StackName": "singleton-flags-prod"},
    )
    aws.stubs["dynamodb"].add_response("list_tables", {"TableNames": ["singleton-flags-prod-StorageTable1-ABC"]})
    # When the stack is checked
    [finding] = check_stack(aws.clients, CONFIG)
    # Then it fails with the one recovery sequence
    assert finding.level == FAIL
    assert finding.fix == (
        "aws cloudformation update-termination-protection --no-enable-termination-protection "
        "--stack-name singleton-flags-prod, then npx cdk deploy (it deletes the failed stack itself)"
    )


def test_retained_tables_of_an_earlier_stack_are_reported(aws: Stubbed) -> None:
    aws.stubs["cloudformation"].add_client_error(
        "describe_stacks", "ValidationError", "Stack with id singleton-flags-prod does not exist"
    )
    aws.stubs["dynamodb"].add_response(
        "list_tables", {"TableNames": ["other-table", "singleton-flags-prod-StorageTable1-ABC"]}
    )
    first, tables = check_stack(aws.clients, CONFIG)
    assert first.level == OK
    assert tables.message.startswith("retained table(s) of an earlier singleton-flags-prod: singleton-flags-prod-")


def test_a_missing_powertools_parameter_fails_with_bundled_as_the_fix(aws: Stubbed) -> None:
    aws.stubs["ssm"].add_client_error(
        "get_parameter", "ParameterNotFound", expected_params={"Name": constants.POWERTOOLS_LAYER_PARAMETER}
    )
    finding = check_powertools(aws.clients, CONFIG)
    assert finding.level == FAIL
    assert finding.fix == 'set "powertools": "bundled" in cdk.json'


def test_one_failing_check_makes_the_exit_status_1(tmp_path: Path, aws: Stubbed) -> None:
    # Given an account where only the Powertools parameter is missing
    aws.all_clear(powertools_published=False)
    out = io.StringIO()
    # When the preflight runs
    status = run(
        ["--cdk-json", cdk_json(tmp_path, region=REGION)], clients_factory=lambda _: (aws.clients, REGION), out=out
    )
    # Then it exits 1 and says so
    assert status == 1
    assert "preflight: something to fix" in out.getvalue()


def test_account_findings_run_every_check(aws: Stubbed) -> None:
    aws.all_clear()
    findings = account_findings(aws.clients, CONFIG, REGION)
    assert [finding.check for finding in findings] == [
        "bootstrap",
        "logging role",
        "concurrency",
        "stack",
        "powertools parameter",
    ]
