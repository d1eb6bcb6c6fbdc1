"""``flagctl set ... --wait``: after the change is applied, wait until its version is seen served by the readers.

Two ways to see what readers serve, the same question asked of each (``Observe``):
- the local runner (a loopback URL): its runner-only ``GET /_served`` answers what each of its readers served at its
  last read, at once;
- a deployed stage: CloudWatch's ``GetMetricData`` on ``ServedVersion`` (Minimum, per reason, one-minute periods)
  in the stage's namespace, over the periods that began after the change, signed with the runtime library's
  SigV4 signer, in CloudWatch's JSON protocol. Readers print that metric at most once a minute and CloudWatch
  has it a minute later or more: a wait of under two or three minutes seldom sees anything.

Seen: the readers heard from since the change all serve the new version or a newer one. Readers that did not read
since the change print nothing: when none did, it cannot be known (exit ``NOT_SEEN``, as when some still serve an
older version at the timeout).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flagctl.client import Answer, FlagsClient, Outgoing, Transport, http_transport
from flagctl.errors import BAD_INPUT, SERVER, FlagctlError

SERVED_PATH = "/_served"
SERVED_VERSION = "ServedVersion"  # singleton_flags.vocabulary.SERVED_VERSION
REASONS = ("STATIC", "CACHED", "STALE", "DEFAULT")
NAMESPACE_PREFIX = "SingletonFlags/"  # the stack's namespace is SingletonFlags/<stage>
PERIOD_SECONDS = 60
POLL_SECONDS_LOCAL = 0.5
POLL_SECONDS_CLOUDWATCH = 15.0
JSON_TARGET = "GraniteServiceVersion20100801.GetMetricData"
JSON_CONTENT_TYPE = "application/x-amz-json-1.0"


@dataclass(frozen=True)
class Sighting:
    """What the readers were seen serving since the change: how many were heard from, the oldest version."""

    seen: bool
    readers: int
    oldest: int | None

    def words(self, version: int) -> str:
        if self.seen:
            return f"version {version} is served by every reader heard from since the change ({self.readers})"
        if self.readers == 0:
            return "no reader was heard from since the change (idle readers print nothing), so it cannot be known"
        return f"readers heard from since the change still serve version {self.oldest}"


Observe = Callable[[int, float], Sighting]  # (version, when the change was sent: epoch seconds) -> Sighting


def runner_readers(client: FlagsClient) -> list[Mapping[str, Any]]:
    """The local runner's readers (its runner-only ``GET /_served``): what each served at its last read, and when;
    an answer that is not the runner's is an error, never an empty list."""
    answer = client.request("GET", SERVED_PATH)
    readers = answer.body.get("readers") if isinstance(answer.body, Mapping) else None
    if answer.status != 200 or not isinstance(readers, list):
        raise FlagctlError(
            f"the runner's {SERVED_PATH} did not answer its readers (HTTP {answer.status}): is this the local runner?",
            SERVER,
            "BAD_ANSWER",
        )
    return [reader for reader in readers if isinstance(reader, Mapping)]


def runner_observer(client: FlagsClient) -> Observe:
    """What the local runner's readers serve now (``GET /_served``)."""

    def observe(version: int, since: float) -> Sighting:
        versions = [
            reader["version"]
            for reader in runner_readers(client)
            if isinstance(reader.get("version"), int)
            and isinstance(reader.get("last_read_at"), (int, float))
            and reader["last_read_at"] >= since
        ]
        oldest = min(versions) if versions else None
        return Sighting(oldest is not None and oldest >= version, len(versions), oldest)

    return observe


def stage_namespace(api_url: str) -> str:
    """``SingletonFlags/prod`` for ``https://abc.execute-api.eu-west-1.amazonaws.com/prod``."""
    stage = urlsplit(api_url).path.strip("/").split("/")[0]
    if not stage:
        raise FlagctlError(
            f"cannot tell the stage of {api_url}: give --wait-namespace SingletonFlags/<stage>", BAD_INPUT, "BAD_INPUT"
        )
    return NAMESPACE_PREFIX + stage


def metric_data_request(namespace: str, start: float, end: float) -> dict[str, Any]:
    """GetMetricData's input: the oldest ServedVersion per reason, per minute, from ``start`` to ``end``."""
    return {
        "MetricDataQueries": [
            {
                "Id": reason.lower(),
                "MetricStat": {
                    "Metric": {
                        "Namespace": namespace,
                        "MetricName": SERVED_VERSION,
                        "Dimensions": [{"Name": "reason", "Value": reason}],
                    },
                    "Period": PERIOD_SECONDS,
                    "Stat": "Minimum",
                },
                "ReturnData": True,
            }
            for reason in REASONS
        ],
        "StartTime": int(start),
        "EndTime": int(end),
        "ScanBy": "TimestampAscending",
    }


def sighting_of(results: Any, version: int, since: float) -> Sighting:
    """From GetMetricData's ``MetricDataResults``: the periods that began at or after ``since``, the latest one
    deciding (the oldest version any reader served in it)."""
    if not isinstance(results, list):
        raise FlagctlError("CloudWatch answered no MetricDataResults", SERVER, "BAD_ANSWER")
    by_period: dict[float, list[float]] = {}
    for result in results:
        timestamps = result.get("Timestamps", []) if isinstance(result, dict) else []
        values = result.get("Values", []) if isinstance(result, dict) else []
        for timestamp, value in zip(timestamps, values, strict=False):
            if isinstance(timestamp, (int, float)) and isinstance(value, (int, float)) and timestamp >= since:
                by_period.setdefault(float(timestamp), []).append(float(value))
    if not by_period:
        return Sighting(False, 0, None)
    latest = by_period[max(by_period)]
    oldest = int(min(latest))
    return Sighting(oldest >= version, len(latest), oldest)


def cloudwatch_observer(
    region: str,
    namespace: str,
    signer: Callable[[Outgoing], Outgoing],
    transport: Transport = http_transport,
    clock: Callable[[], float] = time.time,
) -> Observe:
    """What CloudWatch has of the readers' ServedVersion since the change (a minute late or more)."""
    url = f"https://monitoring.{region}.amazonaws.com/"

    def observe(version: int, since: float) -> Sighting:
        start = since - since % PERIOD_SECONDS  # periods are whole minutes; only those beginning after ``since`` count
        body = json.dumps(metric_data_request(namespace, start, clock() + PERIOD_SECONDS)).encode("utf-8")
        headers = {"Content-Type": JSON_CONTENT_TYPE, "X-Amz-Target": JSON_TARGET, "Accept": "application/json"}
        answer: Answer = transport(signer(Outgoing("POST", url, headers, body)))
        if answer.status != 200 or not isinstance(answer.body, Mapping):
            raise FlagctlError(
                f"CloudWatch GetMetricData failed (HTTP {answer.status}): {answer.body!r:.200} "
                "(the admin policy grants cloudwatch:GetMetricData)",
                SERVER,
                "CLOUDWATCH_ERROR",
            )
        return sighting_of(answer.body.get("MetricDataResults"), version, since)

    return observe


def wait_until_served(
    observe: Observe,
    version: int,
    since: float,
    timeout: float,
    *,
    poll: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Sighting:
    """Ask ``observe`` until the version is seen served or ``timeout`` seconds have passed; the last sighting."""
    deadline = clock() + timeout
    while True:
        sighting = observe(version, since)
        left = deadline - clock()
        if sighting.seen or left <= 0:
            return sighting
        sleep(min(poll, left))
