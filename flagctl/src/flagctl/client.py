"""HTTP to the flags API: the local runner as is, a deployed API signed with SigV4 (service ``execute-api``).

HTTP through ``flagctl.http_client`` (h11: one request per connection, a deadline for the whole exchange,
bounded answers, no redirect ever followed); botocore, already a dependency, for credentials, and the runtime
library's ``singleton_flags.sigv4`` for signing: the default credential chain (environment, profile, SSO,
container or instance role) and the region of the API's host (``<id>.execute-api.<region>.amazonaws.com``), else
AWS_REGION, else AWS_DEFAULT_REGION, else the profile's.
"""

from __future__ import annotations

import ipaddress
import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from flagctl.errors import AUTH, BAD_INPUT, SERVER, FlagctlError
from flagctl.http_client import DEADLINE_SECONDS, exchange
from flagctl.text import excerpt, safe

DEFAULT_URL = "http://127.0.0.1:3000"
SERVICE = "execute-api"
STACK_OUTPUT_API_URL = "ApiUrl"  # singleton_flags_infra.constants.OUTPUT_API_URL (a unit test holds them equal)
MAX_JSON_DEPTH = 64  # an answer nested deeper is not one of the API's
EXCERPT_BYTES = 1200
IDEMPOTENCY_HEADER = "Idempotency-Key"
# singleton_flags.declarations.NAME_PATTERN (a unit test holds them equal): a name the API could have declared.
FLAG_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
# A change request's id as the API writes it (a digest of the request's bound content, URL-safe): anything else
# could only be answered 404, or would change the path it is put in.
REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
CHANGE_REQUESTS = "/flags/change-requests"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: Any  # parsed JSON; None when empty

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers.items() if key.lower() == name.lower()), None)


@dataclass(frozen=True)
class Outgoing:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None


Transport = Callable[[Outgoing], Answer]


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_from_stack_outputs(path: Path) -> str:
    """The API URL in a ``cdk deploy --outputs-file`` document: the ``ApiUrl`` output of its one stack."""
    try:
        outputs = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FlagctlError(f"cannot read stack outputs from {path}: {exc}", BAD_INPUT, "BAD_INPUT") from exc
    found = {
        f"{stack}.{key}": value
        for stack, values in (outputs.items() if isinstance(outputs, dict) else [])
        if isinstance(values, dict)
        for key, value in values.items()
        if isinstance(value, str) and (key == STACK_OUTPUT_API_URL or key.startswith(STACK_OUTPUT_API_URL))
    }
    if len(found) != 1:
        names = ", ".join(sorted(found)) or "none"
        raise FlagctlError(
            f"{path} must hold exactly one {STACK_OUTPUT_API_URL} output (found: {names}); use --url",
            BAD_INPUT,
            "BAD_INPUT",
        )
    return next(iter(found.values()))


def region_for(url: str, default_region: str | None) -> str:
    from singleton_flags.sigv4 import execute_api_region

    region = execute_api_region(url) or default_region
    if region:
        return region
    raise FlagctlError(
        f"cannot tell the AWS region of {url}: set AWS_REGION (or AWS_DEFAULT_REGION, or a profile's region)",
        BAD_INPUT,
        "BAD_INPUT",
    )


def configured_region(session: Any) -> str | None:
    """The region the SDKs would use (``singleton_flags.sigv4.configured_region``); one that is no region name is
    bad input."""
    from singleton_flags.sigv4 import RegionNameError, configured_region as sdk_region

    try:
        return sdk_region(session)
    except RegionNameError as exc:
        raise FlagctlError(
            f"{exc.source} is not an AWS region name: {safe(excerpt(exc.value, 80))}", BAD_INPUT, "BAD_INPUT"
        ) from exc


def sign(outgoing: Outgoing, credentials: Any, region: str, service: str = SERVICE) -> Outgoing:
    """The same request with SigV4 headers (Authorization, X-Amz-Date, X-Amz-Security-Token if any): the runtime
    library's signer (``singleton_flags.sigv4``), the one OFREP clients use too."""
    from singleton_flags.sigv4 import sign_headers

    headers = sign_headers(outgoing.method, outgoing.url, outgoing.headers, outgoing.body, credentials, region, service)
    return Outgoing(outgoing.method, outgoing.url, headers, outgoing.body)


def default_signer(url: str, service: str = SERVICE) -> Callable[[Outgoing], Outgoing]:
    """A signer using botocore's default credential chain and region (``service``: execute-api, or another
    service's signing name, e.g. ``monitoring`` for CloudWatch)."""
    import botocore.session

    session = botocore.session.Session()
    region = region_for(url, configured_region(session))
    credentials = session.get_credentials()
    if credentials is None:
        raise FlagctlError(
            f"no AWS credentials to sign requests to {url} (environment, profile, SSO or role)", AUTH, "NO_CREDENTIALS"
        )
    frozen = credentials.get_frozen_credentials()
    return lambda outgoing: sign(outgoing, frozen, region, service)


def http_transport(outgoing: Outgoing, deadline: float = DEADLINE_SECONDS) -> Answer:
    """The request over ``flagctl.http_client`` (no redirect followed: a 3xx comes back as the answer), its body
    parsed as JSON: an error status with a body that is not JSON keeps it as the message of a ``NOT_JSON`` error;
    a 2xx body that is empty or not JSON, or any JSON nested deeper than ``MAX_JSON_DEPTH``, is a bad answer
    (exit 5): every answer of the API carries a JSON body."""
    response = exchange(outgoing.method, outgoing.url, outgoing.headers, outgoing.body, deadline=deadline)
    return Answer(response.status, dict(response.headers), answer_body(response.status, response.body, outgoing.url))


def answer_body(status: int, raw: bytes, url: str) -> Any:
    if not raw and 200 <= status < 300:
        raise FlagctlError(f"bad answer from {safe(url)}: HTTP {status} with an empty body", SERVER, "BAD_RESPONSE")
    if not raw:
        return None
    try:
        body = json.loads(raw.decode("utf-8"))
        deep = nesting_exceeds(body, MAX_JSON_DEPTH)
    except RecursionError:  # nested beyond what the parser itself recurses into
        deep = True
    except ValueError:  # not UTF-8, or not JSON
        return _not_json(status, raw, url)
    if deep:
        raise FlagctlError(
            f"bad answer from {safe(url)}: HTTP {status} with JSON nested deeper than {MAX_JSON_DEPTH} levels",
            SERVER,
            "BAD_RESPONSE",
        )
    return body


def _not_json(status: int, raw: bytes, url: str) -> Any:
    text = excerpt(raw[:EXCERPT_BYTES].decode("utf-8", errors="replace"))
    if 200 <= status < 300:
        message = f"bad answer from {safe(url)}: HTTP {status} with a body that is not JSON: {safe(text)}"
        raise FlagctlError(message, SERVER, "BAD_RESPONSE")
    return {"error": {"code": "NOT_JSON", "message": text}}


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests arrays and objects more than ``limit`` deep; no recursion."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth + 1 > limit:
            return True
        pending.extend((child, depth + 1) for child in children)
    return False


@dataclass
class FlagsClient:
    base_url: str
    transport: Transport = http_transport
    signer: Callable[[Outgoing], Outgoing] | None = None  # default: botocore's chain, for non-loopback URLs

    def __post_init__(self) -> None:
        scheme = urlsplit(self.base_url).scheme
        if scheme not in ("http", "https") or not urlsplit(self.base_url).hostname:
            raise FlagctlError(f"not an http(s) URL: {self.base_url!r}", BAD_INPUT, "BAD_INPUT")
        self.base_url = self.base_url.rstrip("/")

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        url = self.base_url + path
        wanted = {key: value for key, value in (query or {}).items() if value is not None}
        if wanted:
            url += "?" + urlencode(wanted)
        payload = None if body is None else json.dumps(body).encode("utf-8")
        all_headers = {"Accept": "application/json", **(headers or {})}
        if payload is not None:
            all_headers["Content-Type"] = "application/json"
        outgoing = Outgoing(method, url, all_headers, payload)
        if not is_loopback(self.base_url):
            if self.signer is None:
                self.signer = default_signer(self.base_url)
            outgoing = self.signer(outgoing)
        return self.transport(outgoing)

    def flags(self) -> Answer:
        return self.request("GET", "/flags")

    def flag(self, name: str) -> Answer:
        check_flag_name(name)
        return self.request("GET", "/flags/" + quote(name, safe=""))

    def change(
        self,
        flags: Mapping[str, Any],
        reason: str,
        if_match: int | None = None,
        idempotency_key: str | None = None,
        guard: Mapping[str, Any] | None = None,
    ) -> Answer:
        for name in flags:
            check_flag_name(name)
        body = _guarded({"flags": dict(flags), "reason": reason}, guard)
        return self.request("PATCH", "/flags", body=body, headers=_write_headers(if_match, idempotency_key))

    def history(self, limit: int | None = None, cursor: str | None = None) -> Answer:
        return self.request("GET", "/flags/history", query={"limit": limit, "cursor": cursor})

    def revert(
        self,
        version: int,
        reason: str,
        if_match: int | None = None,
        idempotency_key: str | None = None,
        guard: Mapping[str, Any] | None = None,
    ) -> Answer:
        body = _guarded({"version": version, "reason": reason}, guard)
        return self.request("POST", "/flags/revert", body=body, headers=_write_headers(if_match, idempotency_key))

    def guards(self, limit: int | None = None, cursor: str | None = None) -> Answer:
        return self.request("GET", "/flags/guards", query={"limit": limit, "cursor": cursor})

    def restore(self, reason: str, idempotency_key: str | None = None) -> Answer:
        """Bring a missing flags item back from its audit trail (nothing changes if it exists)."""
        return self.request(
            "POST", "/flags/restore", body={"reason": reason}, headers=_write_headers(None, idempotency_key)
        )

    def schedule(
        self,
        flags: Mapping[str, Any],
        reason: str,
        at: str,
        timezone: str | None = None,
        if_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Answer:
        """Schedule a change of ``flags`` at ``at`` (RFC 3339 with an offset, or a local time with ``timezone``)."""
        for name in flags:
            check_flag_name(name)
        body: dict[str, Any] = {"flags": dict(flags), "reason": reason, "at": at}
        if timezone is not None:
            body["timezone"] = timezone
        if if_version is not None:
            body["if_version"] = if_version
        return self.request("POST", "/flags/schedules", body=body, headers=_write_headers(None, idempotency_key))

    def schedules(self, limit: int | None = None, cursor: str | None = None) -> Answer:
        return self.request("GET", "/flags/schedules", query={"limit": limit, "cursor": cursor})

    def cancel_schedule(self, schedule_id: str) -> Answer:
        return self.request("DELETE", "/flags/schedules/" + quote(schedule_id, safe=""))

    def create_change_request(
        self,
        reason: str,
        *,
        flags: Mapping[str, Any] | None = None,
        revert_to: int | None = None,
        if_version: int | None = None,
        break_glass: bool = False,
        at: str | None = None,
        timezone: str | None = None,
        idempotency_key: str | None = None,
    ) -> Answer:
        """Ask for a change of ``flags`` (or a revert to version ``revert_to``: exactly one of them) to a protected
        flag; with ``break_glass``, apply it at once, alone (a principal allowed to break glass only); with ``at``
        (and ``timezone``), the last approval schedules it for then."""
        if (flags is None) == (revert_to is None):
            raise FlagctlError("a change request holds either flags or a version to revert to", BAD_INPUT, "USAGE")
        body: dict[str, Any]
        if flags is not None:
            for name in flags:
                check_flag_name(name)
            body = {"flags": dict(flags), "reason": reason}
        else:
            body = {"revert_to": revert_to, "reason": reason}
        if if_version is not None:
            body["if_version"] = if_version
        if break_glass:
            body["break_glass"] = True
        if at is not None:
            body["at"] = at
        if timezone is not None:
            body["timezone"] = timezone
        return self.request("POST", CHANGE_REQUESTS, body=body, headers=_write_headers(None, idempotency_key))

    def change_requests(self, state: str | None = None, limit: int | None = None, cursor: str | None = None) -> Answer:
        return self.request("GET", CHANGE_REQUESTS, query={"state": state, "limit": limit, "cursor": cursor})

    def change_request(self, request_id: str) -> Answer:
        return self.request("GET", _request_path(request_id))

    def decide(
        self, request_id: str, decision: str, reason: str | None = None, idempotency_key: str | None = None
    ) -> Answer:
        """``approve``, ``reject`` (a reason required by the API) or ``withdraw`` (the author only) a request."""
        if decision not in DECISIONS:
            raise FlagctlError(f"not a decision on a change request: {decision!r}", BAD_INPUT, "USAGE")
        body = {} if reason is None else {"reason": reason}
        return self.request(
            "POST", f"{_request_path(request_id)}/{decision}", body=body, headers=_write_headers(None, idempotency_key)
        )


def check_flag_name(name: str) -> str:
    """A name the API could have declared, or bad input: the API would only answer 404 for anything else."""
    if not FLAG_NAME.match(name):
        raise FlagctlError(
            f"{name!r} is not a flag name (lowercase letters, digits and _, starting with a letter)",
            BAD_INPUT,
            "BAD_INPUT",
        )
    return name


DECISIONS = ("approve", "reject", "withdraw")


def check_request_id(request_id: str) -> str:
    """An id the API could have given a change request, or bad input (nothing is sent)."""
    if not REQUEST_ID.fullmatch(request_id):
        raise FlagctlError(
            f"{safe(excerpt(request_id, 80))!r} is not a change request id (letters, digits, - and _, as "
            "`flagctl request list` prints them)",
            BAD_INPUT,
            "BAD_INPUT",
        )
    return request_id


def _request_path(request_id: str) -> str:
    return f"{CHANGE_REQUESTS}/{quote(check_request_id(request_id), safe='')}"


def new_idempotency_key() -> str:
    """One key per command invocation: a retry of the same command sends it again, a new command a new one."""
    return str(uuid.uuid4())


def _guarded(body: dict[str, Any], guard: Mapping[str, Any] | None) -> dict[str, Any]:
    """A write's body with its guard (``{"alarms": [...], "bake_minutes": N}``), if any."""
    return body if guard is None else {**body, "guard": dict(guard)}


def _write_headers(version: int | None, idempotency_key: str | None) -> dict[str, str]:
    headers = {} if version is None else {"If-Match": f'"{version}"'}
    if idempotency_key is not None:
        headers[IDEMPOTENCY_HEADER] = idempotency_key
    return headers
