"""``python -m local``: the whole API on http://127.0.0.1:3000 over an embedded (or the named) DynamoDB.

Start-up, in order, each failure one line on stderr and exit status 1 (no traceback):
cdk.json and the declarations -> the functions' environment and deployment document -> the port (bound before
anything slow) -> DynamoDB (table created if absent, then seeded) -> the functions' cold starts -> the banner.
Ctrl-C (or SIGTERM) stops it and exits 0.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from flagctl.http_server import LOOPBACK, LocalServer
from local.alarms import LocalAlarms
from local.api import LocalApi
from local.backend import (
    ENDPOINT_ENV,
    BackendError,
    TableReads,
    choose_backend,
    handler_environment,
    prepare_table,
)
from local.events import StreamEvents
from local.functions import Functions, load_handler
from local.scheduler import (
    Deliveries,
    LocalScheduler,
    local_one_time_environment,
    target_function,
    use_local_scheduler,
)
from singleton_flags.declarations import Declarations
from singleton_flags_infra.config import (
    ConfigError,
    FlagsConfig,
    deployment_document,
    function_environment as deployed_environment,
    load_config,
)
from singleton_flags_service import contract, vocabulary
from singleton_flags_service.api.openapi import build_document
from singleton_flags_service.contract import (
    GUARD_FUNCTION,
    HANDLERS,
    MAINTENANCE_FUNCTION,
    WRITE_FUNCTION,
    SettingsError,
    WriteConfiguration,
    load_service_declarations,
)
from singleton_flags_service.errors import DeclarationError

DEFAULT_PORT = 3000
DEFAULT_TABLE = "singleton-flags-local"
DEFAULT_REGION = "us-east-1"
LOCAL_ACTOR = "local-admin"
PREFIX = "singleton-flags local:"
HANDLER_LINE = "  Your handler reads these flags through the embedded client with (the runner's fake credentials):"


class StartupError(RuntimeError):
    """The runner cannot start; the message is the one line it prints."""


def parse_port(raw: str | None) -> int:
    value = (raw or "").strip() or str(DEFAULT_PORT)
    if not re.fullmatch(r"[0-9]{1,5}", value) or not 0 <= int(value) <= 65535:  # ASCII digits only
        raise StartupError(f"PORT must be a port number (0-65535; 0 picks a free one), got {raw!r}")
    return int(value)


def write_deployment_document(config: FlagsConfig, directory: Path) -> Path:
    """The deployment document the stack would ship for cdk.json (infra/assets.py), written into ``directory``:
    the functions run from the checkout, whose package holds none."""
    path = directory / contract.DEPLOYMENT_FILE.name
    path.write_text(deployment_document(config), encoding="utf-8")
    return path


def function_environment(config: FlagsConfig, env: Mapping[str, str], document: Path) -> dict[str, str]:
    """What the stack puts in the functions' environment (infra/functions.py), with local values, and the
    deployment document they read (``document``, from ``write_deployment_document``).

    The user's own TABLE_NAME, cache age, region... win; the windows always come from cdk.json, as deployed.
    """
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
    deployed = {  # one process: the widest env (every writer's settings, the write function's guard prefix)
        **deployed_environment(config, DEFAULT_TABLE, MAINTENANCE_FUNCTION),
        **deployed_environment(config, DEFAULT_TABLE, WRITE_FUNCTION),
    }
    defaults = {
        **deployed,
        **local_one_time_environment(region),
        contract.LOCAL_ACTOR: LOCAL_ACTOR,
        "POWERTOOLS_METRICS_DISABLED": "1",  # no EMF blobs in a terminal
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
    }
    resolved = {key: env.get(key) or value for key, value in defaults.items()}
    resolved[contract.DEPLOYMENT_FILE_VARIABLE] = str(document)
    resolved["POWERTOOLS_TRACE_DISABLED"] = "1"  # no X-Ray daemon here
    return resolved


def _load() -> tuple[FlagsConfig, Declarations]:
    try:
        config = load_config()
    except ConfigError as exc:
        raise StartupError(f"broken configuration in cdk.json: {exc}") from exc
    try:
        declarations = load_service_declarations()
    except DeclarationError as exc:
        raise StartupError(f"broken flag declarations: {exc}") from exc
    return config, declarations


def _bind(port: int) -> LocalServer:
    try:
        return LocalServer(port)
    except OSError as exc:
        if exc.errno in (98, 48):  # EADDRINUSE on Linux, macOS
            raise StartupError(f"port {port} on {LOOPBACK} is already in use: stop what holds it or set PORT") from exc
        raise StartupError(f"cannot listen on {LOOPBACK}:{port}: {exc.strerror or exc}") from exc


def _cold_starts() -> Functions:
    handlers = {}
    for name, target in HANDLERS.items():
        try:
            handlers[name] = load_handler(target)
        except Exception as exc:  # a cold start that raises, whatever it raises, is one line
            raise StartupError(
                f"the {name} function ({target}) failed its cold start: {type(exc).__name__}: {exc}"
            ) from exc
    return Functions(handlers, name_prefix=f"{vocabulary.DEFAULT_SERVICE}-local")


def use_local_alarms() -> LocalAlarms:
    """The write and guard functions read alarm states from the runner's registry (local/alarms.py): nothing
    reaches CloudWatch. (Their close schedules go to the runner's scheduler: local.scheduler.)"""
    alarms = LocalAlarms()
    write = sys.modules[HANDLERS[WRITE_FUNCTION].rpartition(".")[0]]
    write.GUARDS.alarms = alarms
    sys.modules[HANDLERS[GUARD_FUNCTION].rpartition(".")[0]].GUARDS.alarms = alarms
    return alarms


def banner(
    url: str,
    config: FlagsConfig,
    declarations: Declarations,
    backend_label: str,
    table: str,
    handler_env: Mapping[str, str] | None = None,
) -> str:
    flag = next((spec for spec in declarations.values() if spec.type == "bool"), None)
    change = f'{{"{flag.name}": {str(not flag.initial).lower()}}}' if flag else "{}"
    windows = [window.name for window in config.maintenance_windows]
    lines = [
        "singleton-flags: local runner",
        f"  API         {url}  (caller: {LOCAL_ACTOR}, stage {config.stage})",
        f"  Console     {url}/",
        f"  Swagger UI  {url}/docs",
        f"  OpenAPI     {url}/openapi.json",
        f"  DynamoDB    {backend_label}, table {table}",
    ]
    lines += [f"  Schedules   POST {url}/_scheduler/{window}/start  (or /end)" for window in windows]
    lines.append(f"  Events      GET {url}/_events  (Flags Changed, from the table's stream)")
    lines.append(f"  Scheduled   changes delivered when due; POST {url}/_scheduler/changes/{{id}} delivers one now")
    lines.append(f"  Alarms      POST {url}/_alarms/{config.guard_prefix}<name> (guarded changes; local registry)")
    if handler_env:
        lines.append(HANDLER_LINE)
        lines.append("    " + " ".join(f"{name}={value}" for name, value in handler_env.items()))
    lines += [
        "Try:",
        f"  curl -i {url}/flags",
        f"  curl -i -X PATCH {url}/flags -H 'Content-Type: application/json' "
        f'-d \'{{"flags": {change}, "reason": "trying the local runner"}}\'',
        f"  curl -s {url}/flags/history",
        "Ctrl-C stops it.",
    ]
    return "\n".join(lines)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def run() -> None:
    port = parse_port(os.environ.get("PORT"))
    config, declarations = _load()
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="singleton-flags-local-")))
        os.environ.update(function_environment(config, os.environ, write_deployment_document(config, directory)))
        try:
            settings = WriteConfiguration.from_env(os.environ).settings  # the widest reader: every function's
        except SettingsError as exc:
            raise StartupError(f"bad function environment: {exc}") from exc
        server = _bind(port)
        stack.callback(server.server_close)
        backend = choose_backend(os.environ)
        backend.start()
        stack.callback(backend.stop)
        try:
            created = prepare_table(settings.table_name, settings.item_sort_key, declarations, backend.label)
        except BackendError as exc:
            raise StartupError(str(exc)) from exc
        functions = _cold_starts()
        write_module = sys.modules[HANDLERS[WRITE_FUNCTION].rpartition(".")[0]]
        scheduler = LocalScheduler()
        use_local_scheduler(write_module, scheduler)
        deliveries = Deliveries(scheduler, lambda payload: functions.invoke(target_function(payload), payload))
        deliveries.start()
        stack.callback(deliveries.stop)
        document = build_document(write_module.app, list(declarations), server_url=server.url, stage=config.stage)
        events = StreamEvents(settings.table_name, config.stage, endpoint_url=os.environ.get(ENDPOINT_ENV, "").strip())
        server.api = LocalApi(
            functions,
            config,
            document,
            alarms=use_local_alarms(),
            events=events,
            scheduler=scheduler,
            table_reads=TableReads(settings.table_name),
        )
        state = "created and seeded" if created else "seeded (existing values kept)"
        handler_env = handler_environment(
            server.url, settings.table_name, os.environ["AWS_REGION"], settings.item_sort_key
        )
        table = f"{settings.table_name} ({state})"
        print(banner(server.url, config, declarations, backend.label, table, handler_env), flush=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored (`&`)
        signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            # `make run` under Ctrl-C or `timeout` may deliver a second signal: the stop is already under way
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print("\nsingleton-flags: local runner stopped", flush=True)


def main() -> int:
    try:
        run()
    except StartupError as exc:
        print(f"{PREFIX} {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
