"""The deployed service before the split into distributions, as a template (``tests/infra/golden/template.json``,
synthesized from cdk.json's context at the last commit before it), and how the current synth is compared with it.

A resource is stateful when replacing it would lose data, or an identity that lives outside the stack:

- it carries a ``DeletionPolicy`` or ``UpdateReplacePolicy`` (the CDK writes one only on resources that keep data:
  the table, log groups, queues, schedule groups, the seed, the retained logging role and its custom resource);
- or its type keeps data (tables, queues, topics and their subscriptions, log groups, buckets, secrets, KMS keys
  and aliases, schedule groups: the functions' one-time schedules live in them), or a name or ARN that others
  hold (the event bus other stacks' rules target, the SSM parameters consumers resolve, the REST API whose id is
  in every caller's URL, the managed policies callers attach by ARN);
- or it is a custom resource: replacing one runs its Create, then its Delete.

Compared, for each: its logical ID, type, properties, deletion and replacement policies and condition; not its
``Metadata`` (the CDK's construct and asset paths: bookkeeping that deploys nothing) nor its ``DependsOn``
(ordering only).
Normalised: only asset hashes (64 hex digits: the content hash of a Lambda code or layer asset, which changes
with the code). Generated names (a schedule group's hash suffix comes from its construct path) and the seed's
``DeclarationsFingerprint`` (the declarations' hash) are compared as they are: either changing replaces a
resource or re-runs the seed.

``python -m tests.support.golden`` prints every difference of the current synth (cdk.json's context): logical IDs
added and removed, and every changed resource, stateful or not.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.packaging import ROOT

GOLDEN_TEMPLATE = ROOT / "tests" / "infra" / "golden" / "template.json"
STATEFUL_TYPES = frozenset(
    {
        "AWS::DynamoDB::Table",
        "AWS::DynamoDB::GlobalTable",
        "AWS::KMS::Key",
        "AWS::KMS::Alias",
        "AWS::SQS::Queue",
        "AWS::SNS::Topic",
        "AWS::SNS::Subscription",
        "AWS::Logs::LogGroup",
        "AWS::S3::Bucket",
        "AWS::SecretsManager::Secret",
        "AWS::Scheduler::ScheduleGroup",
        "AWS::Events::EventBus",
        "AWS::SSM::Parameter",
        "AWS::ApiGateway::RestApi",
        "AWS::IAM::ManagedPolicy",
        "AWS::CloudFormation::CustomResource",
    }
)
COMPARED = ("Type", "Properties", "DeletionPolicy", "UpdateReplacePolicy", "Condition")
ASSET_HASH = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")


def golden_template() -> dict[str, Any]:
    template: dict[str, Any] = json.loads(GOLDEN_TEMPLATE.read_text(encoding="utf-8"))
    return template


def golden_resources() -> dict[str, dict[str, Any]]:
    resources: dict[str, dict[str, Any]] = golden_template()["Resources"]
    return resources


def is_stateful(resource: dict[str, Any]) -> bool:
    kind = resource["Type"]
    return (
        "DeletionPolicy" in resource
        or "UpdateReplacePolicy" in resource
        or kind in STATEFUL_TYPES
        or kind.startswith("Custom::")
    )


def normalised(value: Any) -> Any:
    """``value`` with every asset hash replaced by ``<asset hash>``."""
    if isinstance(value, str):
        return ASSET_HASH.sub("<asset hash>", value)
    if isinstance(value, list):
        return [normalised(item) for item in value]
    if isinstance(value, dict):
        return {key: normalised(item) for key, item in value.items()}
    return value


def compared(resource: dict[str, Any]) -> dict[str, Any]:
    """What a deploy acts on, asset hashes normalised."""
    return {key: normalised(resource[key]) for key in COMPARED if key in resource}


def differences(before: Any, after: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, before, after) for each leaf that differs."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            yield from differences(before.get(key, "<absent>"), after.get(key, "<absent>"), f"{path}.{key}")
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (left, right) in enumerate(zip(before, after, strict=True)):
            yield from differences(left, right, f"{path}[{index}]")
    elif before != after:
        yield path, before, after


def report(template: dict[str, Any]) -> list[str]:
    """Every logical ID added or removed, every leaf of a resource that changed (asset hashes too), and every
    change to the template's other sections (outputs, parameters, rules, conditions)."""
    golden, current = golden_resources(), template["Resources"]
    lines = [
        f"removed: {logical_id} ({golden[logical_id]['Type']})" for logical_id in sorted(set(golden) - set(current))
    ]
    lines += [
        f"added: {logical_id} ({current[logical_id]['Type']})" for logical_id in sorted(set(current) - set(golden))
    ]
    for logical_id in sorted(set(golden) & set(current)):
        before, after = golden[logical_id], current[logical_id]
        changed = [
            f"    {path}: {json.dumps(old)} -> {json.dumps(new)}"
            for path, old, new in differences(
                {key: before[key] for key in COMPARED if key in before},
                {key: after[key] for key in COMPARED if key in after},
            )
        ]
        if changed:
            state = "stateful" if is_stateful(before) else "stateless"
            lines += [f"changed: {logical_id} ({before['Type']}, {state})", *changed]
    before_sections = {key: value for key, value in golden_template().items() if key != "Resources"}
    after_sections = {key: value for key, value in template.items() if key != "Resources"}
    lines += [
        f"section {path}: {json.dumps(old)} -> {json.dumps(new)}"
        for path, old, new in differences(before_sections, after_sections)
    ]
    return lines


def main() -> None:
    from tests.support.synth import cdk_json_context, synthesize

    with tempfile.TemporaryDirectory() as outdir:
        synth = synthesize(cdk_json_context(), Path(outdir))
    print("\n".join(report(synth.template)) or "no difference")


if __name__ == "__main__":
    main()
