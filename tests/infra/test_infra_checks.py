"""Whole-template checks: cdk-nag (AwsSolutions), cfn-lint, no wildcard action, and `npx cdk synth` itself."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.support import templates as tt
from tests.support.synth import CliSynth, Synth, cdk_json_context, synthesize

pytestmark = pytest.mark.infra

# What cdk-nag reports and the stack acknowledges, each next to its resource with its reason (infra/*.py).
# (rule id as reported, construct path below the stack with the stage name as {stage})
ACKNOWLEDGED = {
    # the seed marks a replaced table's flags item: that table is named only at deploy time (storage.py)
    (
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:dynamodb:<AWS::Region>:<AWS::AccountId>:table/"
        "<AWS::StackName>-*]",
        "Functions/SeedRole/DefaultPolicy/Resource",
    ),
    ("AwsSolutions-IAM5[Resource::*]", "Functions/ChangeEventsRole/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "Functions/SeedFunction/Resource"),
    ("AwsSolutions-SQS3", "Maintenance/FailureQueue/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "Functions/ReadRole/DefaultPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "Functions/WriteRole/DefaultPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "Functions/MaintenanceRole/DefaultPolicy/Resource"),
    ("AwsSolutions-L1", "Functions/ReadFunction/Resource"),
    ("AwsSolutions-L1", "Functions/WriteFunction/Resource"),
    ("AwsSolutions-L1", "Functions/MaintenanceFunction/Resource"),
    ("AwsSolutions-L1", "Functions/ChangeEventsFunction/Resource"),
    ("AwsSolutions-SQS3", "ChangeEvents/FailureQueue/Resource"),
    ("AwsSolutions-APIG2", "Api/RestApi/Resource"),
    ("AwsSolutions-APIG3", "Api/RestApi/DeploymentStage.{stage}/Resource"),
    ("AwsSolutions-APIG6", "Api/RestApi/DeploymentStage.{stage}/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/{name}/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/PATCH/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/history/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/declarations/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/windows/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/revert/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/restore/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/schedules/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/schedules/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/schedules/{id}/DELETE/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/ofrep/v1/evaluate/flags/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/ofrep/v1/evaluate/flags/{key}/POST/Resource"),
    # the MOCK ANY methods answering 405 / 404 for requests no route serves
    ("AwsSolutions-COG4", "Api/RestApi/Default/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/{proxy+}/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/{name}/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/history/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/declarations/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/windows/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/revert/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/restore/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/schedules/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/schedules/{id}/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/ofrep/v1/evaluate/flags/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/ofrep/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/ofrep/v1/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/ofrep/v1/evaluate/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/ofrep/v1/evaluate/flags/{key}/ANY/Resource"),
    ("AwsSolutions-IAM5[Resource::<execute-api>/GET/flags/*]", "Api/ReaderPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::<execute-api>/GET/flags/*]", "Api/AdminPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::<execute-api>/POST/ofrep/v1/evaluate/flags/*]", "Api/ReaderPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::<execute-api>/POST/ofrep/v1/evaluate/flags/*]", "Api/AdminPolicy/Resource"),
    ("AwsSolutions-SQS3", "Maintenance/DeadLetterQueue/Resource"),
    ("AwsSolutions-IAM5[Resource::<MaintenanceFunction.Arn>:*]", "Maintenance/SchedulerRole/DefaultPolicy/Resource"),
    # guarded changes: the guard function, its route, its queues, DescribeAlarms on '*', its schedules' role
    ("AwsSolutions-L1", "Functions/GuardFunction/Resource"),
    ("AwsSolutions-IAM5[Resource::*]", "Functions/GuardRole/DefaultPolicy/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/guards/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/guards/ANY/Resource"),
    ("AwsSolutions-SQS3", "Guards/RuleDeadLetterQueue/Resource"),
    ("AwsSolutions-SQS3", "Guards/ScheduleDeadLetterQueue/Resource"),
    ("AwsSolutions-SQS3", "Guards/FailureQueue/Resource"),
    ("AwsSolutions-IAM5[Resource::<GuardFunction.Arn>:*]", "Guards/SchedulerRole/DefaultPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::<execute-api>/DELETE/flags/schedules/*]", "Api/AdminPolicy/Resource"),
    # the write function creates and deletes the one-time schedules of its stack's group (infra/scheduled_changes.py)
    ("AwsSolutions-IAM5[Resource::<schedules of the group>]", "Functions/WriteRole/DefaultPolicy/Resource"),
    # the reconciler: its function, its recurring schedule's role, the schedules of both groups (infra/reconciler.py)
    ("AwsSolutions-L1", "Functions/ReconcileFunction/Resource"),
    ("AwsSolutions-IAM5[Resource::<ReconcileFunction.Arn>:*]", "Reconciler/SchedulerRole/DefaultPolicy/Resource"),
    ("AwsSolutions-IAM5[Resource::<schedules of the group>]", "Functions/ReconcileRole/DefaultPolicy/Resource"),
    # `flagctl set --wait` reads ServedVersion: cloudwatch:GetMetricData takes no resource (infra/api.py)
    ("AwsSolutions-IAM5[Resource::*]", "Api/AdminPolicy/Resource"),
    # change requests: their routes, their MOCK ANY methods, and the policies' '*' for a request's id
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/{id}/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/{id}/approve/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/{id}/reject/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/{id}/withdraw/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/{id}/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/{id}/approve/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/{id}/reject/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/change-requests/{id}/withdraw/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/migration/GET/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/migration/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/migration/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/migration/finalise/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/migration/finalise/ANY/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/migration/rollback/POST/Resource"),
    ("AwsSolutions-COG4", "Api/RestApi/Default/flags/migration/rollback/ANY/Resource"),
    *(
        (f"AwsSolutions-IAM5[Resource::<execute-api>/{route}]", f"Api/{policy}/Resource")
        for policy in ("AdminPolicy", "ApproverPolicy")
        for route in (
            "GET/flags/change-requests/*",
            "POST/flags/change-requests/*/approve",
            "POST/flags/change-requests/*/reject",
            "POST/flags/change-requests/*/withdraw",
        )
    ),
}
# API Gateway's account-level logging role: our function sets a role unless the account has one (`existing`)
ACKNOWLEDGED_BY_LOGGING_ROLE_MODE = {
    "auto": {
        ("AwsSolutions-L1", "ApiGatewayAccount/AccountSettingFunction/Resource"),
        (
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            "AWS679f53fac002430cb0da5b7982bd2287/ServiceRole/Resource",
        ),
    },
    "arn": {("AwsSolutions-L1", "ApiGatewayAccount/AccountSettingFunction/Resource")},
    "existing": set(),
}


def stack_name(synth: Synth) -> str:
    return f"singleton-flags-{synth.config.stage}"


def expected_acknowledgments(synth: Synth) -> set[tuple[str, str]]:
    mode = synth.config.apigw_account_logging_role
    # the write function creates the guards' close schedules in their group only (its name is the stack's)
    (group,) = [g for lid, g in synth.resources("AWS::Scheduler::ScheduleGroup").items() if lid.startswith("Guards")]
    schedules = (
        f"arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/{group['Properties']['Name']}/*"
    )
    guard_schedules = {
        (f"AwsSolutions-IAM5[Resource::{schedules}]", f"Functions/{role}/DefaultPolicy/Resource")
        for role in ("WriteRole", "ReconcileRole")
    }
    by_mode = ACKNOWLEDGED_BY_LOGGING_ROLE_MODE[mode if mode in ("auto", "existing") else "arn"]
    # the forwarding rule's dead-letter queue exists with the change events topic only
    forwarding = (
        {("AwsSolutions-SQS3", "ChangeEvents/ForwardDeadLetterQueue/Resource")}
        if synth.config.change_events.sns_topic
        else set()
    )
    return ACKNOWLEDGED | by_mode | guard_schedules | forwarding


# cfn-lint findings CDK itself causes, each with why it stands; everything else fails the test.
CFN_LINT_EXCLUSIONS = {
    "W3005": "lambda.Function adds DependsOn on its role (and default policy) although its Role property already "
    "references the role with GetAtt: redundant, harmless, and not ours to remove",
}
CFN_LINT_REGIONS = ["us-east-1", "eu-west-1"]


def nag_report(synth: Synth) -> dict[str, Any]:
    (report,) = [r for r in synth.validation_report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    return report


def short_rule(rule: str) -> str:
    """Logical ids and the execute-api ARN prefix abbreviated, so the expectation reads like the finding."""
    rule = re.sub(r"arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<\w+>/<\w+>", "<execute-api>", rule)
    rule = re.sub(
        r"arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule/singletonflags\w+-Maintenance-Group-"
        r"[0-9A-F]{8}/\*",
        "<schedules of the group>",
        rule,
    )
    return re.sub(r"<Functions(\w+?)Function[0-9A-F]{8}\.Arn>", r"<\1Function.Arn>", rule)


def test_cdk_nag_has_no_unacknowledged_finding(any_synth: Synth) -> None:
    report = nag_report(any_synth)
    assert report["violations"] == []
    assert report["conclusion"] == "success"


def test_a_stage_that_names_its_region_has_every_finding_acknowledged(tmp_path: Any) -> None:
    # Given cdk.json's stage naming its region (the stack is then pinned there: its ARNs name the region)
    context = cdk_json_context()
    context["singleton-flags"]["region"] = "eu-west-1"
    # When it synthesizes (a finding without its acknowledgment fails the synth)
    pinned = synthesize(context, tmp_path)
    # Then cdk-nag found nothing unacknowledged, with the region spelled out in the acknowledged findings
    report = nag_report(pinned)
    assert (pinned.config.region, report["violations"], report["conclusion"]) == ("eu-west-1", [], "success")


def test_cdk_nag_acknowledgments_are_the_known_ones_each_scoped_and_reasoned(any_synth: Synth) -> None:
    acknowledged = set()
    for finding in nag_report(any_synth)["suppressedViolations"]:
        (construct,) = finding["violatingConstructs"]
        path = construct["constructPath"]
        # made on the resource's own construct (or its owner, e.g. the role of a DefaultPolicy), never the stack
        assert path.startswith(finding["acknowledgedAt"] + "/"), finding["acknowledgedAt"]
        assert finding["acknowledgedAt"].count("/") >= 2, finding["acknowledgedAt"]
        assert len(finding["reason"]) > 60, finding["reason"]
        relative = path.removeprefix(f"{stack_name(any_synth)}/").replace(
            f"DeploymentStage.{any_synth.config.stage}/", "DeploymentStage.{stage}/"
        )
        acknowledged.add((short_rule(finding["ruleName"]), relative))
    assert acknowledged == expected_acknowledgments(any_synth)


def is_key_administration(synth: Synth, holder: str, statement: dict[str, Any]) -> bool:
    """KMS's default key policy: the account (root) administers the key through IAM, kms:* on this key."""
    return (
        synth.template["Resources"][holder]["Type"] == "AWS::KMS::Key"
        and statement["Action"] == "kms:*"
        and statement["Resource"] == "*"
        and tt.render(statement["Principal"]["AWS"]) == "arn:<AWS::Partition>:iam::<AWS::AccountId>:root"
    )


def test_no_wildcard_action_is_granted_anywhere(any_synth: Synth) -> None:
    # Deny statements may name every action (the SSL-only queue and topic policies deny sqs:* / sns:* over
    # plain HTTP): they only take rights away. No Allow anywhere names a wildcard action.
    statements = [(holder, s) for holder, s in tt.all_statements(any_synth.template) if s["Effect"] == "Allow"]
    assert statements
    for holder, statement in statements:
        if is_key_administration(any_synth, holder, statement):
            continue
        assert "NotAction" not in statement, holder
        for action in tt.as_list(statement["Action"]):
            assert action != "*" and not action.endswith(":*"), (holder, action)
            if action.startswith("dynamodb:") and action != "dynamodb:ListStreams":  # it has no resource type
                assert statement["Resource"] != "*", holder


def test_cfn_lint_is_clean_but_for_cdks_own_findings(any_synth: Synth, tmp_path: Any) -> None:
    from cfnlint.api import ManualArgs, lint

    template = json.dumps(any_synth.template)
    matches = lint(template, config=ManualArgs(regions=CFN_LINT_REGIONS))
    unexpected = [
        f"{m.rule.id} {'/'.join(map(str, m.path))}: {m.message}"
        for m in matches
        if m.rule.id not in CFN_LINT_EXCLUSIONS
    ]
    assert unexpected == []
    for match in matches:  # the excluded rule only where CDK causes it: DependsOn of a Lambda function
        resource = any_synth.template["Resources"][match.path[1]]
        assert (resource["Type"], match.path[2]) == ("AWS::Lambda::Function", "DependsOn"), match.path


def test_npx_cdk_synth_with_the_pinned_cli(cli_synth: CliSynth, synth: Synth) -> None:
    # Given the pinned CLI synthesizes cdk.json's app (offline, in the background since the session began)
    returncode, output = cli_synth.wait()
    assert returncode == 0, output[-4000:]
    cli_template = json.loads((cli_synth.outdir / f"{stack_name(synth)}.template.json").read_text())

    # Then it deploys exactly what the tests asserted (the CLI only adds its version-reporting resource)
    resources = {lid: r for lid, r in cli_template["Resources"].items() if r["Type"] != "AWS::CDK::Metadata"}
    assert resources == synth.template["Resources"]
    assert cli_template["Outputs"] == synth.template["Outputs"]
    assert cli_template["Parameters"] == synth.template["Parameters"]
    report = json.loads((cli_synth.outdir / "validation-report.json").read_text())
    assert [r["conclusion"] for r in report["pluginReports"]] == ["success"]
