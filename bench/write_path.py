"""Write-path bench: 16 concurrent writers x 25 changes each on DynamoDB Local, without and with If-Match.

Prints writes per second, p50/p99 attempts per acknowledged write, and the 409s (WriteConflict) and 412s
(stale If-Match) the writers met. The workload is ``bench.workload.run_writers``, the one the
integration concurrency proof checks for lost writes (its docstring says how attempts are counted).

Run: ``.venv/bin/python -c "import bench.write_path as b; b.main()"`` (or ``python -m bench``).
"""

from __future__ import annotations

import math

from bench.workload import CHANGES_PER_WRITER, WRITERS, RunResult, run_writers, seed_table
from singleton_flags_service.contract import load_service_declarations


def percentile(values: list[int], share: float) -> int:
    """Nearest-rank percentile (``share`` in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _report(label: str, result: RunResult) -> None:
    attempts = [ack.attempts for ack in result.acks] or [0]
    print(
        f"{label}: {len(result.acks)} writes in {result.seconds:.2f} s = {result.writes_per_second:.1f} writes/s; "
        f"attempts per write p50 {percentile(attempts, 0.50)} p99 {percentile(attempts, 0.99)} "
        f"max {max(attempts)}; 409s {result.conflicts}; 412s {result.stale}"
        + (f"; FAILED writers {len(result.failures)}: {result.failures[0]}" if result.failures else "")
    )


def main() -> None:
    from local.dynamodb_local import create_table, local_client, running_dynamodb_local
    from singleton_flags_service.observability import logger

    logger.setLevel("WARNING")  # one "flags changed" line per write would drown the figures
    declarations = load_service_declarations()
    print(f"write path: {WRITERS} writers x {CHANGES_PER_WRITER} changes on DynamoDB Local (in memory, loopback)")
    with running_dynamodb_local() as endpoint:
        admin = local_client(endpoint)
        for label, if_match in (("no If-Match (server-side retries)", False), ("If-Match (client re-reads)", True)):
            table = f"bench-write-{'if-match' if if_match else 'retry'}"
            create_table(admin, table)
            seed_table(admin, table, declarations)
            result = run_writers(
                lambda: local_client(endpoint, timeout=10), table, declarations=declarations, if_match=if_match
            )
            _report(label, result)


if __name__ == "__main__":
    main()
