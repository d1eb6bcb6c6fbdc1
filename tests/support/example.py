"""The consumer example (examples/consumer) as the tests use it: its stack, synthesized, and its handler run
from the layer that stack builds, over a stand-in for Lambda's Python runtime (the standard library and boto3)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3

from singleton_flags_cdk.layer import RUNTIME_PROVIDED

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "consumer"
ASSET_METADATA = {"aws:cdk:enable-asset-metadata": True}


def example_stack_module() -> ModuleType:
    """examples/consumer/stack.py, imported by path (the example is not a package of this repository)."""
    spec = importlib.util.spec_from_file_location("consumer_example_stack", EXAMPLE / "stack.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthesize(outdir: Path, build_dir: Path, stage: str = "prod") -> tuple[dict[str, Any], Path]:
    """The example stack's template, and the directory of the client layer its function got."""
    from aws_cdk import App

    app = App(outdir=str(outdir), context=ASSET_METADATA)
    stack = example_stack_module().ConsumerStack(app, "signup-example", flags_stage=stage, build_dir=build_dir)
    assembly = app.synth()
    template: dict[str, Any] = assembly.get_stack_artifact(stack.artifact_id).template
    [function] = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and "Layers" in r["Properties"]
    ]
    [layer_ref] = function["Properties"]["Layers"]
    layer = template["Resources"][layer_ref["Ref"]]
    return template, Path(assembly.directory) / layer["Metadata"]["aws:asset:path"]


def lambda_runtime(target: Path) -> Path:
    """A directory holding what Lambda's Python runtime provides besides the standard library (boto3 and its
    dependencies), linked from this environment: on ``sys.path`` with ``python -S``, nothing else is importable."""
    target.mkdir(parents=True, exist_ok=True)
    site = Path(boto3.__file__).resolve().parents[1]
    for entry in site.iterdir():
        package = entry.name.split("-")[0].split(".")[0].lower()
        if package in RUNTIME_PROVIDED and not entry.name.endswith((".dist-info", ".pth")):
            (target / entry.name).symlink_to(entry)
    return target
