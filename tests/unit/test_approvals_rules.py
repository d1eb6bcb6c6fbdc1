"""The approval rules without a table: principals normalised, protection declared and validated, the strictest
rule of the touched flags, and which kinds of version may change a protected flag."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from singleton_flags.declarations import parse_declarations
from singleton_flags.errors import DeclarationError
from singleton_flags_service.approvals.principals import matches, normalise
from singleton_flags_service.approvals.rules import (
    check_approver,
    check_break_glass,
    protection_policy,
    refuse_direct_write,
    requirement,
)
from singleton_flags_service.errors import ApprovalRequired, BreakGlassRefused, NotAnApprover
from singleton_flags_service.values import moved
from singleton_flags_service.vocabulary import (
    KIND_BREAK_GLASS,
    KIND_CHANGE,
    KIND_CHANGE_REQUEST,
    KIND_GUARD_REVERT,
    KIND_RESTORE,
    KIND_REVERT,
    KIND_SCHEDULED,
    KIND_SEED,
    KIND_WINDOW_END,
    KIND_WINDOW_START,
    UNGATED_KINDS,
)
from tests.support.approvals import (
    ACCOUNT,
    ALICE,
    APPROVER_ROLE,
    DOCUMENT,
    ON_CALL,
    OUTSIDER,
    TRUSTED_ROLE,
    protected_declarations,
    session,
)


def test_two_sessions_of_one_role_are_one_principal_the_role():
    # Given two sessions of one role, named by whoever called AssumeRole
    first, second = session(APPROVER_ROLE, "alice"), session(APPROVER_ROLE, "alice-again")
    # Then both are the role
    assert normalise(first) == normalise(second) == APPROVER_ROLE


def test_a_trusted_role_keeps_its_session_names_apart():
    # Given a role whose trust policy the declarations say enforces the session name
    trusted = protected_declarations().trusted_session_roles
    # Then each session is its own principal
    assert normalise(session(TRUSTED_ROLE, "alice"), trusted) == session(TRUSTED_ROLE, "alice")
    assert normalise(session(APPROVER_ROLE, "alice"), trusted) == APPROVER_ROLE


def test_an_iam_user_is_itself():
    assert normalise(ALICE) == ALICE


def test_patterns_match_with_star_only_and_ignore_case():
    assert matches(ALICE, f"arn:aws:iam::{ACCOUNT}:user/*")
    assert matches(ALICE.upper().replace("ARN:AWS:IAM", "arn:aws:iam"), f"arn:aws:iam::{ACCOUNT}:user/ALICE")
    assert not matches(OUTSIDER, f"arn:aws:iam::{ACCOUNT}:user/*")
    assert not matches(f"arn:aws:iam::{ACCOUNT}:user/a.ice", f"arn:aws:iam::{ACCOUNT}:user/a?ice")  # ? is literal


def test_a_change_touching_several_protected_flags_needs_the_strictest_rule():
    declarations = protected_declarations()
    # When a change touches kill_switch (2 approvals, approvers listed) and maintenance_mode (1, anyone)
    needed = requirement(declarations, ["maintenance_mode", "kill_switch", "rate_limit"])
    # Then it needs 2 approvals from kill_switch's approvers, and break-glass listed by both
    assert needed.flags == ("kill_switch", "maintenance_mode")
    assert needed.approvals == 2
    assert [flag for flag, _ in needed.approvers] == ["kill_switch"]
    with pytest.raises(NotAnApprover):
        check_approver(needed, OUTSIDER, "x")
    check_approver(needed, ALICE, "x")
    check_break_glass(needed, ON_CALL)
    with pytest.raises(BreakGlassRefused):
        check_break_glass(needed, ALICE)


def test_an_unprotected_change_needs_nothing():
    needed = requirement(protected_declarations(), ["rate_limit", "banner"])
    assert not needed.protected
    refuse_direct_write(protected_declarations(), KIND_CHANGE, ["rate_limit"])


@pytest.mark.parametrize("kind", [KIND_CHANGE, KIND_REVERT, KIND_SCHEDULED, "a-kind-added-later"])
def test_every_other_kind_of_version_touching_a_protected_flag_is_refused(kind: str):
    with pytest.raises(ApprovalRequired) as refused:
        refuse_direct_write(protected_declarations(), kind, ["kill_switch", "rate_limit"])
    assert refused.value.details == {"flags": ["kill_switch"], "required_approvals": 2}


@pytest.mark.parametrize(
    "kind",
    [
        KIND_CHANGE_REQUEST,
        KIND_BREAK_GLASS,
        KIND_GUARD_REVERT,
        KIND_WINDOW_START,
        KIND_WINDOW_END,
        KIND_RESTORE,
        KIND_SEED,
    ],
)
def test_approved_and_automatic_safety_writes_are_never_blocked(kind: str):
    assert kind in UNGATED_KINDS
    refuse_direct_write(protected_declarations(), kind, ["kill_switch", "maintenance_mode"])


def test_protection_as_a_store_policy_refuses_what_a_gated_kind_would_change_and_nothing_else():
    refuse = protection_policy(protected_declarations())
    with pytest.raises(ApprovalRequired):
        refuse(KIND_CHANGE, None, {"kill_switch": {"old": False, "new": True}})
    refuse(KIND_CHANGE, None, {"signup_enabled": {"old": True, "new": False}})  # not protected
    refuse(KIND_BREAK_GLASS, None, {"kill_switch": {"old": False, "new": True}})  # not gated


def test_moved_compares_types_too():
    assert moved({"a": 1}, {"a": 1.0}) == ["a"]
    assert moved({"a": True}, {"a": 1}) == ["a"]
    assert moved({"a": 1, "b": "x"}, {"a": 1, "b": "x", "c": 3}) == []


def _with(change: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(DOCUMENT)
    document["flags"][0]["protection"] = change
    return document


@pytest.mark.parametrize(
    ("protection", "said"),
    [
        ({"approvals": -1}, "'approvals' must be an int from 0"),
        ({"approvals": True}, "'approvals' must be an int from 0"),
        ({"approvals": 11}, "'approvals' must be an int from 0"),
        ({"approvals": 1, "approvers": "arn:aws:iam::1:user/x"}, "'approvers' must be a list"),
        ({"approvals": 1, "approvers": ["alice"]}, "is not an IAM principal ARN pattern"),
        ({"approvals": 1, "approvers": [f"arn:aws:iam::{ACCOUNT}:role/team/Approver"]}, "has a role path"),
        ({"approvals": 1, "break_glass": [ON_CALL, ON_CALL]}, "lists a pattern twice"),
        ({"approvals": 1, "quorum": 2}, "unknown field(s) ['quorum']"),
        ({}, "'approvals' must be an int"),
    ],
)
def test_a_broken_protection_never_deploys(protection: dict[str, Any], said: str):
    with pytest.raises(DeclarationError) as broken:
        parse_declarations(_with(protection))
    assert "kill_switch" in str(broken.value)
    assert said in str(broken.value)


def test_trusted_session_roles_must_be_roles():
    document = copy.deepcopy(DOCUMENT)
    document["trusted_session_roles"] = [ALICE]
    with pytest.raises(DeclarationError, match="is not a role ARN"):
        parse_declarations(document)


def test_protection_round_trips_through_the_document():
    declarations = protected_declarations()
    again = parse_declarations(declarations.document())
    assert again["kill_switch"].protection == declarations["kill_switch"].protection
    assert again.trusted_session_roles == declarations.trusted_session_roles
    assert again.protected == frozenset({"kill_switch", "maintenance_mode"})
