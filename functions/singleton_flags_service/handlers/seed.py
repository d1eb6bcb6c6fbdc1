"""Seed custom resource: CloudFormation runs it on Create and on every Update (an Update happens only when
its properties change: the declarations' fingerprint). Create and Update call ``FlagStore.seed`` (a missing
singleton is restored from the audit trail, newly declared flags are added as a new version, live values
never change; a brand-new table gets version 0 with the declared initials), then record the deployed flags'
protection, a lowering of it as its own audit kind (``approvals.protection``). Delete does nothing: the table
is retained, and so is what it holds.

The table's ARN is a property too, so a replaced table runs an Update: after seeding its own table, the seed marks
the flags item of the table the stage published before (``TableArnParameter``, read before the stack overwrites
it) superseded by this one (``writes.supersede``), so the consumers still bound to it fail closed and say why.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import boto3

from singleton_flags.aws import WRITE_CLIENT_CONFIG, dynamodb_client
from singleton_flags_service.contract import Settings, load_service_declarations
from singleton_flags_service.custom_resource import run, send_response
from singleton_flags_service.stores import RecordProtection, function_store, seed_stage
from singleton_flags_service.writes.supersede import mark_replaced_table

PHYSICAL_ID = "singleton-flags-seed"  # the same on every request: an Update never replaces the resource

SETTINGS = Settings.from_env(os.environ)
CLIENT = dynamodb_client(WRITE_CLIENT_CONFIG)
DECLARATIONS = load_service_declarations()
STORE = function_store(CLIENT, SETTINGS, DECLARATIONS)
SSM = boto3.client("ssm", config=WRITE_CLIENT_CONFIG)


# The deployed protection is recorded after each seed (``seed_stage``); tests replace the recording
PROTECTION: RecordProtection | None = None


def _stack_name(stack_id: str) -> str:
    """arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid> -> <name>."""
    parts = stack_id.split("/")
    return parts[1] if len(parts) >= 3 else stack_id


# Kept back from the remaining time for what follows the seed before the answer: marking a replaced table (SSM and
# DynamoDB calls, each bounded by the write client) and the PUT to CloudFormation
DEADLINE_MARGIN_SECONDS = 20.0


def seed(event: Mapping[str, Any], time_budget: float | None = None) -> tuple[str, dict[str, str]]:
    request_type = event["RequestType"]
    if request_type == "Delete":
        return PHYSICAL_ID, {}
    properties = event.get("ResourceProperties", {})
    fingerprint = properties.get("DeclarationsFingerprint", "?")
    stack = _stack_name(event["StackId"])
    deployed = f"deploy ({request_type.lower()}): flag declarations {fingerprint}"
    result, lowered = seed_stage(  # a lowered protection is recorded as its own kind (in the history), never silently
        STORE, actor=f"cloudformation:{stack}", reason=deployed, time_budget=time_budget, protection=PROTECTION
    )
    data = {"Version": str(result.snapshot.version), "Applied": str(result.applied).lower()}
    if lowered:
        data["ProtectionLowered"] = ",".join(sorted(lowered))
    own_arn, parameter = properties.get("TableArn"), properties.get("TableArnParameter")
    if isinstance(own_arn, str) and isinstance(parameter, str):
        outcome = mark_replaced_table(
            SSM,
            CLIENT,
            parameter_name=parameter,
            own_table_arn=own_arn,
            reason=f"table replaced by stack {stack}'s deploy ({request_type.lower()})",
            now=time.time(),
        )
        data["Superseded"] = outcome.status
    return PHYSICAL_ID, data


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    budget = context.get_remaining_time_in_millis() / 1000 - DEADLINE_MARGIN_SECONDS  # conflicts retried within it
    return run(
        event, context, lambda request: seed(request, budget), default_physical_id=PHYSICAL_ID, send=send_response
    )
