"""``python -m local.openapi`` prints the API's OpenAPI document (``singleton_flags_service.api.openapi``), as the
local runner serves it at ``/openapi.json``: the write function is loaded with the runner's local defaults."""

from __future__ import annotations

import json
import os
import sys

from local.functions import load_module
from local.scheduler import local_one_time_environment
from singleton_flags_service.api.openapi import build_document
from singleton_flags_service.contract import load_service_declarations


def main() -> int:
    """Print the document (the functions' environment gets local defaults, as in the runner)."""
    for key, value in {
        "TABLE_NAME": "singleton-flags-local",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "1",
        **local_one_time_environment("us-east-1"),
    }.items():
        os.environ.setdefault(key, value)

    app = load_module("singleton_flags_service.handlers.write_api").app

    print(json.dumps(build_document(app, list(load_service_declarations())), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
