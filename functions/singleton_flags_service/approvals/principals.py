"""Who is calling, normalised before any approval rule applies.

The caller is API Gateway's ``requestContext.identity.userArn`` (SigV4-signed, so IAM vouches for it). An
assumed-role session's ARN is ``arn:aws:sts::<account>:assumed-role/<Role>/<session>``, and whoever calls
AssumeRole picks the session name: one person could assume a role twice under two names. So a session counts as its
role, ``arn:aws:iam::<account>:role/<Role>``, unless the declarations list the role in ``trusted_session_roles``
(its trust policy makes the session name the person: ``sts:RoleSessionName`` or ``sts:SourceIdentity`` enforced).
An IAM user's ARN is already one person. Comparisons ignore case: IAM names are unique regardless of case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_ASSUMED_ROLE = re.compile(r"^arn:(aws[a-z-]*):sts::([0-9]{12}):assumed-role/([^/]+)/(.+)$")


def role_of(principal: str) -> str | None:
    """The IAM role ARN of an assumed-role session's ARN (None: not a session)."""
    match = _ASSUMED_ROLE.match(principal)
    if match is None:
        return None
    partition, account, role, _session = match.groups()
    return f"arn:{partition}:iam::{account}:role/{role}"


def matches(principal: str, pattern: str) -> bool:
    """``pattern`` (an ARN with ``*`` wildcards, nothing else special) names ``principal``, case aside."""
    expression = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(expression, principal, flags=re.IGNORECASE) is not None


def matches_any(principal: str, patterns: Iterable[str]) -> bool:
    return any(matches(principal, pattern) for pattern in patterns)


def normalise(caller: str, trusted_session_roles: Iterable[str] = ()) -> str:
    """The principal the approval rules compare: a session as its role, unless its role is trusted to name the
    person in its session name."""
    role = role_of(caller)
    if role is None or matches_any(role, trusted_session_roles):
        return caller
    return role


def same(first: str, second: str) -> bool:
    return first.casefold() == second.casefold()
