"""``app.py``, the entry point ``npx cdk synth`` runs outside make: what it prints is text, never Python bytes
reprs from the jsii runtime."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.packaging import ROOT


def test_loading_the_cdk_app_outside_make_prints_no_bytes_reprs() -> None:
    # Given: the environment of a shell that never ran make (no JSII_* variable)
    env = {key: value for key, value in os.environ.items() if not key.startswith("JSII_")}
    # When: the entry point is loaded, which starts jsii's Node process
    done = subprocess.run(
        [sys.executable, "-c", "import app, aws_cdk; print('loaded')"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # Then
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "loaded"
    assert "b'" not in done.stderr, done.stderr[:500]
