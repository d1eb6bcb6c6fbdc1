"""The Lambda functions, loaded from the handler strings the stack deploys
(``singleton_flags_service.contract.HANDLERS``).

Each handler module is imported once (its cold start) and keeps its module-scope state, so every function
has its own provider cache, as separate execution environments would. Lambda runs one request at a time
per environment; the functions here also share the process's Powertools logger and metrics singletons and
the in-process moto backend (whose conditional writes are not atomic), so invocations are serialised by
one lock. The HTTP server stays threaded: the documents and the Swagger page are served without it.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from local.gateway import LambdaContext
from singleton_flags_infra.constants import TIMEOUT_SECONDS

Handler = Callable[[Any, Any], Any]


def load_module(module_name: str, *, fresh: bool = False) -> ModuleType:
    """A handler module (``singleton_flags_service.handlers.read_api``), imported as Lambda imports it from the
    asset: once per process (``fresh``: run its module scope again, a new cold start)."""
    if not fresh and module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no handler module {module_name!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def load_handler(handler_string: str) -> Handler:
    """``singleton_flags_service.handlers.read_api.handler`` -> the function object (loading its module: a cold
    start)."""
    module_name, _, attribute = handler_string.rpartition(".")
    handler: Handler = getattr(load_module(module_name), attribute)
    return handler


class Functions:
    def __init__(self, handlers: Mapping[str, Handler], name_prefix: str = "singleton-flags-local") -> None:
        self._handlers = dict(handlers)
        self._prefix = name_prefix
        self._lock = threading.Lock()

    def invoke(self, function: str, event: Any, request_id: str | None = None) -> Any:
        # each function's deployed timeout: the writers' time budgets (and their retries) are the deployed ones
        context = LambdaContext(function_name=f"{self._prefix}-{function}", timeout_seconds=TIMEOUT_SECONDS[function])
        if request_id is not None:
            context.aws_request_id = request_id
        with self._lock:
            return self._handlers[function](event, context)
