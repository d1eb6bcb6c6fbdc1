#!/usr/bin/env python3
"""CDK entry point (`npx cdk synth|deploy`): the singleton-flags stack, checked by cdk-nag's AwsSolutions rules."""

from __future__ import annotations

import sys

from singleton_flags_infra.application import build_app
from singleton_flags_infra.config import ConfigError


def main() -> None:
    try:
        app, _ = build_app()
    except ConfigError as exc:
        sys.exit(f"cdk.json context is invalid: {exc}")
    app.synth()


if __name__ == "__main__":
    main()
