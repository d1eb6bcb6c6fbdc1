"""The in-process OpenFeature provider and OFREP (the read function) answer alike: the same value, reason, variant
and flag metadata, key for key, for every flag type, for stored values, a fallen-back flag and the fallbacks.

OpenFeature's flag metadata is flat (boolean, string or number values), with well-known keys such as ``flagSetId``
and ``version`` (https://openfeature.dev/specification/appendix-d/, the spec's "Flag metadata" section); a key
without a value is left out, never null.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from openfeature import api

from singleton_flags import Flags
from singleton_flags.openfeature import register
from tests.support.unit import ReadApi, body_of

EVALUATE = {
    "bool": "get_boolean_details",
    "int": "get_integer_details",
    "float": "get_float_details",
    "string": "get_string_details",
}
CALL_SITE_DEFAULTS = {"bool": False, "int": -1, "float": -1.0, "string": "call-site"}


@pytest.fixture
def in_process(read_api: ReadApi) -> Iterator[Any]:
    """An OpenFeature client over the embedded client, on the read function's table, declarations and clock."""
    api.clear_providers()
    flags = Flags(
        table_name=read_api.provider._table_name,
        declarations=read_api.module.DECLARATIONS,
        client=read_api.provider._client,
        clock=read_api.clock,
        max_age=0,
    )
    register(flags)
    yield api.get_client()
    api.clear_providers()


def answers(read_api: ReadApi, client: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each declared flag as OFREP answers it and as the in-process provider does, in OFREP's shape."""
    ofrep = {flag["key"]: flag for flag in body_of(read_api("POST", "/ofrep/v1/evaluate/flags"))["flags"]}
    pairs = []
    for key, spec in read_api.module.DECLARATIONS.items():
        details = getattr(client, EVALUATE[spec.type])(key, CALL_SITE_DEFAULTS[spec.type])
        assert details.error_code is None, details.error_message
        mine = {
            "key": key,
            "value": details.value,
            "reason": details.reason,
            "variant": details.variant,
            "metadata": dict(details.flag_metadata),
        }
        pairs.append((ofrep[key], mine))
    return pairs


def comparable(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without what depends on when it was read (STATIC or CACHED, the fetch time's value)."""
    metadata = {key: value for key, value in answer["metadata"].items() if key != "fetchedAt"}
    reason = "READ" if answer["reason"] in ("STATIC", "CACHED") else answer["reason"]
    return {**answer, "reason": reason, "metadata": metadata, "hasFetchedAt": "fetchedAt" in answer["metadata"]}


class TestBothProvidersAnswerAlike:
    def test_stored_values_of_every_type(self, read_api: ReadApi, in_process: Any, put_flags: Any) -> None:
        # Given version 6 with a value of each type changed
        put_flags(version=6, signup_enabled=False, api_rate_limit_per_minute=42, search_ranking="hybrid")
        # When every flag is evaluated through both
        pairs = answers(read_api, in_process)
        # Then both answer the same, key for key, metadata included
        assert {spec.type for spec in read_api.module.DECLARATIONS.values()} == set(EVALUATE)
        for ofrep, mine in pairs:
            assert comparable(mine) == comparable(ofrep)
            assert (mine["variant"], mine["metadata"]["version"], mine["metadata"]["flagSetId"]) == (
                "stored",
                6,
                "singleton-flags",
            )
            assert set(mine["metadata"]) == {"flagSetId", "version", "fetchedAt", "type", "contextIgnored"}

    def test_a_flag_unusable_in_the_item(self, read_api: ReadApi, in_process: Any, put_flags: Any) -> None:
        # Given version 5 whose search_ranking is not one of its declared choices
        put_flags(version=5, search_ranking={"S": "no-such-ranking"})
        # When evaluated through both
        for ofrep, mine in answers(read_api, in_process):
            # Then both serve that flag's fallback, reason DEFAULT, variant fallback; the others as stored
            assert comparable(mine) == comparable(ofrep)
        ofrep_ranking = next(o for o, _ in answers(read_api, in_process) if o["key"] == "search_ranking")
        assert (ofrep_ranking["reason"], ofrep_ranking["variant"]) == ("DEFAULT", "fallback")

    def test_the_declared_fallbacks_without_the_item(self, read_api: ReadApi, in_process: Any) -> None:
        # Given no flags item in the table
        # When every flag is evaluated through both
        for ofrep, mine in answers(read_api, in_process):
            # Then the same fallbacks, DEFAULT, variant fallback, and no version key (absent, never null)
            assert comparable(mine) == comparable(ofrep)
            assert (mine["reason"], mine["variant"]) == ("DEFAULT", "fallback")
            assert "version" not in mine["metadata"]
            assert None not in mine["metadata"].values()
