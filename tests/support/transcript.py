"""A transcript of the write path: each step a caller or an automatic writer takes against a local runner on
DynamoDB Local, with the answer it got and every item of the table the step put or deleted.

What changes from run to run is masked, the same value always by the same mask, so a transcript says which
step's item names which other item: times (``<time>``), epoch seconds (``<epoch>``), UUIDs, scheduled changes' ids,
hexadecimal digests and opaque tokens (``<uuid:1>``, ``<schedule:1>``, ``<hex:2>``, ``<token:3>``, numbered in order
of appearance). A recorded
transcript is compared as a whole, so a change to any answer or any stored byte of the write path shows as a diff.
"""

from __future__ import annotations

import base64
import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from tests.support.runner import Answer, Runner

_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_COMPACT_TIME = re.compile(r"\d{8}T\d{6}Z")
# A scheduled change's id: its time and random hexadecimal digits, which may all be decimal ones.
_SCHEDULE_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{8}(?![0-9A-Za-z])")
_HEX = re.compile(r"(?<![0-9A-Za-z])(?=[a-f]*[0-9])[0-9a-f]{8,}(?![0-9A-Za-z])")  # with a digit: not a word
# How long a write kept retrying before its time budget ran out: the count depends on the machine's speed.
_GAVE_UP = re.compile(r"gave up after \d+ attempts in [0-9.]+ s")
_TOKEN = re.compile(r"^(?=.*[0-9])(?=.*[a-z])(?=.*[A-Z])[A-Za-z0-9_\-+/]{24,}={0,2}$")  # base64 of something
_EPOCH_SECONDS = (1_500_000_000, 5_000_000_000)
_EPOCH_MILLISECONDS = (1_500_000_000_000, 5_000_000_000_000)
# Answer headers a transcript keeps: the ones the write path sets and a client acts on.
KEPT_HEADERS = ("ETag", "Idempotent-Replayed", "Location")


@dataclass
class Masker:
    """Replaces what varies between runs by stable placeholders."""

    seen: dict[tuple[str, str], str] = field(default_factory=dict)
    literals: dict[str, str] = field(default_factory=dict)  # a run's own names (its table, its runner's URL)

    def _named(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self.seen:
            self.seen[key] = f"<{kind}:{sum(1 for known in self.seen if known[0] == kind) + 1}>"
        return self.seen[key]

    def text(self, value: str) -> str:
        for literal, placeholder in self.literals.items():
            value = value.replace(literal, placeholder)
        value = _SCHEDULE_ID.sub(lambda match: self._named("schedule", match.group(0)), value)
        if _TOKEN.match(value):
            return self._named("token", value)
        value = _UUID.sub(lambda match: self._named("uuid", match.group(0).lower()), value)
        value = _TIME.sub("<time>", _COMPACT_TIME.sub("<time>", value))
        value = _GAVE_UP.sub("gave up after <n> attempts in <s> s", value)
        return _HEX.sub(self._hex, value)

    def _hex(self, match: re.Match[str]) -> str:
        digest = match.group(0)
        return digest if digest.isdigit() else self._named("hex", digest)  # a zero-padded version stays

    def number(self, value: int | float) -> Any:
        for low, high in (_EPOCH_SECONDS, _EPOCH_MILLISECONDS):
            if low <= value < high:
                return "<epoch>"
        return value

    def __call__(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            masked = {self.text(str(key)): self(value[key]) for key in sorted(value, key=str)}
            if value.get("code") == "WRITE_CONFLICT" and "attempts" in masked:
                masked["attempts"] = "<n>"  # see _GAVE_UP
            return masked
        if isinstance(value, list | tuple):
            return [self(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return self.number(value)
        return self.text(str(value))


def plain(value: Any) -> Any:
    """A deserialized DynamoDB value as JSON holds it: numbers as int or float, sets as sorted lists, bytes as
    base64."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted(plain(item) for item in value)
    if isinstance(value, bytes | bytearray):
        return {"bytes": base64.b64encode(bytes(value)).decode()}
    if hasattr(value, "value") and isinstance(value.value, bytes):  # boto3's Binary
        return {"bytes": base64.b64encode(value.value).decode()}
    return value


def scan(client: Any, table: str) -> dict[tuple[str, str], dict[str, Any]]:
    """Every item of the table, read consistently, by (PK, SK)."""
    deserialize = TypeDeserializer().deserialize
    items: dict[tuple[str, str], dict[str, Any]] = {}
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for raw in page["Items"]:
            item = {name: plain(deserialize(value)) for name, value in raw.items()}
            items[(str(item["PK"]), str(item["SK"]))] = item
    return items


@dataclass
class Transcript:
    """Steps against one table: ``call`` sends a request to the runner, ``act`` runs anything else (a direct table
    write, a restart); after each, the items the step put (in full) and the keys it deleted."""

    client: Any
    table: str
    runner: Runner | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    mask: Masker = field(default_factory=Masker)
    _items: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.mask.literals[self.table] = "<table>"

    def serve(self, runner: Runner | None) -> None:
        """Send the next calls to ``runner`` (its URL masked as ``<runner>``)."""
        self.runner = runner
        if runner is not None:
            self.mask.literals[runner.url.removeprefix("http://")] = "<runner>"  # its host and port, in any URL

    def _changes(self) -> dict[str, Any]:
        now = scan(self.client, self.table)
        put = [now[key] for key in sorted(now) if self._items.get(key) != now[key]]
        deleted = [{"PK": key[0], "SK": key[1]} for key in sorted(self._items) if key not in now]
        self._items = now
        return {"put": put, "deleted": deleted}

    def call(
        self,
        step: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        actor: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        assert self.runner is not None, "no runner started"
        sent = {**(headers or {}), **({"X-Local-Actor": actor} if actor else {})}
        answer = self.runner.send(method, path, body, sent)
        kept = {name: answer.header(name) for name in KEPT_HEADERS if answer.header(name) is not None}
        request = {"method": method, "path": path, **({"body": body} if body is not None else {})}
        if sent:
            request["headers"] = sent
        self.steps.append(
            self.mask(
                {
                    "step": step,
                    "request": request,
                    "answer": {"status": answer.status, "headers": kept, "body": answer.body},
                    **self._changes(),
                }
            )
        )
        return answer

    def act(
        self, step: str, action: Callable[[], Any], outcome: Callable[[Any], Mapping[str, Any]] | None = None
    ) -> Any:
        """Run ``action`` as a step; ``outcome`` says what of its result the step records beside its items."""
        result = action()
        said = outcome(result) if outcome is not None else {}
        self.steps.append(self.mask({"step": step, **said, **self._changes()}))
        return result


def dumps(transcript: Any) -> str:
    return json.dumps(transcript, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def difference(recorded: str, replayed: str, limit: int = 400) -> str:
    """The lines that differ, as a unified diff (at most ``limit`` lines)."""
    lines = list(
        difflib.unified_diff(recorded.splitlines(), replayed.splitlines(), "recorded", "replayed", lineterm="", n=6)
    )
    return "\n".join(lines[:limit]) + (f"\n... {len(lines) - limit} more lines" if len(lines) > limit else "")
