"""The whole service from the installed distributions: the service's wheel with its ``[cdk]`` extra (and the
client's) in an empty virtual environment, then an application's CDK app outside any checkout builds it with
``FlagsService(config=...)`` and binds a function; nothing of the repository is on the path.

Selected with ``-m install`` (also part of the e2e tier): it installs aws-cdk-lib, from pip's cache or PyPI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from singleton_flags_service.contract import DECLARATIONS_FILE, HANDLERS
from tests.support.packaging import ROOT, install_into_empty_venv

pytestmark = pytest.mark.install


APP = """
import importlib.util, json, pathlib, sys
from aws_cdk import App, Stack, aws_lambda as lambda_
from singleton_flags_infra import FlagsService

app = App(outdir="cdk.out", context={"aws:cdk:enable-asset-metadata": True})
stack = Stack(app, "Application", env={"account": "123456789012", "region": "eu-west-1"})
flags = FlagsService(stack, "Flags", config=CONFIG, declarations="flags.json")
function = lambda_.Function(stack, "Checkout", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_inline("def handler(event, context):\\n    return None\\n"))
flags.bind(function)
assembly = app.synth()
template = assembly.get_stack_artifact(stack.artifact_id).template
assets = {}
for resource in template["Resources"].values():
    if resource["Type"] == "AWS::Lambda::Function" and "Handler" in resource["Properties"]:
        path = resource.get("Metadata", {}).get("aws:asset:path")
        if path:
            root = pathlib.Path(assembly.directory) / path
            assets[resource["Properties"]["Handler"]] = sorted(
                p.relative_to(root).as_posix() for p in root.rglob("*.py"))
print(json.dumps({
    "assets": assets,
    "checkout_importable": any(importlib.util.find_spec(name) is not None for name in ("local", "tests", "flagctl")),
    "service": importlib.util.find_spec("singleton_flags_infra").origin,
}))
"""


def test_the_installed_distribution_builds_the_whole_service(tmp_path: Path, wheelhouse: Path) -> None:
    # Given an empty virtual environment with the package and its [cdk] extra, from a wheel-like install
    python = install_into_empty_venv(tmp_path, "singleton-flags-service[cdk]", wheelhouse=wheelhouse)
    venv = python.parents[1]
    # And an application's CDK app, in a directory of its own, with its declarations and cdk.json's settings
    app = tmp_path / "app"
    app.mkdir()
    (app / "flags.json").write_text(DECLARATIONS_FILE.read_text())
    config = json.loads((ROOT / "cdk.json").read_text())["context"]["singleton-flags"]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION": "1",
        # jsii's unpacked copies of the npm packages, keyed by each tarball's hash: the ones the suite's own synths
        # made (unpacking aws-cdk-lib anew costs tens of seconds and tests nothing of ours).
        "JSII_RUNTIME_PACKAGE_CACHE_ROOT": str(Path.home() / ".cache" / "aws" / "jsii" / "package-cache"),
    }
    # When it synthesizes
    out = subprocess.run(
        [str(python), "-c", f"CONFIG = {config!r}\n{APP}"],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # Then the service came from the installed distribution, with no checkout on the path
    assert not result["checkout_importable"]
    assert result["service"].startswith(str(venv))
    # And each function's asset holds its handler beside the runtime packages, never the CDK app or its helpers
    for handler in HANDLERS.values():
        files = result["assets"][handler]
        assert f"{handler.rsplit('.', 1)[0].replace('.', '/')}.py" in files, handler
        assert "singleton_flags/reader.py" in files
        assert not [f for f in files if f.startswith(("singleton_flags_infra/", "singleton_flags_cdk/"))]
    # And the build stayed in the application's directory
    assert (app / ".build").is_dir()
