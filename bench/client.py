"""Embedded-client bench: the client's reads beside its peers', on one DynamoDB Local; prints figures, not a test.

In one run, on one in-memory DynamoDB Local (``local.dynamodb_local``) holding three tables (ours seeded as the
stack seeds it, LaunchDarkly's feature store in its SDK's own item format, a Powertools parameters table keyed by
name), every cache age 5 s:
1. Warm cached read p50: ``flags.get("signup_enabled")`` on a warm client, over a dict lookup plus one
   ``time.monotonic()`` call (the least a cached read with an age check can do). Target <= 5x. Printed beside
   a warm HTTP round trip to the local runner's ``GET /flags`` (``python -m local`` on the same DynamoDB Local).
2. GetItem calls made by 20 client instances (20 environments, each its own boto3 client and cache, one thread
   each) reading 10,000 times each inside one cache age, counted by a botocore ``before-send`` hook (a request
   about to go on the wire), not by the client. Must be exactly 20.
3. Cold, whole process: ``import singleton_flags`` + client creation over ``import boto3`` +
   ``boto3.client("dynamodb")``, the median of per-pair ratios. Target <= 1.1.
4. The peers: LaunchDarkly's SDK (daemon mode, ``use_ldd=True``, its DynamoDB feature store with a 5 s cache)
   and Powertools' stock ``DynamoDBProvider``. Warm p50 of one read each, interleaved with ours; targets: ours
   <= 0.5x LaunchDarkly's ``variation()`` and <= 1.0x Powertools' cached ``get``. Cold import + first read,
   whole process, ours <= 1.0x each of theirs.
The cold figures come from the scripts in ``bench/cold/`` (its README), each a whole fresh interpreter, run in
interleaved pairs: a whole-process estimate from inside this process, spawn costs included on both sides.

Run: ``.venv/bin/python -m bench client`` (``make bench`` runs every bench). ``BENCH_COLD_PAIRS`` sets the
number of cold pairs (default 11).
"""

from __future__ import annotations

import contextlib
import gc
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COLD_DIR = Path(__file__).resolve().parent / "cold"
DECLARATIONS = ROOT / "functions" / "singleton_flags_service" / "declarations.json"

FLAG = "signup_enabled"  # seeded True in every table
CACHE_AGE = 5  # seconds, for the three readers alike (our default, LaunchDarkly's store cache, Powertools' max_age)
TABLE, LD_TABLE, POWERTOOLS_TABLE = "bench-client", "bench-launchdarkly", "bench-powertools"
REGION = "us-east-1"

SAMPLES = 1_000  # timed batches per reader
BATCH = 50  # calls per timed batch: one call of a cached read is too short for the clock to time alone
HTTP_N, HTTP_WARMUP = 500, 50
ENVIRONMENTS, READS_PER_ENVIRONMENT = 20, 10_000
COLD_PAIRS = int(os.environ.get("BENCH_COLD_PAIRS", "11"))

TARGET_CACHED_OVER_FLOOR = 5.0
TARGET_GET_ITEMS = ENVIRONMENTS
TARGET_COLD_CREATE = 1.1
TARGET_OVER_LAUNCHDARKLY = 0.5
TARGET_OVER_POWERTOOLS = 1.0
TARGET_COLD_FIRST_READ = 1.0

# What the cold scripts and the warm readers find in the environment: the tables, fake credentials, no profile.
UNSET_ENV = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "POWERTOOLS_PARAMETERS_MAX_AGE", "PYTHONDONTWRITEBYTECODE")


# --- pure helpers -------------------------------------------------------------------------------------------


def judge(value: float, limit: float) -> str:
    """``met`` when ``value`` is at most ``limit``, else by how many times over: ``missed by 1.46x``."""
    return "met" if value <= limit else f"missed by {value / limit:.2f}x"


def judge_exactly(value: int, target: int) -> str:
    """``met`` when ``value`` is ``target``, else the difference: ``missed by +3`` (or ``-3``)."""
    return "met" if value == target else f"missed by {value - target:+d}"


def median_of_ratios(pairs: list[tuple[float, float]]) -> float:
    """The median of a/b over pairs run back to back (the pairing cancels the machine's drift)."""
    return statistics.median(a / b for a, b in pairs)


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


class GetItemCounter:
    """GetItem requests about to be sent, counted per thread, from every client of the sessions it is attached to.

    Registered on a botocore session's ``before-send`` event, which fires once for each HTTP request a client
    puts on the wire (a retry is another request), after any stub or cache had its chance: the real calls.
    """

    EVENT = "before-send.dynamodb.GetItem"

    def __init__(self) -> None:
        self.by_thread: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, **_: Any) -> None:
        with self._lock:
            self.by_thread[threading.current_thread().name] += 1

    @property
    def total(self) -> int:
        return sum(self.by_thread.values())

    def attach(self, events: Any) -> None:
        """``events``: a botocore session's or a client's ``meta.events``; clients made later inherit it."""
        events.register(self.EVENT, self)


# --- DynamoDB Local, three tables -------------------------------------------------------------------------


def launchdarkly_flag(key: str, value: bool) -> dict[str, Any]:
    """A boolean flag as LaunchDarkly stores it: on, no targets or rules, everyone falls through to ``value``."""
    return {
        "key": key,
        "version": 1,
        "on": True,
        "variations": [value, not value],
        "fallthrough": {"variation": 0},
        "offVariation": 1,
        "targets": [],
        "contextTargets": [],
        "rules": [],
        "prerequisites": [],
        "salt": f"{key}-salt",
        "trackEvents": False,
        "trackEventsFallthrough": False,
        "clientSide": False,
        "deleted": False,
    }


def launchdarkly_items(flags: Mapping[str, bool]) -> list[dict[str, Any]]:
    """The items of LaunchDarkly's DynamoDB feature store for ``flags``, in its SDK's format
    (``ldclient/impl/integrations/dynamodb/dynamodb_feature_store.py``): partition key ``namespace`` (the
    kind: ``features``), sort key ``key``, the whole flag as JSON in ``item``, ``version``; and the
    ``$inited`` marker the SDK checks before it trusts the table."""
    items = [
        {
            "namespace": {"S": "features"},
            "key": {"S": key},
            "version": {"N": "1"},
            "item": {"S": json.dumps(launchdarkly_flag(key, value))},
        }
        for key, value in flags.items()
    ]
    items.append({"namespace": {"S": "$inited"}, "key": {"S": "$inited"}})
    return items


def _create_keyed_table(admin: Any, name: str, keys: list[str]) -> None:
    admin.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"} for key in keys],
        KeySchema=[{"AttributeName": key, "KeyType": kind} for key, kind in zip(keys, ("HASH", "RANGE"), strict=False)],
        BillingMode="PAY_PER_REQUEST",
    )
    admin.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})


def seed_tables(admin: Any) -> None:
    """Our table as the stack seeds it; LaunchDarkly's and Powertools' with ``signup_enabled`` = True."""
    from local.dynamodb_local import create_table
    from singleton_flags.declarations import load_declarations
    from singleton_flags_service.observability import logger
    from singleton_flags_service.writes.store import FlagStore

    create_table(admin, TABLE)
    level = logger.log_level
    logger.setLevel("ERROR")  # the seed's "restored" warning and "flags changed" line are expected here
    try:
        FlagStore(admin, TABLE, load_declarations(DECLARATIONS)).seed(actor="bench", reason="seed")
    finally:
        logger.setLevel(level)
    _create_keyed_table(admin, LD_TABLE, ["namespace", "key"])
    for item in launchdarkly_items({FLAG: True}):
        admin.put_item(TableName=LD_TABLE, Item=item)
    _create_keyed_table(admin, POWERTOOLS_TABLE, ["id"])
    admin.put_item(TableName=POWERTOOLS_TABLE, Item={"id": {"S": FLAG}, "value": {"BOOL": True}})


def bench_env(endpoint: str) -> dict[str, str]:
    """What every reader (warm here, cold in a fresh interpreter) is configured by: endpoint, tables, credentials."""
    return {
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "SINGLETON_FLAGS_TABLE": TABLE,
        "SINGLETON_FLAGS_DECLARATIONS": str(DECLARATIONS),
        "SINGLETON_FLAGS_MAX_AGE": str(CACHE_AGE),
        "BENCH_LD_TABLE": LD_TABLE,
        "BENCH_POWERTOOLS_TABLE": POWERTOOLS_TABLE,
        "NO_PROXY": "127.0.0.1",
    }


@contextlib.contextmanager
def seeded_dynamodb_local() -> Iterator[dict[str, str]]:
    """DynamoDB Local with the three tables seeded; this process's environment set to ``bench_env`` meanwhile."""
    from local.dynamodb_local import local_client, running_dynamodb_local

    saved = dict(os.environ)
    with running_dynamodb_local() as endpoint:
        env = bench_env(endpoint)
        seed_tables(local_client(endpoint))
        for key in UNSET_ENV:
            os.environ.pop(key, None)
        os.environ.update(env)
        try:
            yield env
        finally:
            os.environ.clear()
            os.environ.update(saved)


# --- warm reads -------------------------------------------------------------------------------------------


def new_session_counter() -> GetItemCounter:
    """A fresh boto3 default session with a GetItem counter: every client made from now on is counted."""
    import boto3

    boto3.setup_default_session()
    counter = GetItemCounter()
    counter.attach(boto3.DEFAULT_SESSION.events)  # type: ignore[union-attr]  # set just above
    return counter


def readers() -> tuple[dict[str, Callable[[str], Any]], Callable[[], None]]:
    """One warm read of ``FLAG`` by each reader (called with the flag's name), and how to close them."""
    from aws_lambda_powertools.utilities.parameters import DynamoDBProvider
    from ldclient import Context, LDClient
    from ldclient.config import Config
    from ldclient.feature_store import CacheConfig
    from ldclient.integrations import DynamoDB

    from singleton_flags import Flags

    flags = Flags.from_env(os.environ)
    store = DynamoDB.new_feature_store(LD_TABLE, caching=CacheConfig(expiration=CACHE_AGE))
    launchdarkly = LDClient(Config("bench-sdk-key", feature_store=store, use_ldd=True, send_events=False))
    context = Context.create("user-1")
    provider = DynamoDBProvider(table_name=POWERTOOLS_TABLE)
    values = {FLAG: True}
    monotonic = time.monotonic

    def dict_and_clock(name: str) -> Any:
        monotonic()
        return values[name]

    def launchdarkly_variation(name: str) -> Any:
        return launchdarkly.variation(name, context, False)

    def powertools_get(name: str) -> Any:
        return provider.get(name, max_age=CACHE_AGE)

    reads: dict[str, Callable[[str], Any]] = {
        "floor": dict_and_clock,
        "ours": flags.get,
        "launchdarkly": launchdarkly_variation,
        "powertools": powertools_get,
    }
    for label, read in reads.items():
        if read(FLAG) is not True:
            raise RuntimeError(f"{label} did not read {FLAG} as the seeded True")
    return reads, launchdarkly.close


def per_call_ns(read: Callable[[str], Any], batch: int = BATCH) -> float:
    """Nanoseconds per call of ``read(FLAG)``, over one batch of back-to-back calls (loop overhead included)."""
    clock, name = time.perf_counter_ns, FLAG
    started = clock()
    for _ in range(batch):
        read(name)
    return (clock() - started) / batch


def warm_figures() -> dict[str, Any]:
    """Per-call p50 of each reader, batches interleaved (rotating who goes first), all inside one cache age."""
    counter = new_session_counter()
    reads, close = readers()
    try:
        samples: dict[str, list[float]] = {label: [] for label in reads}
        labels = list(reads)
        for index in range(SAMPLES // 10):  # warm-up, not kept
            per_call_ns(reads[labels[index % len(labels)]])
        calls_before, gc_was_on = counter.total, gc.isenabled()
        gc.collect()
        gc.disable()
        started = time.monotonic()
        try:
            for index in range(SAMPLES):
                for label in labels[index % len(labels) :] + labels[: index % len(labels)]:
                    samples[label].append(per_call_ns(reads[label]))
        finally:
            if gc_was_on:
                gc.enable()
        seconds = time.monotonic() - started
    finally:
        close()
    return {
        "p50_ns": {label: p50(values) for label, values in samples.items()},
        "seconds": seconds,
        "get_items": counter.total - calls_before,
    }


@contextlib.contextmanager
def local_runner(env: Mapping[str, str]) -> Iterator[int]:
    """``python -m local`` on a free port over the bench's DynamoDB Local (its own table), until the block ends."""
    from local.dynamodb_local import free_port

    port = free_port()
    runner_env = {key: value for key, value in os.environ.items() if not key.startswith(("POWERTOOLS_", "FLAGS_"))}
    runner_env.update(
        env,
        PORT=str(port),
        TABLE_NAME="bench-runner",
        POWERTOOLS_PARAMETERS_MAX_AGE=str(CACHE_AGE),
        POWERTOOLS_LOG_LEVEL="WARNING",
        PYTHONPATH=str(ROOT),
    )
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "local"],
            cwd=ROOT,
            env=runner_env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"the local runner exited: {log.read().decode(errors='replace')[-2000:]}")
                with contextlib.suppress(OSError):
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    connection.request("GET", "/openapi.json")
                    if connection.getresponse().status == 200:
                        connection.close()
                        break
                time.sleep(0.1)
            else:
                raise RuntimeError("the local runner did not answer within 60 s")
            yield port
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def http_round_trip_ns(port: int) -> float:
    """p50 of a warm ``GET /flags`` (the read function warm, inside one cache age), one connection per request
    as ``urllib`` makes it: the runner writes an answer's headers and body in two sends, so a keep-alive client
    waits out its own delayed ACK (~40 ms on Linux) on every answer after the first, a cost of the runner's
    socket and not of the read."""
    samples: list[float] = []
    for index in range(HTTP_WARMUP + HTTP_N):
        started = time.perf_counter_ns()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            connection.request("GET", "/flags")
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        elapsed = time.perf_counter_ns() - started
        if response.status != 200 or json.loads(body)["flags"][FLAG] is not True:
            raise RuntimeError(f"GET /flags answered {response.status}: {body[:200]!r}")
        if index >= HTTP_WARMUP:
            samples.append(elapsed)
    return p50(samples)


# --- 20 environments --------------------------------------------------------------------------------------


def environments_figure() -> dict[str, Any]:
    """20 clients (each its own boto3 client and cache, made as ``Flags.from_env`` makes it), one thread each,
    10,000 reads each, started together; GetItem requests counted on the wire side of botocore, per thread."""
    from singleton_flags import Flags

    counter = new_session_counter()
    clients = [Flags.from_env(os.environ) for _ in range(ENVIRONMENTS)]  # one session: made one after another
    start = threading.Barrier(ENVIRONMENTS)
    wrong: list[str] = []

    def environment(flags: Flags) -> None:
        start.wait()
        for _ in range(READS_PER_ENVIRONMENT):
            if flags.get(FLAG) is not True:
                wrong.append(threading.current_thread().name)
                return

    threads = [
        threading.Thread(target=environment, args=(flags,), name=f"environment-{index}")
        for index, flags in enumerate(clients)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "get_items": counter.total,
        "per_environment": sorted(counter.by_thread.values()),
        "seconds": time.monotonic() - started,
        "wrong": wrong,
    }


# --- cold starts ------------------------------------------------------------------------------------------

COLD_SCRIPTS = {
    "client_create": "client_create.py",
    "boto3_create": "boto3_create.py",
    "client_first_read": "client_first_read.py",
    "launchdarkly_first_read": "launchdarkly_first_read.py",
    "powertools_first_read": "powertools_first_read.py",
}


def run_cold(script: str, env: Mapping[str, str]) -> float:
    """Wall seconds of one fresh interpreter running ``bench/cold/<script>``, from spawn to exit."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(COLD_DIR / script)], env=dict(env), cwd=ROOT, capture_output=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{script} exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    return seconds


def cold_figures() -> dict[str, list[float]]:
    env = dict(os.environ)
    for script in COLD_SCRIPTS.values():  # compiled once, not measured
        run_cold(script, env)
    labels = list(COLD_SCRIPTS)
    runs: dict[str, list[float]] = {label: [] for label in labels}
    for index in range(COLD_PAIRS):
        for label in labels[index % len(labels) :] + labels[: index % len(labels)]:
            runs[label].append(run_cold(COLD_SCRIPTS[label], env))
    return runs


# --- report -----------------------------------------------------------------------------------------------


def rows(
    warm: dict[str, Any], http_ns: float, envs: dict[str, Any], cold: dict[str, list[float]]
) -> list[tuple[str, str, str, str]]:
    """(figure, value, target, result) lines of the report."""
    ns = warm["p50_ns"]
    ours, floor, ld, pt = ns["ours"], ns["floor"], ns["launchdarkly"], ns["powertools"]

    def pairs(a: str, b: str) -> list[tuple[float, float]]:
        return list(zip(cold[a], cold[b], strict=True))

    create = median_of_ratios(pairs("client_create", "boto3_create"))
    over_ld = median_of_ratios(pairs("client_first_read", "launchdarkly_first_read"))
    over_pt = median_of_ratios(pairs("client_first_read", "powertools_first_read"))
    ms = {label: statistics.median(values) * 1000 for label, values in cold.items()}
    return [
        (
            "1. cached flags.get p50 / (dict lookup + time.monotonic()) p50",
            f"{ours:.0f} / {floor:.0f} ns = {ours / floor:.2f}x",
            f"<= {TARGET_CACHED_OVER_FLOOR}x",
            judge(ours / floor, TARGET_CACHED_OVER_FLOOR),
        ),
        (
            "   beside: warm HTTP GET /flags round trip p50 (local runner)",
            f"{http_ns / 1000:.0f} us = {http_ns / ours:.0f}x the cached read",
            "",
            "",
        ),
        (
            f"2. GetItem calls, {ENVIRONMENTS} clients x {READS_PER_ENVIRONMENT:,} reads, one cache age",
            f"{envs['get_items']}",
            f"== {TARGET_GET_ITEMS}",
            judge_exactly(envs["get_items"], TARGET_GET_ITEMS),
        ),
        (
            f"3. cold import + client / import boto3 + client (median of {COLD_PAIRS} pair ratios)",
            f"{ms['client_create']:.0f} / {ms['boto3_create']:.0f} ms = {create:.2f}",
            f"<= {TARGET_COLD_CREATE}",
            judge(create, TARGET_COLD_CREATE),
        ),
        (
            "4. cached read p50: ours / LaunchDarkly variation()",
            f"{ours / 1000:.2f} / {ld / 1000:.2f} us = {ours / ld:.2f}x",
            f"<= {TARGET_OVER_LAUNCHDARKLY}x",
            judge(ours / ld, TARGET_OVER_LAUNCHDARKLY),
        ),
        (
            "   cached read p50: ours / Powertools DynamoDBProvider.get",
            f"{ours / 1000:.2f} / {pt / 1000:.2f} us = {ours / pt:.2f}x",
            f"<= {TARGET_OVER_POWERTOOLS}x",
            judge(ours / pt, TARGET_OVER_POWERTOOLS),
        ),
        (
            "   cold import + first read: ours / LaunchDarkly",
            f"{ms['client_first_read']:.0f} / {ms['launchdarkly_first_read']:.0f} ms = {over_ld:.2f}",
            f"<= {TARGET_COLD_FIRST_READ}",
            judge(over_ld, TARGET_COLD_FIRST_READ),
        ),
        (
            "   cold import + first read: ours / Powertools",
            f"{ms['client_first_read']:.0f} / {ms['powertools_first_read']:.0f} ms = {over_pt:.2f}",
            f"<= {TARGET_COLD_FIRST_READ}",
            judge(over_pt, TARGET_COLD_FIRST_READ),
        ),
    ]


def main() -> None:
    print(f"client bench: one DynamoDB Local (in memory, loopback), cache age {CACHE_AGE} s for every reader")
    with seeded_dynamodb_local() as env:
        warm = warm_figures()
        with local_runner(env) as port:
            http_ns = http_round_trip_ns(port)
        envs = environments_figure()
        cold = cold_figures()
    table = rows(warm, http_ns, envs, cold)
    width = max(len(row[0]) for row in table)
    value_width = max(len(row[1]) for row in table)
    for label, value, target, result in table:
        print(f"  {label:<{width}}  {value:>{value_width}}  {target:>7}  {result}".rstrip())
    print(
        f"  warm: {SAMPLES} batches of {BATCH} calls per reader in {warm['seconds']:.2f} s, GetItems meanwhile: "
        f"{warm['get_items']} (a refresh when a cache age ended); p50 per call (ns): "
        + ", ".join(f"{label} {value:.0f}" for label, value in warm["p50_ns"].items())
    )
    print(
        f"  environments: GetItems per environment {envs['per_environment']}, {envs['seconds']:.2f} s, "
        f"wrong values: {len(envs['wrong'])}"
    )
    print(
        f"  cold (whole fresh interpreters, spawn included, median of {COLD_PAIRS} ms): "
        + ", ".join(f"{label} {statistics.median(values) * 1000:.0f}" for label, values in cold.items())
    )


if __name__ == "__main__":
    main()
