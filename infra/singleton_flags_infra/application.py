"""Builds the CDK app: config from context, the stack, and cdk-nag's AwsSolutions checks."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aws_cdk import App, Environment, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from singleton_flags.declarations import Declarations
from singleton_flags_service import vocabulary

from . import constants
from .config import (
    CONTEXT_KEY,
    REGION_FROM_CONFIG,
    REGION_FROM_ENVIRONMENT,
    STAGE_CONTEXT_KEY,
    FlagsConfig,
    parse_config,
)
from .stack import FlagsStack


def add_stage(app: App, config: FlagsConfig, declarations: Declarations | None = None) -> FlagsStack:
    """One stage's stack, named (and identified in the app) ``singleton-flags-<stage>``, tagged with the
    project and its stage on every resource that takes tags. A stage naming its region in cdk.json deploys there
    (whatever the credentials' region); otherwise the stack stays environment-agnostic."""
    name = constants.stack_name(config.stage)
    env = Environment(region=config.region) if config.region_source == REGION_FROM_CONFIG else None
    stack = FlagsStack(
        app,
        name,
        config=config,
        declarations=declarations,
        stack_name=name,
        env=env,
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
    ``context`` (and may pass other ``declarations``) directly. ``-c stage=<name>`` picks the stage.
    ``CDK_DEFAULT_REGION`` (set by the CDK CLI from its credentials) is the stage's region where cdk.json names none:
    it decides whether Powertools' public layer can be resolved there."""
    app = App(context=dict(context) if context is not None else None, outdir=outdir)
    config = parse_config(
        app.node.try_get_context(CONTEXT_KEY),
        stage=app.node.try_get_context(STAGE_CONTEXT_KEY),
        default_region=os.environ.get(REGION_FROM_ENVIRONMENT) or None,
    )
    stack = add_stage(app, config, declarations)
    # cdk-nag v3 is a policy-validation plugin: findings fail `cdk synth` (and app.synth()) and land in the
    # cloud assembly's policy-validation report; acknowledgments are written to template metadata too.
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True, write_suppressions_to_cloud_formation=True))
    return app, stack
