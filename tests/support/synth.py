"""The infra tier's machinery: the two app configurations, an in-process synth, the CLI synth.

``cdk.json`` is the app exactly as the repository configures it (what `cdk deploy` ships); the variant
changes what cdk.json cannot show at once: an alarm email (SNS topic), a second window given by an explicit
end cron, other throttling and stage, platform log lines back on, an explicit API Gateway logging role,
Powertools bundled instead of AWS's layer, termination protection off, change events forwarded to an SNS
topic, and one more declared flag (the seed must pick it up). ``two_stages`` is one app holding cdk.json's
stage and a ``dev`` stage whose account already has API Gateway's logging role (``existing``).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import templates as tt
from tests.support.packaging import ROOT as REPO_ROOT, folder_lock

JSII_QUIET = {
    # The jsii runtime reads these when aws_cdk is first imported (Node 20 is past jsii's support window).
    "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
}

CDK_JSON = REPO_ROOT / "cdk.json"
EXTRA_FLAG = {
    "name": "beta_banner_enabled",
    "type": "bool",
    "initial": True,
    "fallback": False,
    "description": "Declared by the infra tests only: the seed must add it and leave live values alone.",
}
VARIANT_LOGGING_ROLE = "arn:aws:iam::123456789012:role/apigateway-cloudwatch-logs"
NIGHTLY_WINDOW = {
    "name": "nightly-reindex",
    "start": "cron(30 23 * * ? *)",
    "end": "cron(15 1 * * ? *)",
    "timezone": "America/New_York",
}


@dataclass
class Synth:
    """One synthesized app: its template (plain JSON), the config it was built from, its cloud assembly dir."""

    template: dict[str, Any]
    config: Any
    declarations: Any
    outdir: Path
    validation_report: dict[str, Any] = field(default_factory=dict)
    termination_protection: bool | None = None

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return tt.resources(self.template, resource_type)

    def one(self, resource_type: str) -> tuple[str, dict[str, Any]]:
        found = self.resources(resource_type)
        assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
        return next(iter(found.items()))


# What the CLI adds to the context of every synth, so the in-process template is the one `cdk deploy` sends.
CLI_CONTEXT = {"aws:cdk:enable-path-metadata": True, "aws:cdk:enable-asset-metadata": True}


def cdk_json_context() -> dict[str, Any]:
    return {**json.loads(CDK_JSON.read_text(encoding="utf-8"))["context"], **CLI_CONTEXT}


def variant_context() -> dict[str, Any]:
    context = copy.deepcopy(cdk_json_context())
    settings = context["singleton-flags"]
    settings["stage"] = "staging"
    settings["alarm_email"] = "ops@example.com"
    settings["system_log_level"] = "INFO"
    settings["api_throttling"] = {
        "read": {"rate_limit": 50, "burst_limit": 100},
        "write": {"rate_limit": 2, "burst_limit": 4},
    }
    settings["maintenance_windows"] = [*settings["maintenance_windows"], NIGHTLY_WINDOW]
    settings["apigw_account_logging_role"] = VARIANT_LOGGING_ROLE
    settings["powertools"] = "bundled"
    settings["termination_protection"] = False
    settings["change_events"] = {"sns_topic": True}
    return context


def variant_declarations() -> Any:
    from singleton_flags.declarations import parse_declarations
    from singleton_flags_service.contract import DECLARATIONS_FILE

    document = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
    document["flags"].append(EXTRA_FLAG)
    return parse_declarations(document)


def build_lock() -> AbstractContextManager[None]:
    """Held while a synth builds its layers and assets into the checkout's ``.build/`` (unless they are there):
    two test processes building the same one at once would remove each other's half-built folder."""
    return folder_lock(REPO_ROOT / ".build")


def synthesize(context: dict[str, Any], outdir: Path, declarations: Any = None) -> Synth:
    from singleton_flags_infra.application import build_app
    from singleton_flags_service.contract import load_service_declarations

    with build_lock():
        app, stack = build_app(context, outdir=str(outdir), declarations=declarations)
        assembly = app.synth()
    artifact = assembly.get_stack_artifact(stack.artifact_id)
    report_file = outdir / "validation-report.json"
    return Synth(
        template=artifact.template,
        config=stack.config,
        declarations=declarations if declarations is not None else load_service_declarations(),
        outdir=outdir,
        validation_report=json.loads(report_file.read_text()) if report_file.exists() else {},
        termination_protection=artifact.termination_protection,
    )


def synthesize_two_stages(context: dict[str, Any], outdir: Path) -> dict[str, Synth]:
    """One app, two stacks: the context's stage, and ``dev`` whose account already has the logging role."""
    import dataclasses

    from aws_cdk import App

    from singleton_flags_infra.application import add_stage
    from singleton_flags_infra.config import CONTEXT_KEY, parse_config
    from singleton_flags_service.contract import load_service_declarations

    app = App(context=context, outdir=str(outdir))
    first = parse_config(context[CONTEXT_KEY])
    second = dataclasses.replace(first, stage="dev", apigw_account_logging_role="existing")
    with build_lock():
        stacks = {config.stage: add_stage(app, config) for config in (first, second)}
        assembly = app.synth()
    return {
        stage: Synth(
            template=assembly.get_stack_artifact(stack.artifact_id).template,
            config=stack.config,
            declarations=load_service_declarations(),
            outdir=outdir,
        )
        for stage, stack in stacks.items()
    }


@dataclass
class CliSynth:
    process: subprocess.Popen[str]
    outdir: Path

    def wait(self, timeout: float = 300) -> tuple[int, str]:
        output, _ = self.process.communicate(timeout=timeout)
        return self.process.returncode, output


def cli_environment() -> dict[str, str]:
    """No AWS access and no network: no credentials, no instance metadata, no notices, no telemetry."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    env.update(
        AWS_EC2_METADATA_DISABLED="true",
        CDK_DISABLE_CLI_TELEMETRY="true",
        CDK_DISABLE_VERSION_CHECK="true",
        **JSII_QUIET,
    )
    return env


def application_function(stack: Any, construct_id: str, architecture: Any = None) -> Any:
    """An application's Python function that does nothing: what a test binds the flags to."""
    from aws_cdk import aws_lambda as lambda_

    return lambda_.Function(
        stack,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_13,
        architecture=architecture,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    )


def layer_directory(template: dict[str, Any], outdir: Path, layer_ref: dict[str, Any]) -> Path:
    """The asset directory of the layer version ``layer_ref`` points at, in the synthesized cloud assembly."""
    layer = template["Resources"][layer_ref["Ref"]]
    return outdir / layer["Metadata"]["aws:asset:path"]
