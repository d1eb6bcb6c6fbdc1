"""Write-path bench: 16 concurrent writers x 25 changes each on DynamoDB Local, without and with If-Match.

Prints writes per second, p50/p99 latency and attempts per acknowledged write, and the refusals the writers met:
409s (WriteConflict: an unconditional write whose time budget was spent) and 412s (stale If-Match). Each request
gets the deployed write function's budget (its timeout less the answering margin) and the write client's worst
call, as ``FlagStore.for_function`` does. The workload is ``bench.workload.run_writers``, the one the integration
concurrency proof checks for lost writes (its docstring says how attempts and latency are counted).

Run: ``.venv/bin/python -m bench write_path``.
"""

from __future__ import annotations

import math

from bench.workload import CHANGES_PER_WRITER, WRITERS, RunResult, run_writers, seed_table
from singleton_flags.aws import WRITE_CLIENT_CONFIG, worst_call_seconds
from singleton_flags_infra.constants import TIMEOUT_SECONDS
from singleton_flags_service.contract import WRITE_FUNCTION, load_service_declarations

# The write function's budget for one request: its timeout less the handler's margin to answer (DEADLINE_MARGIN_SECONDS
# in singleton_flags_service.handlers.write_api, whose module scope needs a deployment to import)
FUNCTION_BUDGET_SECONDS = TIMEOUT_SECONDS[WRITE_FUNCTION] - 1.0


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (``share`` in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _report(label: str, result: RunResult) -> None:
    attempts = [float(ack.attempts) for ack in result.acks] or [0.0]
    latency_ms = [ack.seconds * 1000 for ack in result.acks] or [0.0]
    print(
        f"{label}: {len(result.acks)} writes in {result.seconds:.2f} s = {result.writes_per_second:.1f} writes/s; "
        f"latency p50 {percentile(latency_ms, 0.50):.0f} ms p99 {percentile(latency_ms, 0.99):.0f} ms "
        f"max {max(latency_ms):.0f} ms; attempts per write p50 {percentile(attempts, 0.50):.0f} "
        f"p99 {percentile(attempts, 0.99):.0f} max {max(attempts):.0f}; refused: 409s {result.conflicts}, "
        f"412s {result.stale}"
        + (f"; FAILED writers {len(result.failures)}: {result.failures[0]}" if result.failures else "")
    )


def main() -> None:
    from local.dynamodb_local import create_table, local_client, running_dynamodb_local
    from singleton_flags_service.observability import logger

    logger.setLevel("ERROR")  # one "flags changed" line per write would drown the figures
    declarations = load_service_declarations()
    call_seconds = worst_call_seconds(WRITE_CLIENT_CONFIG)
    print(
        f"write path: {WRITERS} writers x {CHANGES_PER_WRITER} changes on DynamoDB Local (in memory, loopback); "
        f"each request's budget {FUNCTION_BUDGET_SECONDS:g} s, a call's worst case {call_seconds:g} s"
    )
    with running_dynamodb_local() as endpoint:
        admin = local_client(endpoint)
        for label, if_match in (("no If-Match (server-side retries)", False), ("If-Match (client re-reads)", True)):
            table = f"bench-write-{'if-match' if if_match else 'retry'}"
            create_table(admin, table)
            seed_table(admin, table, declarations)
            result = run_writers(
                lambda: local_client(endpoint, timeout=10),
                table,
                declarations=declarations,
                if_match=if_match,
                store_options={"call_seconds": call_seconds},
                time_budget=FUNCTION_BUDGET_SECONDS,
            )
            _report(label, result)


if __name__ == "__main__":
    main()
