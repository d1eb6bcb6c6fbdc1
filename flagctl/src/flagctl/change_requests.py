"""Change requests as flagctl prints them: one request (its diff against the values at its base, its approvals,
its state), a list of them, and what a decision did.

A change to a protected flag is asked for (``flagctl request create``), approved by others (``approve``: never
the author; the last required approval applies it), or rejected, withdrawn, or left to expire; a break-glass
principal may apply one at once, alone (``break-glass``). Every text from the answer goes through
``flagctl.text`` (no raw control character reaches the terminal).
"""

from __future__ import annotations

from typing import Any

from flagctl.text import safe, shown, table

REQUEST_STATES = ("pending", "applied", "scheduled", "rejected", "withdrawn", "expired", "stale")
STATE_TEXT = {
    "pending": "pending: waiting for approvals",
    "applied": "applied",
    "scheduled": "scheduled: approved; its scheduled change applies it at its time",
    "rejected": "rejected: it can no longer be approved",
    "withdrawn": "withdrawn by its author",
    "expired": "expired before enough approvals",
    "stale": "stale: a flag it binds moved since its base, so it can no longer apply",
}
KIND_TEXT = {
    "change": "change",
    "revert": "revert",
    "break_glass": "break glass (applied at once, alone; it raised an alarm)",
}


def approvals_text(request: dict[str, Any]) -> str:
    """``1 of 2`` and, while pending, how many more it needs."""
    got, needed = len(request.get("approvals") or []), request.get("required_approvals")
    text = f"{got} of {needed}"
    if request.get("state") == "pending" and isinstance(needed, int) and needed > got:
        text += f" (needs {needed - got} more)"
    return text


def changes_text(request: dict[str, Any]) -> str:
    """What the request asks for, on one line: ``name = value; ...`` or ``revert to version N``."""
    if request.get("revert_to") is not None:
        return f"revert to version {request['revert_to']}"
    return "; ".join(f"{name} = {shown(value)}" for name, value in (request.get("flags") or {}).items())


def _diff(request: dict[str, Any]) -> str:
    """Each flag the request binds: its value at the base version, and the value asked for ("unchanged" for a
    protected flag it binds without changing it). A revert's target values are the API's to compute: its rows
    show the values at the base only."""
    base = request.get("base_values") or {}
    protected = set(request.get("protected_flags") or [])
    at_base = f"AT BASE (VERSION {request.get('base_version')})"
    flags = request.get("flags")
    if isinstance(flags, dict):
        names = [*flags, *(name for name in base if name not in flags)]
        rows = [
            (
                name + (" (protected)" if name in protected else ""),
                shown(base.get(name)),
                shown(flags[name]) if name in flags else "(unchanged)",
            )
            for name in names
        ]
        return table(("FLAG", at_base, "REQUESTED"), rows)
    base_rows = [(name + (" (protected)" if name in protected else ""), shown(value)) for name, value in base.items()]
    return table(("FLAG", at_base), base_rows) if base_rows else ""


def describe(request: dict[str, Any]) -> str:
    """One change request, for people: its facts, then its diff."""
    state = request["state"]
    lines = [
        safe(f"change request {request['id']}"),
        safe(f"state      {STATE_TEXT.get(state, state)}"),
        safe(f"kind       {KIND_TEXT.get(str(request.get('kind')), request.get('kind'))}"),
        safe(f"asks for   {changes_text(request)}"),
        safe(f"author     {request.get('author')}"),
        safe(f"reason     {request.get('reason')}"),
        safe(f"created    {request.get('created_at')} · expires {request.get('expires_at')}"),
        safe(f"protected  {', '.join(request.get('protected_flags') or []) or '-'}"),
        safe(f"approvals  {approvals_text(request)}"),
    ]
    lines += [safe(f"  approved by {a.get('principal')} at {a.get('at')}") for a in request.get("approvals") or []]
    decided = request.get("decided")
    if isinstance(decided, dict):
        lines.append(safe(f"decided    by {decided.get('by')} at {decided.get('at')}: {decided.get('reason') or '-'}"))
    if request.get("at") is not None:
        scheduled = f" · scheduled as {request['schedule']}" if request.get("schedule") else ""
        lines.append(safe(f"at         {request['at']}{scheduled}"))
    if request.get("applied_version") is not None:
        lines.append(safe(f"applied    as version {request['applied_version']}"))
    diff = _diff(request)
    return "\n".join([*lines, *([diff] if diff else [])])


def render_request(body: dict[str, Any]) -> str:
    """The answer of ``create``, ``break-glass`` and ``show``: ``{"change_request": {...}}``."""
    return describe(body["change_request"])


def render_decision(decision: str, body: dict[str, Any]) -> str:
    """What ``approve``, ``reject`` or ``withdraw`` did, then the request as it now stands."""
    request = body["change_request"]
    if decision == "approve" and body.get("applied"):
        head = f"approved: the change is applied, now at version {body.get('version')}"
    elif decision == "approve" and request.get("state") == "scheduled":
        head = f"approved: the change is scheduled for {request.get('at')} ({request.get('schedule')})"
    elif decision == "approve":
        head = f"approved: {approvals_text(request)} approvals, not applied yet"
    else:
        head = f"{'rejected' if decision == 'reject' else 'withdrawn'}: the request is now {request['state']}"
    return safe(head) + "\n" + describe(request)


_LIST_HEADERS = ("ID", "STATE", "KIND", "APPROVALS", "AUTHOR", "EXPIRES", "ASKS FOR", "REASON")


def render_requests(body: dict[str, Any]) -> str:
    rows = [
        (
            request["id"],
            request["state"],
            request.get("kind"),
            approvals_text(request),
            request.get("author"),
            request.get("expires_at"),
            changes_text(request),
            request.get("reason"),
        )
        for request in body["change_requests"]
    ]
    text = table(_LIST_HEADERS, rows) if rows else "no change requests"
    if body.get("next_cursor"):
        text += f"\nolder: --cursor {safe(body['next_cursor'])}"
    return text
