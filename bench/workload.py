"""The write-path workload: 16 concurrent writers x 25 changes each, without or with If-Match.

``run_writers`` is the write-path bench's workload (``python -m bench write_path`` measures it), and the one the
integration tier's concurrency proof checks for lost writes.

Attempts per write:
- without If-Match: every TransactWriteItems the store made for that write, including the ones spent in
  requests that ended in 409 (the writer, like an HTTP client honouring Retry-After, sends it again);
- with If-Match: read-then-conditional-write rounds until one was accepted (a 412 costs one round).

Latency per write: from its first request to its acknowledgement, every 409 or 412 and its pause included (what
the writer waited).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from singleton_flags.declarations import Declarations
from singleton_flags_service.contract import load_service_declarations
from singleton_flags_service.errors import PreconditionFailed, WriteConflict
from singleton_flags_service.writes.store import FlagStore

WRITERS = 16
CHANGES_PER_WRITER = 25
MAX_REQUESTS_PER_WRITE = 50  # 409s a writer tolerates for one change before it gives up
MAX_IF_MATCH_ROUNDS = 400  # 412s likewise (each costs one round trip; 16 writers race for every version)
RATE_LIMIT_FLAG = "api_rate_limit_per_minute"
RANKINGS = ("classic", "semantic", "hybrid")


def writer_values(writer: int, change: int) -> dict[str, Any]:
    """The values writer ``writer`` sets in its ``change``-th write: the rate limit is unique per (writer,
    change), so every write changes something; a quarter of the writers also touch another flag each."""
    values: dict[str, Any] = {RATE_LIMIT_FLAG: 1000 + writer * 100 + change}
    if writer % 4 == 0:
        values["trace_sample_rate"] = (writer * CHANGES_PER_WRITER + change) / 1000
    elif writer % 4 == 1:
        values["signup_enabled"] = change % 2 == 0
    elif writer % 4 == 2:
        values["search_ranking"] = RANKINGS[(writer + change) % len(RANKINGS)]
    return values


@dataclass(frozen=True, slots=True)
class Ack:
    """A write the store acknowledged: the version it became and what it asked for / changed."""

    writer: int
    change: int
    version: int
    values: dict[str, Any]
    changed: dict[str, dict[str, Any]]
    attempts: int
    seconds: float = 0.0  # from the first request to the acknowledgement


@dataclass
class RunResult:
    acks: list[Ack] = field(default_factory=list)
    conflicts: int = 0  # WriteConflict (HTTP 409) answers
    stale: int = 0  # PreconditionFailed (HTTP 412) answers
    failures: list[str] = field(default_factory=list)  # writers that stopped early, and why
    seconds: float = 0.0

    @property
    def writes_per_second(self) -> float:
        return len(self.acks) / self.seconds if self.seconds else 0.0


def seed_table(client: Any, table: str, declarations: Declarations) -> None:
    """Seed the singleton exactly as the stack's seed does (version 0, the declared initial values)."""
    FlagStore(client, table, declarations).seed(actor="bench", reason="seed")


def _write_retrying_conflicts(
    store: FlagStore, values: dict[str, Any], actor: str, result: RunResult, time_budget: float | None
) -> tuple[Any, int]:
    attempts = 0
    for _ in range(MAX_REQUESTS_PER_WRITE):
        try:
            change = store.change(values, actor=actor, reason="bench: concurrent writer", time_budget=time_budget)
        except WriteConflict as exc:
            result.conflicts += 1
            attempts += exc.details["attempts"]
            time.sleep(random.uniform(0, 0.05))  # noqa: S311 - a client honouring Retry-After, scaled down
            continue
        return change, attempts + change.attempts
    raise RuntimeError(f"{actor}: {MAX_REQUESTS_PER_WRITE} requests in a row answered 409")


def _write_if_match(
    store: FlagStore, values: dict[str, Any], actor: str, result: RunResult, time_budget: float | None
) -> tuple[Any, int]:
    for rounds in range(1, MAX_IF_MATCH_ROUNDS + 1):
        seen = store.current()
        try:
            change = store.change(
                values,
                actor=actor,
                reason="bench: If-Match writer",
                expected_version=seen.version,
                time_budget=time_budget,
            )
        except PreconditionFailed:
            result.stale += 1
            time.sleep(random.uniform(0, min(0.2, 0.005 * 2 ** min(rounds, 6))))  # noqa: S311 - jittered back-off
            continue
        return change, rounds
    raise RuntimeError(f"{actor}: {MAX_IF_MATCH_ROUNDS} If-Match rounds in a row answered 412")


def run_writers(
    client_factory: Callable[[], Any],
    table: str,
    *,
    declarations: Declarations | None = None,
    writers: int = WRITERS,
    changes: int = CHANGES_PER_WRITER,
    if_match: bool = False,
    store_options: dict[str, Any] | None = None,
    time_budget: float | None = None,
) -> RunResult:
    """``writers`` threads, each with its own client and FlagStore, make ``changes`` writes each, together;
    ``time_budget`` is each request's (as the write function passes its remaining time; None: no deadline)."""
    declarations = declarations or load_service_declarations()
    result = RunResult()
    lock = threading.Lock()
    start = threading.Barrier(writers + 1)
    write = _write_if_match if if_match else _write_retrying_conflicts

    def work(writer: int) -> None:
        store = FlagStore(client_factory(), table, declarations, **(store_options or {}))
        local = RunResult()
        start.wait()
        try:
            for change in range(changes):
                values = writer_values(writer, change)
                began = time.perf_counter()
                outcome, attempts = write(store, values, f"writer-{writer}", local, time_budget)
                seconds = time.perf_counter() - began
                local.acks.append(
                    Ack(writer, change, outcome.snapshot.version, values, dict(outcome.changed), attempts, seconds)
                )
        except Exception as exc:  # noqa: BLE001 - recorded and asserted on by the caller
            local.failures.append(f"writer-{writer}: {type(exc).__name__}: {exc}")
        with lock:
            result.acks.extend(local.acks)
            result.conflicts += local.conflicts
            result.stale += local.stale
            result.failures.extend(local.failures)

    threads = [threading.Thread(target=work, args=(writer,), name=f"writer-{writer}") for writer in range(writers)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    result.seconds = time.perf_counter() - began
    return result
