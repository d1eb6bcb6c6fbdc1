"""The runner's change events (``GET /_events``): the table's own stream, read as Lambda's event source mapping
reads it, through the deployed publisher (``singleton_flags_service.events.ChangePublisher``) into an in-memory bus.

The write function never publishes, here as deployed: an event exists because its audit record reached the
stream. Each ``GET /_events`` reads what the stream holds beyond what was already read (every shard, from the
oldest record the first time), keeps the records ``STREAM_FILTERS`` let through (as the mapping's filters do),
hands them to the publisher in a Lambda-shaped event, checks the flags item's new images against their audit
records (``AuditCheck``: an unaudited write is listed in ``errors``), and answers every event published since the
runner started, oldest first. Works on the embedded moto and on DynamoDB Local (``AWS_ENDPOINT_URL_DYNAMODB``), whose
stream endpoint is its DynamoDB endpoint.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from singleton_flags.keys import PARTITION_KEY, SORT_KEY
from singleton_flags_infra.constants import event_bus_name
from singleton_flags_service.events import AuditCheck, ChangePublisher, is_flags_item_record, is_published_record

NEW_IMAGE_VIEWS = ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")
# botocore sends a call naming a stream ARN to the account's own endpoint (<account>.streams-ddb.<region>...),
# which the embedded moto does not answer; the regional endpoint serves the same API.
STREAMS_CLIENT_CONFIG = Config(account_id_endpoint_mode="disabled")


class StreamUnavailable(RuntimeError):
    """The table has no stream the runner can read (the message says why)."""


class LocalBus:
    """PutEvents as EventBridge answers it (one result per entry, in order), keeping what it accepted."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def put_events(self, **params: Any) -> dict[str, Any]:
        results = []
        for entry in params["Entries"]:
            event_id = str(uuid.uuid4())
            time = entry["Time"]
            self.events.append(
                {
                    "id": event_id,
                    "source": entry["Source"],
                    "detail-type": entry["DetailType"],
                    "event-bus-name": entry["EventBusName"],
                    # as EventBridge's envelope gives it: UTC, to the second
                    "time": time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if isinstance(time, datetime) else time,
                    "detail": json.loads(entry["Detail"]),
                }
            )
            results.append({"EventId": event_id})
        return {"FailedEntryCount": 0, "Entries": results}


def lambda_record(record: Mapping[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as Lambda hands it to a function (``eventSourceARN``, epoch creation time)."""
    stream = dict(record["dynamodb"])
    created = stream.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        stream["ApproximateCreationDateTime"] = created.timestamp()
    return {**record, "dynamodb": stream, "eventSourceARN": stream_arn}


class StreamEvents:
    """Reads the flags table's stream on demand and publishes its change records to a ``LocalBus``."""

    def __init__(self, table_name: str, stage: str, *, endpoint_url: str | None = None) -> None:
        self._table = table_name
        self._endpoint = endpoint_url or None
        self.bus = LocalBus()
        self._publisher = ChangePublisher(self.bus.put_events, event_bus_name=event_bus_name(stage), stage=stage)
        self._lock = threading.Lock()
        self._after: dict[str, str] = {}  # shard id -> the last sequence number read
        self._closed: set[str] = set()  # shards read to their end
        self.errors: list[str] = []

    def events(self) -> list[dict[str, Any]]:
        """Every event published so far, after reading what the stream holds now."""
        with self._lock:
            self._poll()
            return list(self.bus.events)

    def _clients(self) -> tuple[Any, Any]:
        return (
            boto3.client("dynamodb", endpoint_url=self._endpoint),
            boto3.client("dynamodbstreams", endpoint_url=self._endpoint, config=STREAMS_CLIENT_CONFIG),
        )

    def _poll(self) -> None:
        dynamodb, streams = self._clients()
        try:
            table = dynamodb.describe_table(TableName=self._table)["Table"]
            view = table.get("StreamSpecification", {}).get("StreamViewType")
            stream_arn = table.get("LatestStreamArn")
            if not stream_arn or view not in NEW_IMAGE_VIEWS:
                raise StreamUnavailable(
                    f"table {self._table} has no NEW_IMAGE stream (view: {view or 'none'}): delete it and restart "
                    "the runner, which creates it with one"
                )
            records = self._read(streams, stream_arn)
        except (ClientError, BotoCoreError) as exc:
            raise StreamUnavailable(f"cannot read the stream of table {self._table}: {exc}") from exc
        changes = [lambda_record(record, stream_arn) for record in records if is_published_record(record)]
        if changes:
            result = self._publisher.publish({"Records": changes})
            self.errors.extend(result.errors)  # a record no retry can publish here is skipped, and said
        writes = [
            lambda_record(record, stream_arn)
            for record in records
            if is_flags_item_record(record) and not _key_only_insert(record)
        ]
        if writes:
            check = AuditCheck(dynamodb.get_item, table_name=self._table).check({"Records": writes})
            self.errors.extend(check.errors)
            self.errors.extend(
                f"unaudited write to the flags item: {json.dumps(found.log_fields(), default=str)}"
                for found in check.unaudited
            )

    def _read(self, streams: Any, stream_arn: str) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        params: dict[str, Any] = {"StreamArn": stream_arn}
        while True:
            description = streams.describe_stream(**params)["StreamDescription"]
            shards.extend(description.get("Shards", []))
            last = description.get("LastEvaluatedShardId")
            if not last:
                break
            params["ExclusiveStartShardId"] = last
        records: list[dict[str, Any]] = []
        for shard in _parents_first(shards):
            shard_id = shard["ShardId"]
            if shard_id in self._closed:
                continue
            records.extend(self._read_shard(streams, stream_arn, shard_id))
        return records

    def _read_shard(self, streams: Any, stream_arn: str, shard_id: str) -> list[dict[str, Any]]:
        # A fresh iterator each time (iterators expire after 15 minutes): after the last record read, or from
        # the oldest record the shard holds.
        position: dict[str, str] = (
            {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": self._after[shard_id]}
            if shard_id in self._after
            else {"ShardIteratorType": "TRIM_HORIZON"}
        )
        iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard_id, **position).get("ShardIterator")
        records: list[dict[str, Any]] = []
        while iterator:
            page = streams.get_records(ShardIterator=iterator)
            batch = page.get("Records", [])
            records.extend(batch)
            if batch:
                self._after[shard_id] = batch[-1]["dynamodb"]["SequenceNumber"]
            iterator = page.get("NextShardIterator")
            if not batch:
                break
        if not iterator:
            self._closed.add(shard_id)
        return records


def _parents_first(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A parent shard's records come before its children's (DynamoDB Streams' order across a split)."""
    ids = {shard["ShardId"] for shard in shards}
    ordered: list[dict[str, Any]] = []
    placed: set[str] = set()
    pending = list(shards)
    while pending:
        progress = False
        for shard in list(pending):
            parent = shard.get("ParentShardId")
            if parent is None or parent not in ids or parent in placed:
                ordered.append(shard)
                placed.add(shard["ShardId"])
                pending.remove(shard)
                progress = True
        if not progress:  # a cycle cannot happen; keep whatever is left in the stream's own order
            ordered.extend(pending)
            break
    return ordered


def _key_only_insert(record: Mapping[str, Any]) -> bool:
    """An INSERT whose new image is the item's key alone. The embedded moto records an update that creates an item
    as two INSERTs, the key first, then the whole item; DynamoDB records one. The runner checks the whole one only.
    The deployed check never skips it: there an item written with its key alone is an unaudited write."""
    image = record.get("dynamodb", {}).get("NewImage", {})
    return record.get("eventName") == "INSERT" and set(image) <= {PARTITION_KEY, SORT_KEY}
