"""Read-path bench: prints figures against their targets; it is not a test.

In one run:
1. GetItem calls made by 10,000 warm GET /flags inside one max_age window (moto in-process): must be 1.
2. Warm GET /flags p50/p99 of the real read handler, and of a baseline: an ``APIGatewayRestResolver`` route
   returning a constant dict, wrapped in exactly the decorators of ``singleton_flags_service.handlers.read_api.handler``
   (read from
   its source and evaluated in its module, so the baseline follows the handler). Ratio target <= 1.3.
   And a warm OFREP evaluation of one flag (``POST /ofrep/v1/evaluate/flags/{key}`` with an evaluation context)
   against a warm ``GET /flags/{name}``, same environment, interleaved. Ratio target <= 1.3.
3. Bytes written to stdout (Logger and EMF included) by 1,000 cached GET /flags at the default log level.
   Target <= 1 KB.
4. Cold import + first invocation of the read handler vs the floor ``import boto3; boto3.client("dynamodb");
   one GetItem``, each in a fresh interpreter, the GetItem going over HTTP to a stub DynamoDB on 127.0.0.1
   (``AWS_ENDPOINT_URL_DYNAMODB``); medians of interleaved pairs. Ratio target <= 1.3. The handler pauses the
   garbage collector during its init (docs/decisions.md); a control run with the pause taken out shows what that
   saves, and the floor is left exactly as the issue defines it.
It also prints where the time goes: the cold start's CPU time per phase (boto3, Powertools, our modules,
first invocation) and, when the warm ratio misses, a cProfile of our functions per invocation.

Run: ``.venv/bin/python -m bench`` (every bench) or ``.venv/bin/python -m bench read_path``.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import http.server
import inspect
import io
import json
import logging
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, cast

from singleton_flags_service.contract import HANDLERS, READ_FUNCTION

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "functions"  # the functions' asset root: Lambda's /var/task, the cold runs' working directory

TABLE = "bench-read"
WARM_N = 10_000
WARMUP_N = 1_000
QUIET_N = 1_000
COLD_PAIRS = int(os.environ.get("BENCH_COLD_PAIRS", "25"))  # fewer pairs: quicker, noisier
PROFILE_N = 2_000
TARGET_GET_ITEMS = 1
TARGET_WARM_RATIO = 1.3
TARGET_STDOUT_BYTES = 1024
TARGET_COLD_RATIO = 1.3
TARGET_OFREP_RATIO = 1.3  # a warm OFREP evaluation (with a context) against a warm GET /flags/{name}
BENCH_ENV = {
    "TABLE_NAME": TABLE,
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_SESSION_TOKEN": "bench",
    "POWERTOOLS_PARAMETERS_MAX_AGE": "300",  # 10,000 invocations fit in one window on any machine
}
UNSET_ENV = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "POWERTOOLS_LOG_LEVEL", "LOG_LEVEL")


class LambdaContext:
    function_name = "singleton-flags-read"
    memory_limit_in_mb = 256
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:singleton-flags-read"
    aws_request_id = "bench-request"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def flags_event() -> dict[str, Any]:
    """GET /flags as API Gateway (REST, AWS_IAM) delivers it, with the headers a typical client sends."""
    headers = {
        "Accept": "application/json",
        "Host": "abcdef1234.execute-api.us-east-1.amazonaws.com",
        "User-Agent": "bench/1.0",
        "X-Amz-Date": "20240101T000000Z",
        "X-Amzn-Trace-Id": "Root=1-5e1b4151-5ac6c58f5d2c3e4b6a7d8e9f",
        "X-Forwarded-For": "192.0.2.1",
        "X-Forwarded-Port": "443",
        "X-Forwarded-Proto": "https",
    }
    return {
        "resource": "/flags",
        "path": "/flags",
        "httpMethod": "GET",
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/flags",
            "httpMethod": "GET",
            "path": "/prod/flags",
            "stage": "prod",
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "identity": {"userArn": "arn:aws:iam::123456789012:user/bench", "sourceIp": "192.0.2.1"},
        },
        "body": None,
        "isBase64Encoded": False,
    }


OFREP_FLAG = "signup_enabled"
OFREP_BODY = json.dumps({"context": {"targetingKey": "user-1", "plan": "pro"}})  # what an OFREP provider sends


def one_flag_event(name: str = OFREP_FLAG) -> dict[str, Any]:
    """GET /flags/{name}, as ``flags_event``."""
    event = flags_event()
    event.update(resource="/flags/{name}", path=f"/flags/{name}", pathParameters={"name": name})
    event["requestContext"] = {
        **event["requestContext"],
        "resourcePath": "/flags/{name}",
        "path": f"/prod/flags/{name}",
    }
    return event


def ofrep_event(name: str = OFREP_FLAG) -> dict[str, Any]:
    """POST /ofrep/v1/evaluate/flags/{key} with an evaluation context, as an OFREP provider sends it."""
    event = flags_event()
    path, resource = f"/ofrep/v1/evaluate/flags/{name}", "/ofrep/v1/evaluate/flags/{key}"
    headers = {**event["headers"], "Content-Type": "application/json"}
    event.update(
        resource=resource,
        path=path,
        httpMethod="POST",
        headers=headers,
        multiValueHeaders={key: [value] for key, value in headers.items()},
        pathParameters={"key": name},
        body=OFREP_BODY,
    )
    event["requestContext"] = {
        **event["requestContext"],
        "resourcePath": resource,
        "httpMethod": "POST",
        "path": f"/prod{path}",
    }
    return event


def seeded_item() -> dict[str, Any]:
    """The singleton exactly as the seed leaves it (every flag at its initial value, version 0)."""
    from singleton_flags.codec import encode
    from singleton_flags.keys import VERSION_ATTR, singleton_key
    from singleton_flags_service.contract import load_service_declarations

    item: dict[str, Any] = {**singleton_key(), VERSION_ATTR: {"N": "0"}}
    item.update({name: encode(spec, spec.initial) for name, spec in load_service_declarations().items()})
    return item


@contextlib.contextmanager
def bench_environment() -> Iterator[None]:
    saved = dict(os.environ)
    for key in UNSET_ENV:
        os.environ.pop(key, None)
    os.environ.update(BENCH_ENV)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class ByteCounter(io.TextIOBase):
    """A stdout stand-in that keeps nothing but the number of UTF-8 bytes written to it."""

    def __init__(self) -> None:
        self.bytes = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.bytes += len(text.encode("utf-8"))
        return len(text)


@contextlib.contextmanager
def counted_stdout() -> Iterator[ByteCounter]:
    """Everything the function prints: ``print`` (EMF) through sys.stdout, and the Logger's own stream."""
    from singleton_flags_service.observability import logger

    sink = ByteCounter()
    handler = cast("logging.StreamHandler[Any]", logger.registered_handler)  # Powertools logs to a StreamHandler
    previous = handler.setStream(sink)
    try:
        with contextlib.redirect_stdout(sink):
            yield sink
    finally:
        handler.setStream(previous)


def percentile(samples: list[int], share: float) -> int:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def handler_decorators(module: Any) -> list[str]:
    """The decorator expressions of ``module.handler``, as written in its source (outermost first)."""
    tree = ast.parse(inspect.getsource(module))
    function = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "handler")
    return [ast.unparse(decorator) for decorator in function.decorator_list]


def build_baseline(module: Any, body: dict[str, Any]) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """A resolver route returning a constant dict, wrapped in the read handler's own decorators."""
    from aws_lambda_powertools.event_handler import APIGatewayRestResolver

    app = APIGatewayRestResolver()

    @app.get("/flags")
    def constant() -> dict[str, Any]:
        return body

    def baseline(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(event, context)

    for expression in reversed(handler_decorators(module)):
        baseline = eval(expression, vars(module))(baseline)  # noqa: S307 - the handler's own source
    return baseline


@contextlib.contextmanager
def moto_table() -> Iterator[None]:
    """The flags table on moto, in-process, seeded exactly as the stack seeds it."""
    import boto3
    from moto import mock_aws

    from local.dynamodb_local import create_table
    from singleton_flags_service.contract import load_service_declarations
    from singleton_flags_service.writes.store import FlagStore

    with mock_aws():
        client = boto3.client("dynamodb")
        create_table(client, TABLE)
        FlagStore(client, TABLE, load_service_declarations()).seed(actor="bench", reason="seed")
        yield


def timed_pairs(first: Callable[[], Any], second: Callable[[], Any], n: int) -> dict[str, list[int]]:
    """Wall and thread-CPU nanoseconds of ``n`` calls of each, interleaved, alternating which goes first.

    Thread CPU time does not count the time other processes hold the CPU, so its ratio survives a busy host.
    """
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    samples: dict[str, list[int]] = {"first": [], "second": [], "first_cpu": [], "second_cpu": []}
    gc.collect()
    for index in range(n):
        for label in ("first", "second") if index % 2 == 0 else ("second", "first"):
            function = first if label == "first" else second
            started, started_cpu = wall(), cpu()
            function()
            samples[f"{label}_cpu"].append(cpu() - started_cpu)
            samples[label].append(wall() - started)
    return samples


def warm_figures() -> dict[str, Any]:
    from singleton_flags_service.observability import logger

    with moto_table():
        from local.functions import load_module

        module = load_module(HANDLER_MODULE, fresh=True)  # a fresh warm environment
        event, context = flags_event(), LambdaContext()
        get_items: list[int] = []
        module.PROVIDER._client.meta.events.register("before-call.dynamodb.GetItem", lambda **_: get_items.append(1))
        real = functools.partial(module.handler, event, context)
        level = logger.log_level
        logger.setLevel("INFO")  # the default level, whatever ran before in this process
        try:
            with counted_stdout() as warm_output:
                # 1. GetItem calls: 10,000 invocations from an empty cache, inside one max_age window
                module.PROVIDER.clear_cache()
                fetches_before = module.PROVIDER.fetches
                statuses = {real()["statusCode"] for _ in range(WARM_N)}
                fetches, get_item_calls = module.PROVIDER.fetches - fetches_before, len(get_items)
                # 2. warm latency of the read handler and the baseline
                flags = json.loads(real()["body"])["flags"]
                baseline_handler = build_baseline(module, {"flags": flags, "version": 0, "reason": "CACHED"})
                baseline = functools.partial(baseline_handler, event, context)
                timed_pairs(real, baseline, WARMUP_N)
                latency = timed_pairs(real, baseline, WARM_N)
                # 2b. warm OFREP evaluation of one flag against warm GET /flags/{name}, same environment
                ofrep = functools.partial(module.handler, ofrep_event(), context)
                get_one = functools.partial(module.handler, one_flag_event(), context)
                if not ofrep()["statusCode"] == get_one()["statusCode"] == 200:
                    raise RuntimeError("the OFREP or GET /flags/{name} event is not answered 200")
                timed_pairs(ofrep, get_one, WARMUP_N)
                ofrep_latency = timed_pairs(ofrep, get_one, WARM_N)
                # 3. stdout of 1,000 cached reads, right after a refresh (not counted)
                module.PROVIDER.clear_cache()
                real()
            with counted_stdout() as quiet_output:
                for _ in range(QUIET_N):
                    real()
            profile = profile_warm(module.handler, baseline_handler, event, context)
        finally:
            logger.setLevel(level)
    return {
        "statuses": statuses,
        "get_item_calls": get_item_calls,
        "provider_fetches": fetches,
        "real_ns": latency["first"],
        "base_ns": latency["second"],
        "real_cpu_ns": latency["first_cpu"],
        "base_cpu_ns": latency["second_cpu"],
        "ofrep_ns": ofrep_latency["first"],
        "get_one_ns": ofrep_latency["second"],
        "ofrep_cpu_ns": ofrep_latency["first_cpu"],
        "get_one_cpu_ns": ofrep_latency["second_cpu"],
        "decorators": handler_decorators(module),
        "quiet_bytes": quiet_output.bytes,
        "warm_bytes": warm_output.bytes,
        "profile": profile,
    }


def profile_warm(handler: Callable[..., Any], baseline: Callable[..., Any], event: dict[str, Any], context: Any) -> str:
    """Where a warm invocation of the read handler spends its time beyond the baseline: cProfile of both,
    cumulative microseconds per invocation (inflated by the profiler, comparable with each other) of the
    handlers and of every function of ours, plus Powertools' per-access header parsing."""
    import cProfile
    import pstats

    def profile(function: Callable[..., Any]) -> dict[tuple[str, str], tuple[int, float]]:
        profiler = cProfile.Profile()
        with counted_stdout():
            profiler.enable()
            for _ in range(PROFILE_N):
                function(event, context)
            profiler.disable()
        stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        return {(path, name): (calls, cumulative) for (path, _, name), (_, calls, _, cumulative, _) in stats.items()}

    real, base = profile(handler), profile(baseline)
    ours = str(FUNCTIONS)
    rows = [
        (cumulative, calls, f"{Path(path).name}:{name}")
        for (path, name), (calls, cumulative) in real.items()
        if path.startswith(ours) or (path.endswith("common.py") and name == "headers")
    ]
    base_total = next(cumulative for (path, name), (_, cumulative) in base.items() if name == "baseline")
    lines = [
        f"{'us/inv':>8}  {'calls/inv':>9}  function (under cProfile; the baseline's undecorated handler: "
        f"{base_total / PROFILE_N * 1e6:.1f} us/inv)"
    ]
    lines += [
        f"{cumulative / PROFILE_N * 1e6:8.1f}  {calls / PROFILE_N:9.1f}  {label}"
        for cumulative, calls, label in sorted(rows, reverse=True)[:16]
    ]
    return "\n".join(lines)


# --- cold start -------------------------------------------------------------------------------------------

# The read function's handler module, as Lambda imports it from the asset root
HANDLER_MODULE = HANDLERS[READ_FUNCTION].rpartition(".")[0]

HANDLER_SCRIPT = """
import json, sys, time
started, started_cpu = time.perf_counter(), time.process_time()
import {HANDLER_MODULE} as module
response = module.handler(json.loads(sys.argv[1]), type("Context", (), json.loads(sys.argv[2]))())
seconds, cpu = time.perf_counter() - started, time.process_time() - started_cpu
reason = json.loads(response["body"])["reason"]
ok = response["statusCode"] == 200 and reason == "STATIC"
print("BENCH " + json.dumps({"seconds": seconds, "cpu": cpu, "ok": ok}), file=sys.stderr)
""".replace("{HANDLER_MODULE}", HANDLER_MODULE)

FLOOR_SCRIPT = """
import json, sys, time
started, started_cpu = time.perf_counter(), time.process_time()
import boto3
client = boto3.client("dynamodb")
item = client.get_item(TableName=sys.argv[1], Key={"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}})
seconds, cpu = time.perf_counter() - started, time.process_time() - started_cpu
print("BENCH " + json.dumps({"seconds": seconds, "cpu": cpu, "ok": "Item" in item}), file=sys.stderr)
"""

# The floor plus what the design makes every read function import: Powertools' Logger, its REST resolver and
# the parameters BaseProvider, with the collector paused during init as the handler pauses it (no code of ours).
# handler / this isolates what our own code adds to a cold start.
POWERTOOLS_FLOOR_SCRIPT = FLOOR_SCRIPT.replace(
    "import boto3\n",
    "import gc; gc.disable()\nimport boto3\nfrom aws_lambda_powertools import Logger\n"
    "from aws_lambda_powertools.event_handler import APIGatewayRestResolver\n"
    "from aws_lambda_powertools.utilities.parameters.base import BaseProvider\n"
    "Logger(service='bench'); APIGatewayRestResolver()\ngc.freeze(); gc.enable()\n",
)

# The read handler with its collector pause taken out (gc.disable made a no-op before it loads): what the pause
# saves. Not a target, a control.
COLLECTOR_ON_SCRIPT = HANDLER_SCRIPT.replace(
    f"import {HANDLER_MODULE}", f"import gc; gc.disable = lambda: None\nimport {HANDLER_MODULE}"
)

BREAKDOWN_SCRIPT = """
import gc, json, sys, time
gc.disable()  # as the read handler does first thing
phases, last = [], time.process_time()
def mark(label):
    global last
    now = time.process_time()
    phases.append((label, now - last))
    last = now
import boto3; mark("import boto3")
from singleton_flags.aws import dynamodb_client; client = dynamodb_client(); mark("boto3 client (read config)")
client.get_item(TableName=sys.argv[1], Key={"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}}); mark("GetItem")
import aws_lambda_powertools.logging; mark("import Powertools Logger")
import aws_lambda_powertools.metrics; mark("import Powertools Metrics")
import aws_lambda_powertools.event_handler; mark("import Powertools event_handler")
import aws_lambda_powertools.utilities.parameters.base; mark("import Powertools parameters")
import singleton_flags_service.observability, singleton_flags.provider, singleton_flags.reader
import singleton_flags_service.api.http, singleton_flags.declarations; mark("import singleton_flags.*")
import {HANDLER_MODULE} as module; mark("the read handler module scope (its own client, app)")
module.handler(json.loads(sys.argv[2]), type("Context", (), json.loads(sys.argv[3]))()); mark("first GET /flags")
print("BENCH " + json.dumps({"phases": phases, "ok": True}), file=sys.stderr)
""".replace("{HANDLER_MODULE}", HANDLER_MODULE)


class StubDynamoDB(http.server.BaseHTTPRequestHandler):
    """Answers DynamoDB's JSON protocol: GetItem with the seeded item, anything else with a 400."""

    item: ClassVar[dict[str, Any]] = {}
    served = 0

    def do_POST(self) -> None:  # http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body: dict[str, Any]
        if self.headers.get("X-Amz-Target", "").endswith(".GetItem"):
            status, body = 200, {"Item": self.item}
            type(self).served += 1
        else:
            status, body = 400, {"__type": "com.amazon.coral.validate#ValidationException", "message": "bench"}
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("x-amzn-RequestId", "bench")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: Any) -> None:
        pass


@contextlib.contextmanager
def stub_dynamodb() -> Iterator[str]:
    StubDynamoDB.item = seeded_item()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StubDynamoDB)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="stub-dynamodb", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def cold_env(endpoint: str, pycache: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in UNSET_ENV and "PROXY" not in key.upper()}
    env.update(BENCH_ENV)
    env.pop("POWERTOOLS_PARAMETERS_MAX_AGE")  # as deployed
    env.update(
        {
            "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
            "PYTHONPYCACHEPREFIX": pycache,  # compiled once, like a deployed runtime; nothing written in the repo
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "NO_PROXY": "127.0.0.1",
        }
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_cold(script: str, args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], str]:
    """Run one cold start in a fresh interpreter: what it reported on its ``BENCH`` line, and its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], env=env, cwd=FUNCTIONS, capture_output=True, text=True, check=False
    )
    marker = [line for line in done.stderr.splitlines() if line.startswith("BENCH ")]
    if done.returncode != 0 or not marker:
        raise RuntimeError(f"cold run failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(marker[-1].removeprefix("BENCH "))
    if not result.pop("ok", True):
        raise RuntimeError("cold run did not read the seeded item")
    return result, done.stderr


def cold_figures() -> dict[str, Any]:
    context = {
        key: getattr(LambdaContext, key)
        for key in ("function_name", "memory_limit_in_mb", "invoked_function_arn", "aws_request_id")
    }
    handler_args = [json.dumps(flags_event()), json.dumps(context)]
    runs = {
        "handler": (HANDLER_SCRIPT, handler_args),
        "floor": (FLOOR_SCRIPT, [TABLE]),
        "powertools": (POWERTOOLS_FLOOR_SCRIPT, [TABLE]),
        "collector_on": (COLLECTOR_ON_SCRIPT, handler_args),
    }
    results: dict[str, list[dict[str, float]]] = {label: [] for label in runs}
    with stub_dynamodb() as endpoint, tempfile.TemporaryDirectory(prefix="bench-pycache-") as pycache:
        env = cold_env(endpoint, pycache)
        for script, args in runs.values():  # compile once for both, not measured
            run_cold(script, args, env)
        for pair in range(COLD_PAIRS):
            order = list(runs)[pair % len(runs) :] + list(runs)[: pair % len(runs)]  # rotate who goes first
            for label in order:
                results[label].append(run_cold(*runs[label], env)[0])
        breakdown = [run_cold(BREAKDOWN_SCRIPT, [TABLE, *handler_args], env)[0]["phases"] for _ in range(3)]
        served = StubDynamoDB.served
    phases = {label: statistics.median(run[i][1] for run in breakdown) for i, (label, _) in enumerate(breakdown[0])}
    return {**results, "served": served, "phases": phases}


# --- report -----------------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> None:
    print("read path bench (moto in-process for warm figures; fresh interpreters + stub DynamoDB for cold)")
    with bench_environment():
        warm = warm_figures()
        cold = cold_figures()
    real_p50, real_p99 = percentile(warm["real_ns"], 0.50), percentile(warm["real_ns"], 0.99)
    base_p50, base_p99 = percentile(warm["base_ns"], 0.50), percentile(warm["base_ns"], 0.99)
    warm_ratio = real_p50 / base_p50
    cold_handler, cold_floor, cold_powertools, cold_collector_on = (
        statistics.median(run["seconds"] for run in cold[k]) for k in ("handler", "floor", "powertools", "collector_on")
    )
    cpu_handler, cpu_floor = (statistics.median(run["cpu"] for run in cold[k]) for k in ("handler", "floor"))
    cold_ratio, cold_cpu_ratio = cold_handler / cold_floor, cpu_handler / cpu_floor
    paired_ratio = statistics.median(
        h["seconds"] / f["seconds"] for h, f in zip(cold["handler"], cold["floor"], strict=True)
    )
    real_cpu, base_cpu = percentile(warm["real_cpu_ns"], 0.50), percentile(warm["base_cpu_ns"], 0.50)
    ofrep_p50, one_p50 = percentile(warm["ofrep_ns"], 0.50), percentile(warm["get_one_ns"], 0.50)
    ofrep_cpu, one_cpu = percentile(warm["ofrep_cpu_ns"], 0.50), percentile(warm["get_one_cpu_ns"], 0.50)
    rows = [
        (
            "GetItem calls, 10,000 warm GET /flags in one max_age window",
            f"{warm['get_item_calls']}",
            f"== {TARGET_GET_ITEMS}",
            warm["get_item_calls"] == TARGET_GET_ITEMS == warm["provider_fetches"],
        ),
        ("warm GET /flags p50 / p99 (read handler)", f"{real_p50 / 1000:.1f} / {real_p99 / 1000:.1f} us", "", None),
        ("warm GET /flags p50 / p99 (baseline route)", f"{base_p50 / 1000:.1f} / {base_p99 / 1000:.1f} us", "", None),
        (
            "warm ratio p50 (p99)",
            f"{warm_ratio:.2f} ({real_p99 / base_p99:.2f})",
            f"<= {TARGET_WARM_RATIO}",
            warm_ratio <= TARGET_WARM_RATIO,
        ),
        (
            "  same, thread CPU time p50 (load-proof)",
            f"{real_cpu / 1000:.1f} / {base_cpu / 1000:.1f} us = {real_cpu / base_cpu:.2f}",
            f"<= {TARGET_WARM_RATIO}",
            real_cpu / base_cpu <= TARGET_WARM_RATIO,
        ),
        (
            "warm OFREP evaluation / warm GET /flags/{name}, p50",
            f"{ofrep_p50 / 1000:.1f} / {one_p50 / 1000:.1f} us = {ofrep_p50 / one_p50:.2f}",
            f"<= {TARGET_OFREP_RATIO}",
            ofrep_p50 / one_p50 <= TARGET_OFREP_RATIO,
        ),
        (
            "  same, thread CPU time p50 (load-proof)",
            f"{ofrep_cpu / 1000:.1f} / {one_cpu / 1000:.1f} us = {ofrep_cpu / one_cpu:.2f}",
            f"<= {TARGET_OFREP_RATIO}",
            ofrep_cpu / one_cpu <= TARGET_OFREP_RATIO,
        ),
        (
            "stdout bytes, 1,000 cached GET /flags (INFO)",
            f"{warm['quiet_bytes']} B",
            f"<= {TARGET_STDOUT_BYTES} B",
            warm["quiet_bytes"] <= TARGET_STDOUT_BYTES,
        ),
        (f"cold import + 1st GET /flags (median of {COLD_PAIRS})", f"{cold_handler * 1000:.1f} ms", "", None),
        (f"cold floor boto3 + client + GetItem (median of {COLD_PAIRS})", f"{cold_floor * 1000:.1f} ms", "", None),
        ("cold ratio", f"{cold_ratio:.2f}", f"<= {TARGET_COLD_RATIO}", cold_ratio <= TARGET_COLD_RATIO),
        (
            "  same, median of the per-pair ratios (each pair run back to back)",
            f"{paired_ratio:.2f}",
            f"<= {TARGET_COLD_RATIO}",
            paired_ratio <= TARGET_COLD_RATIO,
        ),
        (
            "  same, process CPU time (load-proof)",
            f"{cpu_handler * 1000:.0f} / {cpu_floor * 1000:.0f} ms = {cold_cpu_ratio:.2f}",
            f"<= {TARGET_COLD_RATIO}",
            cold_cpu_ratio <= TARGET_COLD_RATIO,
        ),
        (
            "  floor + Powertools Logger, resolver, BaseProvider, collector paused (no code of ours)",
            f"{cold_powertools * 1000:.1f} ms = {cold_powertools / cold_floor:.2f}",
            "",
            None,
        ),
        (
            "  read handler / that Powertools floor (what our code adds)",
            f"{cold_handler / cold_powertools:.2f}",
            "",
            None,
        ),
        (
            "  control: read handler with the collector left on, / floor",
            f"{cold_collector_on * 1000:.1f} ms = {cold_collector_on / cold_floor:.2f}",
            "",
            None,
        ),
    ]
    width = max(len(row[0]) for row in rows)
    print(f"  {'figure':<{width}}  {'value':>20}  {'target':>9}  result")
    for label, value, target, ok in rows:
        print(f"  {label:<{width}}  {value:>20}  {target:>9}  {'' if ok is None else verdict(ok)}")
    print(f"  decorators of the read handler (and the baseline): {warm['decorators']}")
    print(
        f"  every warm response 200: {warm['statuses'] == {200}}; stdout of the whole warm run: "
        f"{warm['warm_bytes']} B; stub DynamoDB GetItems served: {cold['served']}"
    )
    print(
        "  cold pairs, wall ms (handler/floor): "
        + ", ".join(
            f"{h['seconds'] * 1000:.0f}/{f['seconds'] * 1000:.0f}"
            for h, f in zip(cold["handler"], cold["floor"], strict=True)
        )
    )
    if warm_ratio > TARGET_WARM_RATIO:
        print("  warm MISS, where the read handler spends its time (cProfile, cumulative per invocation):")
        print("    " + "\n    ".join(warm["profile"].splitlines()))
    print(
        "  cold start, CPU ms per phase in one fresh interpreter, collector paused as in the handler "
        "(median of 3; the floor is the first 3 rows):"
    )
    for label, seconds in cold["phases"].items():
        print(f"    {seconds * 1000:8.1f} ms  {label}")


if __name__ == "__main__":
    main()
