"""The low-level DynamoDB client, built once per execution environment.

Endpoint resolution is botocore's default, so ``AWS_ENDPOINT_URL_DYNAMODB`` redirects every function
(DynamoDB Local in tests, the local runner's backend). The read client fails fast: one attempt,
0.5 s to connect, 1 s to read, so a dead or black-holed endpoint holds a request at most ~1.5 s and the
reader's stale/fallback policy takes over. Writers may wait a little longer and retry once.
"""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

__all__ = [
    "READ_CLIENT_CONFIG",
    "WRITE_CLIENT_CONFIG",
    "dynamodb_client",
    "worst_call_seconds",
]

READ_CLIENT_CONFIG = Config(
    connect_timeout=0.5, read_timeout=1.0, retries={"total_max_attempts": 1, "mode": "standard"}
)
WRITE_CLIENT_CONFIG = Config(
    connect_timeout=1.0, read_timeout=2.0, retries={"total_max_attempts": 2, "mode": "standard"}
)


def dynamodb_client(config: Config = READ_CLIENT_CONFIG) -> Any:
    return boto3.client("dynamodb", config=config)


def worst_call_seconds(config: Config) -> float:
    """The longest one call can take with ``config``: every attempt connecting and reading to its timeout."""
    # botocore-stubs declare Config's options as __init__ parameters only, not as the attributes Config sets
    attempts = (config.retries or {}).get("total_max_attempts", 1)  # type: ignore[attr-defined]
    return float((config.connect_timeout + config.read_timeout) * attempts)  # type: ignore[attr-defined]
