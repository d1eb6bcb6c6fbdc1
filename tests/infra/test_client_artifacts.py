"""What an application ships of singleton-flags is the run-time client only: the client's wheel (built from client/)
and the layer `SingletonFlags.bind` attaches hold no part of the service (its write path, schedules, guards, HTTP
layer, handlers, declarations), of the CDK app or of the tools; and nothing in their run-time package imports any.

The wheel's one other package is ``singleton_flags_cdk``, the ``[cdk]`` extra's synth-time helpers (for an
application's CDK app, needing the extra's aws-cdk-lib); it never reaches a layer or a function.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from aws_cdk import App, Stack, aws_dynamodb as dynamodb

from singleton_flags.declarations import parse_declarations
from singleton_flags_cdk import SingletonFlags
from singleton_flags_service.contract import DECLARATIONS_FILE
from tests.support.packaging import build_wheel, imported_modules, python_modules
from tests.support.synth import application_function

pytestmark = pytest.mark.infra

# Never imported by the run-time client: the service (write path, schedules, guards, its api, handlers), the CDK
# app and helpers, the CLI, the runner, the benches, the tests, and what only they need.
FORBIDDEN_ROOTS = frozenset(
    {
        "singleton_flags_service",
        "singleton_flags_infra",
        "singleton_flags_cdk",
        "flagctl",
        "local",
        "bench",
        "tests",
        "aws_cdk",
        "constructs",
        "cdk_nag",
        "pydantic",
        "croniter",
        "moto",
    }
)
APPLICATION_DECLARATIONS = {"flags": [{"name": "checkout_enabled", "type": "bool", "initial": True, "fallback": False}]}


def forbidden_imports(modules: dict[str, str]) -> dict[str, list[str]]:
    """{module: the forbidden modules it imports}, for every module that imports one."""
    found = {}
    for name, source in modules.items():
        bad = sorted(module for module in imported_modules(source, name) if module.split(".")[0] in FORBIDDEN_ROOTS)
        if bad:
            found[name] = bad
    return found


def test_the_clients_wheel_holds_the_run_time_client_and_the_cdk_extras_helpers_only(wheelhouse: Path) -> None:
    # Given the client's wheel, built as `make dist` builds it
    wheel = build_wheel("singleton-flags", wheelhouse)
    # When its files are read
    with zipfile.ZipFile(wheel) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
        [metadata] = [name for name in files if name.endswith(".dist-info/METADATA")]
    packaged = {name: content for name, content in files.items() if ".dist-info/" not in name}
    # Then it holds the client and the CDK helpers, nothing of the service, the CDK app or the tools
    assert {name.split("/")[0] for name in packaged} == {"singleton_flags", "singleton_flags_cdk"}
    # And no declarations: an application ships its own
    assert [name for name in packaged if name.endswith(".json")] == []
    # And nothing in the run-time client imports the service, the CDK helpers or what only they need
    runtime = python_modules(
        (name, content.decode()) for name, content in packaged.items() if name.startswith("singleton_flags/")
    )
    assert "singleton_flags.client" in runtime
    assert forbidden_imports(runtime) == {}
    # And the CDK helpers' dependencies come with the [cdk] extra only
    requirements = [line for line in files[metadata].decode().splitlines() if line.startswith("Requires-Dist:")]
    cdk = [line for line in requirements if line.split()[1].startswith(("aws-cdk-lib", "constructs"))]
    assert cdk and all('extra == "cdk"' in line for line in cdk)


def test_the_layer_bind_attaches_holds_the_run_time_client_and_the_applications_declarations(tmp_path: Path) -> None:
    # Given an application's stack with its own declarations, bound to a deployed table
    app = App(outdir=str(tmp_path / "cdk.out"), context={"aws:cdk:enable-asset-metadata": True})
    stack = Stack(app, "Application", env={"region": "eu-west-1"})
    table = dynamodb.TableV2.from_table_name(stack, "FlagsTable", "singleton-flags-prod-table")
    declarations = parse_declarations(APPLICATION_DECLARATIONS)
    flags = SingletonFlags(stack, "Flags", table=table, declarations=declarations, build_dir=tmp_path / "build")
    function = application_function(stack, "Checkout")
    # When a function is bound and the app synthesizes
    flags.bind(function)
    assembly = app.synth()
    template = assembly.get_stack_artifact(stack.artifact_id).template
    [layer] = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::LayerVersion"]
    directory = Path(assembly.directory) / layer["Metadata"]["aws:asset:path"]
    files = {path.relative_to(directory).as_posix(): path for path in directory.rglob("*") if path.is_file()}
    # Then its python/ holds the client (and Powertools), nothing of the service, the CDK helpers or the tools
    top = {name.split("/")[1].removesuffix(".py") for name in files if name.startswith("python/")}
    assert "singleton_flags" in top
    assert not top & FORBIDDEN_ROOTS
    # And its one declarations file is the application's, never the repository's
    assert [name for name in files if name.endswith("declarations.json")] == ["singleton-flags/declarations.json"]
    served = json.loads(files["singleton-flags/declarations.json"].read_text())
    assert served == declarations.document()
    assert served != json.loads(DECLARATIONS_FILE.read_text())
    # And nothing in the client it carries imports the service, the CDK helpers or what only they need
    runtime = python_modules(
        (name.removeprefix("python/"), path.read_text())
        for name, path in files.items()
        if name.startswith("python/singleton_flags/")
    )
    assert "singleton_flags.client" in runtime
    assert forbidden_imports(runtime) == {}
