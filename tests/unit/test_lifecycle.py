"""A flag's lifecycle in the declarations: owner, state (active, deprecated with its date, removed), note and
permanent (operational controls by default); a deprecated flag still reads and warns once per environment; a flag
removed from the declarations stays in the item, and the seed says so."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from singleton_flags import Flags
from singleton_flags.declarations import Declarations, parse_declarations
from singleton_flags.keys import singleton_key
from singleton_flags_service.contract import DECLARATIONS_FILE, load_service_declarations
from singleton_flags_service.errors import DeclarationError
from singleton_flags_service.writes.store import FlagStore
from tests.support.unit import Output, warnings_in


def declared(**fields: Any) -> Any:
    flag = {"name": "beta_banner", "type": "bool", "initial": False, "fallback": False, **fields}
    return parse_declarations({"flags": [flag]})["beta_banner"]


class TestDeclaredLifecycle:
    def test_a_flag_is_active_with_no_owner_unless_declared(self) -> None:
        spec = declared()
        assert (spec.state, spec.owner, spec.note, spec.deprecated_on) == ("active", "", "", None)
        assert spec.as_doc() == declared().as_doc() and "state" not in spec.as_doc()  # the file's fields only

    def test_a_deprecated_flag_carries_its_date_and_note_and_round_trips(self) -> None:
        spec = declared(owner="growth", state="deprecated", deprecated_on="2026-11-30", note="use checkout_v2")
        assert (spec.state, spec.deprecated_on, spec.note, spec.owner) == (
            "deprecated",
            "2026-11-30",
            "use checkout_v2",
            "growth",
        )
        again = parse_declarations({"flags": [{"name": spec.name, **spec.as_doc()}]})["beta_banner"]
        assert again == spec

    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            ({"state": "retired"}, "'state' must be one of ['active', 'deprecated', 'removed']"),
            ({"state": "deprecated"}, "a deprecated flag needs 'deprecated_on'"),
            ({"state": "deprecated", "deprecated_on": "2026-02-30"}, "'deprecated_on' must be a date YYYY-MM-DD"),
            ({"state": "deprecated", "deprecated_on": "30/11/2026"}, "'deprecated_on' must be a date YYYY-MM-DD"),
            ({"deprecated_on": "2026-11-30"}, "'deprecated_on' is only for a deprecated or removed flag"),
            ({"owner": 7}, "'owner' must be a string"),
            ({"note": "x" * 1025}, "'note' must be a string of at most 1024 characters"),
            ({"permanent": "yes"}, "'permanent' must be true or false"),
        ],
    )
    def test_a_bad_lifecycle_field_fails_at_load_naming_the_flag(self, fields: dict[str, Any], message: str) -> None:
        with pytest.raises(DeclarationError, match="flag 'beta_banner'") as raised:
            declared(**fields)
        assert message in str(raised.value)

    def test_operational_flags_are_permanent_by_default_and_release_toggles_are_not(self) -> None:
        # Given the shipped declarations
        shipped = load_service_declarations()
        permanent = {name for name, spec in shipped.items() if spec.is_permanent}
        # Then maintenance, the kill switch and the tunables with a conservative fallback are permanent; the
        # release toggle (off, falling back to off) and the strategy whose fallback is its initial are not
        assert permanent == {"maintenance_mode", "signup_enabled", "api_rate_limit_per_minute", "trace_sample_rate"}
        # And a declaration overrides the rule, except for the maintenance windows' flag
        assert declared(permanent=True).is_permanent is True
        assert declared(initial=True, permanent=False).is_permanent is False
        with pytest.raises(DeclarationError, match="always permanent"):
            parse_declarations(
                {
                    "flags": [
                        {
                            "name": "maintenance_mode",
                            "type": "bool",
                            "initial": False,
                            "fallback": True,
                            "permanent": False,
                        }
                    ]
                }
            )

    def test_the_declarations_route_serves_each_lifecycle_resolved(self) -> None:
        document = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
        document["flags"][2].update(state="deprecated", deprecated_on="2026-11-30", note="gone soon")
        served = {doc["name"]: doc for doc in parse_declarations(document).as_documents()}
        assert served["ai_search_enabled"]["state"] == "deprecated"
        assert served["ai_search_enabled"]["deprecated_on"] == "2026-11-30"
        assert (served["maintenance_mode"]["state"], served["maintenance_mode"]["permanent"]) == ("active", True)
        assert served["search_ranking"]["permanent"] is False and "owner" not in served["search_ranking"]


def deprecating(name: str, note: str = "") -> Declarations:
    document = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
    for flag in document["flags"]:
        if flag["name"] == name:
            flag.update(state="deprecated", deprecated_on="2026-11-30", note=note)
    return parse_declarations(document)


def test_a_deprecated_flag_still_reads_and_warns_once_per_environment(
    ddb: Any, table_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a seeded table and an embedded client whose declarations deprecate ai_search_enabled
    declarations = deprecating("ai_search_enabled", note="the search is always AI-backed now")
    FlagStore(ddb, table_name, declarations).seed(actor="deploy", reason="seed")
    flags = Flags(table_name=table_name, declarations=declarations, client=ddb, max_age=0)
    # When it reads the flag three times (three fetches: max_age 0)
    with caplog.at_level(logging.WARNING, logger="singleton_flags"):
        values = [flags.get("ai_search_enabled") for _ in range(3)]
    # Then the value is served every time, and one warning names the flag, its date and its note
    assert values == [False, False, False]
    told = [record.getMessage() for record in caplog.records if "deprecated" in record.getMessage()]
    assert told == [
        "flag 'ai_search_enabled' is deprecated since 2026-11-30: the search is always AI-backed now; "
        "it is still served"
    ]


def test_the_seed_names_each_attribute_no_declaration_names_and_leaves_it(
    ddb: Any, table_name: str, declarations: Declarations, stdout: Output
) -> None:
    # Given a live item changed since (maintenance on, held by a window until a deadline), seeded again: nothing said
    store = FlagStore(ddb, table_name, declarations)
    store.seed(actor="deploy", reason="first")
    store.change({"signup_enabled": False}, actor="op", reason="live change")
    ddb.update_item(
        TableName=table_name,
        Key=singleton_key(),
        UpdateExpression="SET maintenance_mode = :on, maintenance_owner = :w, maintenance_deadline = :d",
        ExpressionAttributeValues={":on": {"BOOL": True}, ":w": {"S": "weekly"}, ":d": {"N": "4102444800"}},
    )
    store.seed(actor="deploy", reason="again")
    assert warnings_in(stdout.records()) == []
    # And then a deploy whose declarations dropped ai_search_enabled
    document = json.loads(DECLARATIONS_FILE.read_text(encoding="utf-8"))
    document["flags"] = [flag for flag in document["flags"] if flag["name"] != "ai_search_enabled"]
    shrunk = parse_declarations(document)
    # When the seed runs
    result = FlagStore(ddb, table_name, shrunk).seed(actor="deploy", reason="second")
    # Then it writes nothing, leaves the attribute, and says so once, naming it
    assert result.applied is False
    item = ddb.get_item(TableName=table_name, Key=singleton_key(), ConsistentRead=True)["Item"]
    assert item["ai_search_enabled"] == {"BOOL": False}
    (warning,) = warnings_in(stdout.records())
    assert "'ai_search_enabled', which no declaration names: left in the item" in warning["message"]
    assert warning["attribute"] == "ai_search_enabled"
