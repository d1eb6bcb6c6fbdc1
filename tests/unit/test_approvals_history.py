"""A deploy that lowers protection is visible where operators look: GET /flags/history returns its
``protection_lowered`` record among the versions, right after the version it was deployed at, on exactly one page,
with no version of its own (moto)."""

from __future__ import annotations

import copy
from typing import Any

from singleton_flags.declarations import parse_declarations
from singleton_flags_service.approvals.protection import record_protection
from singleton_flags_service.vocabulary import KIND_PROTECTION_LOWERED
from tests.support.approvals import DOCUMENT
from tests.support.unit import WriteApi, body_of
from tests.unit import test_approvals_routes as routes

approvals_api = routes.approvals_api  # the write function with protected declarations (a fixture)


def deploy(api: WriteApi, document: dict[str, Any], version: int, now: float) -> dict[str, Any]:
    return record_protection(
        api.client,
        api.table,
        parse_declarations(document),
        actor="cloudformation:stack",
        reason="deploy (update): flag declarations abc",
        now=now,
        retention_seconds=86400,
        version=version,
    )


def kinds(records: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(record["version"], record["kind"]) for record in records]


def test_a_lowered_protection_is_in_the_history_after_the_version_it_was_deployed_at(approvals_api: WriteApi):
    api = approvals_api
    # Given the protection deployed, a version written, then a deploy lowering kill_switch to 1 approval
    assert deploy(api, DOCUMENT, 0, 1.0) == {}
    assert api.patch({"rate_limit": 7})["statusCode"] == 200
    lowered = copy.deepcopy(DOCUMENT)
    lowered["flags"][0]["protection"]["approvals"] = 1
    assert list(deploy(api, lowered, 1, 2.0)) == ["kill_switch"]
    # And another version since
    assert api.patch({"rate_limit": 8})["statusCode"] == 200
    # When the history is read
    records = body_of(api.history())["records"]
    # Then the lowering is there, between the versions it came between, naming the deploy and both protections
    assert kinds(records)[:3] == [(2, "change"), (1, KIND_PROTECTION_LOWERED), (1, "change")]
    record = records[1]
    assert record["actor"] == "cloudformation:stack"
    assert record["changes"]["kill_switch"]["old"]["approvals"] == 2
    assert record["changes"]["kill_switch"]["new"]["approvals"] == 1
    # And paging one version at a time, it is on exactly one page, with the version it follows
    seen: list[tuple[int, str]] = []
    query: dict[str, str] = {"limit": "1"}
    while True:
        page = body_of(api.history(**query))
        seen += kinds(page["records"])
        if not page["next_cursor"]:
            break
        query = {"limit": "1", "cursor": page["next_cursor"]}
    assert seen == kinds(records)
    assert seen.count((1, KIND_PROTECTION_LOWERED)) == 1
