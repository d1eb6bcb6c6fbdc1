"""Hostile input, on DynamoDB Local: the case table of ``tests/support/hostile_cases.py`` against the write and read
functions' ``handler(event, context)``, with AWS's engine judging every write the API lets through."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from local.functions import load_module
from singleton_flags.aws import WRITE_CLIENT_CONFIG, dynamodb_client
from singleton_flags.provider import SingletonProvider
from singleton_flags.reader import FlagReader
from tests.support.events import invocation_context
from tests.support.hostile_cases import CASES, READ, Case, check_case, stored_state


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_hostile_request_gets_a_4xx_in_the_contract_and_changes_nothing(
    case: Case, write_function: ModuleType, flags_table: str, ddb_local: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the seeded flags at version 0 on DynamoDB Local, behind the write and the read function
    read_module = load_module("singleton_flags_service.handlers.read_api")
    write_module, store = write_function, write_function.STORE

    client = dynamodb_client(WRITE_CLIENT_CONFIG)
    provider = SingletonProvider(client=client, table_name=flags_table, declarations=read_module.DECLARATIONS)
    monkeypatch.setattr(read_module, "READER", FlagReader(provider, read_module.DECLARATIONS))
    monkeypatch.setattr(read_module, "PROVIDER", read_module.READER.provider)

    def invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
        return (read_module if function == READ else write_module).handler(
            event, invocation_context("singleton-flags-hostile")
        )

    # When the case's request arrives / Then its answer and the stored state follow the product's rules
    check_case(case, invoke, lambda: stored_state(ddb_local, flags_table, store))
