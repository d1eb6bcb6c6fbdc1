"""Synthesizes the CDK app in-process, once per session per configuration (a synth costs ~20 s).

The `npx cdk synth` run with the pinned CLI is started by its own test alone, in the background while that test's
process synthesizes in-process, so the two overlap; no other test process pays for a CLI run it never checks.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator

import pytest

from tests.support.packaging import ROOT as REPO_ROOT
from tests.support.synth import (
    JSII_QUIET,
    CliSynth,
    Synth,
    build_lock,
    cdk_json_context,
    cli_environment,
    synthesize,
    synthesize_two_stages,
    variant_context,
    variant_declarations,
)

for _name, _value in JSII_QUIET.items():
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session")
def cli_synth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliSynth]:
    """`npx cdk synth --quiet` with the pinned CLI, started now and awaited by whoever asks for the result."""
    if shutil.which("npx") is None or not (REPO_ROOT / "node_modules" / ".bin" / "cdk").exists():
        pytest.fail("the pinned CDK CLI is not installed: run `make install` (npm ci)")
    with build_lock():
        pass  # waited for: another test process's synth has built what the CLI's app reuses
    outdir = tmp_path_factory.mktemp("cdk-cli-out")
    command = ["npx", "--no-install", "cdk", "synth", "--quiet", "--no-notices", "--output", str(outdir)]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "--net", "true"], capture_output=True, check=False).returncode == 0:
        command = ["unshare", "--net", *command]  # a private network namespace: provably offline
    process = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=cli_environment(),
        text=True,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    yield CliSynth(process=process, outdir=outdir)
    if process.poll() is None:  # its test did not run: stop the CLI and the app it started (its own group)
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


@pytest.fixture(scope="session")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(cdk_json_context(), tmp_path_factory.mktemp("synth-cdk-json"))


@pytest.fixture(scope="session")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(variant_context(), tmp_path_factory.mktemp("synth-variant"), variant_declarations())


@pytest.fixture(scope="session")
def two_stages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Synth]:
    return synthesize_two_stages(cdk_json_context(), tmp_path_factory.mktemp("synth-two-stages"))


@pytest.fixture(scope="session", params=["cdk.json", "variant"])
def any_synth(request: pytest.FixtureRequest) -> Synth:
    """Both synthesized apps, for checks that hold for every configuration."""
    return request.getfixturevalue("synth" if request.param == "cdk.json" else "variant")
