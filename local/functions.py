"""The three Lambda functions, loaded from the handler strings the stack deploys (``flags.routes.HANDLERS``).

Each handler module is imported once (its cold start) and keeps its module-scope state, so every function
has its own provider cache, as separate execution environments would. Lambda runs one request at a time
per environment; the functions here also share the process's Powertools logger and metrics singletons and
the in-process moto backend (whose conditional writes are not atomic), so invocations are serialised by
one lock. The HTTP server stays threaded: the documents and the Swagger page are served without it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

from local.gateway import LambdaContext

Handler = Callable[[Any, Any], Any]


def load_handler(handler_string: str) -> Handler:
    """``read_api.handler.handler`` -> the function object (importing its module: a cold start)."""
    module_name, _, attribute = handler_string.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


class Functions:
    def __init__(self, handlers: Mapping[str, Handler], name_prefix: str = "singleton-flags-local") -> None:
        self._handlers = dict(handlers)
        self._prefix = name_prefix
        self._lock = threading.Lock()

    def invoke(self, function: str, event: Any, request_id: str | None = None) -> Any:
        context = LambdaContext(function_name=f"{self._prefix}-{function}")
        if request_id is not None:
            context.aws_request_id = request_id
        with self._lock:
            return self._handlers[function](event, context)
