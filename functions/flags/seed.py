"""The seed: one UpdateItem that adds every declared flag with its initial value and changes no live value.

The stack's custom resource sends exactly these parameters on create and on every update; the local
runner and the write path (when the singleton is missing) run them through boto3.
"""

from __future__ import annotations

from typing import Any

from flags.codec import encode
from flags.declarations import Declarations
from flags.keys import SINGLETON_SK, VERSION_ATTR, singleton_key


def seed_update_params(
    table_name: str, declarations: Declarations, sort_key: str = SINGLETON_SK, start_version: int = 0
) -> dict[str, Any]:
    """``start_version`` is the version a missing item starts at: 0 on first deploy; the write path's re-seed
    passes the newest audit record's version so the sequence (and the trail's keys) carries on."""
    names: dict[str, str] = {"#version": VERSION_ATTR}
    values: dict[str, Any] = {":start": {"N": str(start_version)}}
    clauses = ["#version = if_not_exists(#version, :start)"]
    for index, spec in enumerate(declarations.values()):
        names[f"#f{index}"] = spec.name
        values[f":f{index}"] = encode(spec, spec.initial)
        clauses.append(f"#f{index} = if_not_exists(#f{index}, :f{index})")
    return {
        "TableName": table_name,
        "Key": singleton_key(sort_key),
        "UpdateExpression": "SET " + ", ".join(clauses),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
