#!/usr/bin/env python3
"""`npx cdk synth` here (with `singleton-flags[cdk]` installed: docs/install.md): the consumer stack, bound to the
flags of the stage named by `-c flags_stage=<stage>` (default prod)."""

from __future__ import annotations

from aws_cdk import App
from stack import ConsumerStack

app = App()
ConsumerStack(app, "signup-example", flags_stage=app.node.try_get_context("flags_stage") or "prod")
app.synth()
