"""Builds the CDK app: config from context, the stack, and cdk-nag's AwsSolutions checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import App, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from singleton_flags.declarations import Declarations
from singleton_flags_service import vocabulary

from . import constants
from .config import CONTEXT_KEY, STAGE_CONTEXT_KEY, FlagsConfig, parse_config
from .stack import FlagsStack


def add_stage(app: App, config: FlagsConfig, declarations: Declarations | None = None) -> FlagsStack:
    """One stage's stack, named (and identified in the app) ``singleton-flags-<stage>``, tagged with the
    project and its stage on every resource that takes tags."""
    name = constants.stack_name(config.stage)
    stack = FlagsStack(
        app,
        name,
        config=config,
        declarations=declarations,
        stack_name=name,
        termination_protection=config.termination_protection,
        description="singleton-flags: application-wide flags in one DynamoDB item, behind an IAM-authorised API",
    )
    Tags.of(stack).add(constants.TAG_PROJECT, vocabulary.DEFAULT_SERVICE)
    Tags.of(stack).add(constants.TAG_STAGE, config.stage)
    return stack


def build_app(
    context: Mapping[str, Any] | None = None,
    outdir: str | None = None,
    declarations: Declarations | None = None,
) -> tuple[App, FlagsStack]:
    """The app and its one stack. The CLI passes cdk.json's context through the environment; tests pass
    ``context`` (and may pass other ``declarations``) directly. ``-c stage=<name>`` picks the stage."""
    app = App(context=dict(context) if context is not None else None, outdir=outdir)
    config = parse_config(app.node.try_get_context(CONTEXT_KEY), stage=app.node.try_get_context(STAGE_CONTEXT_KEY))
    stack = add_stage(app, config, declarations)
    # cdk-nag v3 is a policy-validation plugin: findings fail `cdk synth` (and app.synth()) and land in the
    # cloud assembly's policy-validation report; acknowledgments are written to template metadata too.
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True, write_suppressions_to_cloud_formation=True))
    return app, stack
