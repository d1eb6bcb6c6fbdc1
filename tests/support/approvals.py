"""Protected declarations and principals the change-request tests share."""

from __future__ import annotations

from typing import Any

from singleton_flags.declarations import Declarations, parse_declarations

ACCOUNT = "111122223333"
ALICE = f"arn:aws:iam::{ACCOUNT}:user/alice"
BOB = f"arn:aws:iam::{ACCOUNT}:user/bob"
CAROL = f"arn:aws:iam::{ACCOUNT}:user/carol"
DAVE = f"arn:aws:iam::{ACCOUNT}:user/dave"
OUTSIDER = "arn:aws:iam::999999999999:user/mallory"
ON_CALL = f"arn:aws:iam::{ACCOUNT}:role/OnCall"
APPROVER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/Approver"
TRUSTED_ROLE = f"arn:aws:iam::{ACCOUNT}:role/Named"


def session(role: str, name: str) -> str:
    """The ARN API Gateway reports for a session of ``role`` named ``name``."""
    account = role.split(":")[4]
    return f"arn:aws:sts::{account}:assumed-role/{role.rsplit('/', 1)[-1]}/{name}"


DOCUMENT: dict[str, Any] = {
    "trusted_session_roles": [TRUSTED_ROLE],
    "flags": [
        {
            "name": "kill_switch",
            "type": "bool",
            "initial": False,
            "fallback": False,
            "description": "Stops the application.",
            "protection": {
                "approvals": 2,
                "approvers": [
                    f"arn:aws:iam::{ACCOUNT}:user/*",
                    f"arn:aws:iam::{ACCOUNT}:role/*",
                    f"arn:aws:sts::{ACCOUNT}:assumed-role/Named/*",  # a trusted role's sessions, each a person
                ],
                "break_glass": [ON_CALL],
            },
        },
        {
            "name": "maintenance_mode",
            "type": "bool",
            "initial": False,
            "fallback": True,
            "protection": {"approvals": 1, "break_glass": [ON_CALL]},
        },
        {"name": "rate_limit", "type": "int", "initial": 600, "fallback": 60, "min": 1, "max": 100000},
        {"name": "banner", "type": "string", "initial": "", "fallback": ""},
    ],
}


def protected_declarations() -> Declarations:
    return parse_declarations(DOCUMENT)
