"""Every path is written once, in the route table: each API function registers a view for each of its routes,
under the table's method and path, and for nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from local.functions import load_module
from singleton_flags.declarations import RESERVED_FLAG_NAMES
from singleton_flags_service.api.routes import (
    GET_FLAG,
    ROUTES,
    STATIC_FLAG_CHILDREN,
    Views,
    match_route,
    powertools_rule,
)
from singleton_flags_service.contract import HANDLERS, READ_FUNCTION, WRITE_FUNCTION


def registered_routes(app: Any) -> set[tuple[str, str]]:
    """(METHOD, path template) of every route a Powertools resolver serves, routers included."""
    return {(route.method, route.openapi_path) for route in (*app._static_routes, *app._dynamic_routes)}


@pytest.mark.parametrize("function", [READ_FUNCTION, WRITE_FUNCTION])
def test_a_function_registers_exactly_its_routes_of_the_table(function: str) -> None:
    # Given the function as Lambda loads it
    app = load_module(HANDLERS[function].rpartition(".")[0]).app
    # Then it serves every route the table gives it, and no route the table lacks
    assert registered_routes(app) == {(route.method, route.path) for route in ROUTES if route.function == function}


def test_the_first_static_segment_below_flags_of_every_route_is_a_name_no_flag_may_take() -> None:
    # Given the routes below /flags, a nested one (/flags/migration/finalise) among them
    # Then each one's first segment is a static child, the nested one's too, and the declarations refuse it as a name
    assert {"history", "change-requests", "migration"} <= STATIC_FLAG_CHILDREN
    assert not any("/" in child or "{" in child for child in STATIC_FLAG_CHILDREN)
    assert STATIC_FLAG_CHILDREN <= RESERVED_FLAG_NAMES
    # And GET /flags/migration is the migration's route, never the flag of that name
    assert match_route(ROUTES, "GET", "/flags/migration").route.path == "/flags/migration"  # type: ignore[union-attr]


def test_a_template_becomes_powertools_rule() -> None:
    assert powertools_rule("/flags/{name}") == "/flags/<name>"
    assert powertools_rule("/flags/schedules/{id}") == "/flags/schedules/<id>"
    assert powertools_rule("/flags") == "/flags"


class FakeResolver:
    def __init__(self) -> None:
        self.rules: list[tuple[str, str, dict[str, Any]]] = []

    def route(self, rule: str, method: str, **options: Any) -> Any:
        self.rules.append((rule, method, options))
        return lambda view: view


def test_a_view_is_registered_under_its_route_and_answers_a_match_the_resolver_missed() -> None:
    # Given a view registered for GET /flags/{name}
    resolver = FakeResolver()
    views = Views(resolver, READ_FUNCTION)

    @views(GET_FLAG)
    def get_flag(name: str) -> str:
        return f"flag {name}"

    # Then the resolver got the table's method and path, in its own form
    assert resolver.rules == [("/flags/<name>", "GET", {})]
    # and a path the table matches (a raw " in the name) is answered by that view, with its parameter
    match = match_route(ROUTES, "GET", '/flags/a"b')
    assert not isinstance(match, list)
    view = views.view(match)
    assert view is not None and view() == 'flag a"b'


def test_a_view_documents_its_success_answer_under_the_routes_status() -> None:
    resolver = FakeResolver()
    views = Views(resolver, WRITE_FUNCTION)
    create = next(route for route in ROUTES if route.success == 201)

    views(create, answer=dict, described="Pending")(lambda: None)

    ((_, _, options),) = resolver.rules
    assert options["responses"] == {201: {"description": "Pending", "content": {"application/json": {"model": dict}}}}


def test_a_view_for_another_functions_route_is_refused() -> None:
    with pytest.raises(ValueError, match="read function's route"):
        Views(FakeResolver(), WRITE_FUNCTION)(GET_FLAG)
