"""Hostile input, on moto: every case of ``tests/support/hostile_cases.py`` against the write and read functions'
``handler(event, context)``. No 5xx, the error contract, and a refusal changes nothing (see that module)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.hostile_cases import CASES, READ, Case, check_case, stored_state


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_hostile_request_gets_a_4xx_in_the_contract_and_changes_nothing(
    case: Case, write_api: Any, read_api: Any, ddb: Any, table_name: str, lambda_context: Any
) -> None:
    # Given the seeded flags at version 0, read and written by the functions over one moto table
    def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
        module = read_api.module if function == READ else write_api
        return module.handler(event, lambda_context)

    # When the case's request arrives / Then its answer and the stored state follow the product's rules
    check_case(case, invoke, lambda: stored_state(ddb, table_name, write_api.STORE))
