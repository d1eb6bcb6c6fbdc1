"""The protocol of a Lambda-backed CloudFormation custom resource, with the standard library only.

CloudFormation invokes the function with the request (``RequestType`` Create / Update / Delete,
``ResourceProperties``, a pre-signed ``ResponseURL``) and waits for a JSON document PUT to that URL. ``run``
always answers: SUCCESS with the work's physical id and data, or FAILED with the reason (and the log
stream), so a failure fails the deploy at once instead of holding it until the resource's timeout.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

SUCCESS = "SUCCESS"
FAILED = "FAILED"
REASON_LIMIT = 1000  # the whole response must stay under 4 KB
SEND_ATTEMPTS = 3

logger = logging.getLogger("custom_resource")
logger.setLevel(logging.INFO)

Work = Callable[[Mapping[str, Any]], tuple[str, dict[str, str]]]


def send_response(url: str, body: Mapping[str, Any]) -> None:
    """PUT the response to CloudFormation's pre-signed S3 URL (no Content-Type: it is part of the signature)."""
    data = json.dumps(body).encode()
    for attempt in range(1, SEND_ATTEMPTS + 1):
        request = urllib.request.Request(  # noqa: S310 - CloudFormation's https URL
            url, data=data, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(data))}
        )
        try:
            with urllib.request.urlopen(request, timeout=10):  # noqa: S310 - CloudFormation's https URL
                return
        except OSError:
            if attempt == SEND_ATTEMPTS:
                raise
            time.sleep(attempt)


def run(
    event: Mapping[str, Any],
    context: Any,
    work: Work,
    *,
    default_physical_id: str,
    send: Callable[[str, Mapping[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Do ``work(event)`` -> (physical id, data) and answer CloudFormation whatever happens."""
    physical_id = event.get("PhysicalResourceId") or default_physical_id
    try:
        physical_id, data = work(event)
        status, reason = SUCCESS, ""
    except Exception as exc:  # any failure must reach CloudFormation as FAILED
        logger.exception("custom resource %s failed", event.get("RequestType"))
        stream = getattr(context, "log_stream_name", "?")
        status, data = FAILED, {}
        reason = f"{type(exc).__name__}: {exc}"[:REASON_LIMIT] + f" (log stream {stream})"
    body = {
        "Status": status,
        "Reason": reason or "done",
        "PhysicalResourceId": physical_id,
        "StackId": event["StackId"],
        "RequestId": event["RequestId"],
        "LogicalResourceId": event["LogicalResourceId"],
        "NoEcho": False,
        "Data": data,
    }
    logger.info("custom resource %s: %s %s", event.get("RequestType"), status, reason or physical_id)
    (send or send_response)(event["ResponseURL"], body)
    return body
