"""The consumer's signup route, gated on two flags read in-process (the client layer, bound by its stack).

``maintenance_mode`` on: 503 with Retry-After, whatever the signup flag says. ``signup_enabled`` off: 403.
Otherwise the signup goes ahead (201). The flags cost one GetItem per cache age per execution environment;
with DynamoDB unreachable the client fails closed (the declarations' fallbacks: maintenance on, signup off).
"""

from __future__ import annotations

import json
import os
from typing import Any

from singleton_flags import Flags

FLAGS = Flags.from_env(os.environ)  # once per execution environment: its cache lives as long as it is warm


def _answer(status: int, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **headers},
        "body": json.dumps(body),
    }


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if FLAGS.get_bool("maintenance_mode"):
        return _answer(503, {"error": "down for maintenance"}, **{"Retry-After": "60"})
    signup = FLAGS.details("signup_enabled")
    if not signup.value:
        return _answer(403, {"error": "signups are closed", "reason": signup.reason})
    return _answer(201, {"signed_up": True, "flags_version": signup.version})
