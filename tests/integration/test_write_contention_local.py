"""Writes that wait their turn, on DynamoDB Local: 16 writers x 25 unconditional changes, none refused.

Each change is sent once, with a time budget large enough for every conflict it meets: the store retries them
(re-read, back-off, a new transaction) until it commits, so no writer sees a 409, and the trail holds one audit
record per version, contiguous after the seed's. The proof of "nothing lost" is the concurrency proof's
(``tests.integration.test_write_concurrency.assert_nothing_lost``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.workload import CHANGES_PER_WRITER, WRITERS, run_writers
from singleton_flags.declarations import Declarations
from singleton_flags_service.writes.audit import audit_record
from tests.integration.test_write_concurrency import assert_nothing_lost, initial_state
from tests.support.tables import read_trail

LARGE_BUDGET_SECONDS = 600.0  # far more than 400 contended writes take here: only the budget could refuse one


def test_sixteen_writers_with_a_large_budget_all_apply_as_contiguous_versions(
    client_factory: Callable[[], Any], ddb_local: Any, flags_table: str, declarations: Declarations
) -> None:
    # Given the seeded singleton
    initial_version, initial_values = initial_state(ddb_local, flags_table, declarations)

    # When 16 writers each send 25 unconditional changes at the same time, each request with a large budget
    result = run_writers(client_factory, flags_table, declarations=declarations, time_budget=LARGE_BUDGET_SECONDS)

    # Then none was refused: every change applied in its first request, as one of 400 contiguous versions after
    # the seed's, each with exactly one audit record naming its writer
    total = WRITERS * CHANGES_PER_WRITER
    assert (result.conflicts, result.stale, result.failures) == (0, 0, [])
    assert sorted(ack.version for ack in result.acks) == list(range(initial_version + 1, initial_version + total + 1))
    trail = [audit_record(item) for item in read_trail(ddb_local, flags_table)]
    assert sorted(record["version"] for record in trail) == list(
        range(initial_version + 1, initial_version + total + 1)
    )
    assert_nothing_lost(result, ddb_local, flags_table, declarations, initial_version, initial_values)
    assert max(ack.attempts for ack in result.acks) > 1  # the writers did contend: some waited their turn
