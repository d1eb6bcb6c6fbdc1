"""The approval rules, pure: what a change of some flags needs, who may approve or break glass, and which writes
may touch a protected flag without a request.

A change touching several protected flags needs the strictest of their rules: the most approvals any of them asks,
from principals every one of them accepts (each flag's ``approvers`` patterns, when it lists some), and break-glass
only by a principal every one of them lists. Only versions written by an applied request or by break-glass, and
the automatic safety writes (their own kinds), may change a protected flag: every other kind is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from singleton_flags.declarations import Declarations
from singleton_flags_service.approvals.principals import matches_any
from singleton_flags_service.errors import ApprovalRequired, BreakGlassRefused, NotAnApprover
from singleton_flags_service.vocabulary import UNGATED_KINDS


@dataclass(frozen=True, slots=True)
class Requirement:
    """What a change of ``flags`` needs: the protected ones among them and the strictest of their rules."""

    flags: tuple[str, ...]  # the protected flags it touches, in declaration order
    approvals: int
    approvers: tuple[tuple[str, tuple[str, ...]], ...]  # (flag, its approver patterns) for each flag listing some
    break_glass: tuple[tuple[str, tuple[str, ...]], ...]  # (flag, its break-glass patterns) for every flag

    @property
    def protected(self) -> bool:
        return self.approvals > 0


def requirement(declarations: Declarations, touched: Iterable[str]) -> Requirement:
    names = set(touched)
    flags = tuple(name for name, spec in declarations.items() if name in names and spec.protected)
    protections = [(name, declarations[name].protection) for name in flags]
    return Requirement(
        flags=flags,
        approvals=max((p.approvals for _, p in protections if p is not None), default=0),
        approvers=tuple((name, p.approvers) for name, p in protections if p is not None and p.approvers),
        break_glass=tuple((name, p.break_glass) for name, p in protections if p is not None),
    )


def refuse_direct_write(declarations: Declarations, kind: str, touched: Collection[str]) -> None:
    """Refuse a version of ``kind`` that would change a protected flag without a request's approvals."""
    if kind in UNGATED_KINDS or not touched:
        return
    needed = requirement(declarations, touched)
    if needed.protected:
        raise ApprovalRequired(
            f"{', '.join(repr(name) for name in needed.flags)} "
            f"{'is' if len(needed.flags) == 1 else 'are'} protected: a change needs {needed.approvals} "
            "approval(s) through a change request (POST /flags/change-requests), not a direct write",
            flags=list(needed.flags),
            required_approvals=needed.approvals,
        )


def protection_policy(declarations: Declarations) -> Callable[[str, object, Collection[str]], None]:
    """Protection as a write policy (``singleton_flags_service.writes.store.WritePolicy``): every write of the
    store refuses a version of a gated kind that would change a protected flag (``refuse_direct_write``)."""

    def refuse(kind: str, snapshot: object, diff: Collection[str]) -> None:
        refuse_direct_write(declarations, kind, diff)

    return refuse


def check_approver(needed: Requirement, principal: str, request_id: str) -> None:
    """``principal`` matches the approver patterns of every touched flag that lists some."""
    for flag, patterns in needed.approvers:
        if not matches_any(principal, patterns):
            raise NotAnApprover(
                f"{principal} may not approve changes of {flag!r} (not among its approvers)",
                id=request_id,
                principal=principal,
                flag=flag,
            )


def check_break_glass(needed: Requirement, principal: str) -> None:
    """``principal`` is listed for break-glass by every protected flag the change touches."""
    if not needed.protected:
        return
    for flag, patterns in needed.break_glass:
        if not matches_any(principal, patterns):
            raise BreakGlassRefused(
                f"{principal} may not break glass for {flag!r} (not among its break_glass principals)",
                principal=principal,
                flag=flag,
            )
