#!/usr/bin/env python3
"""CDK entry point (`npx cdk synth|deploy`): the singleton-flags stack, checked by cdk-nag's AwsSolutions rules."""

from __future__ import annotations

import os
import sys

# aws_cdk's runtime (jsii) starts Node when first imported and prints Node's support notices (an end-of-life
# banner on Node 20) line by line as Python bytes reprs (b'!!  Node 20 is end-of-life ...'): `npx cdk synth`
# would open with a screen of them. The same notices make and the tests silence; a value already set wins.
JSII_QUIET = {
    "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
    "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION": "1",
}
for _name, _value in JSII_QUIET.items():
    os.environ.setdefault(_name, _value)

from singleton_flags_infra.application import build_app  # noqa: E402 - after the notices are silenced
from singleton_flags_infra.config import ConfigError  # noqa: E402


def main() -> None:
    try:
        app, _ = build_app()
    except ConfigError as exc:
        sys.exit(f"cdk.json context is invalid: {exc}")
    app.synth()


if __name__ == "__main__":
    main()
