"""HTTP to the flags API: the local runner as is, a deployed API signed with SigV4 (service ``execute-api``).

Standard library for HTTP (urllib); botocore, already a dependency, for credentials, and the runtime library's
``singleton_flags.sigv4`` for signing: the default credential chain (environment, profile, SSO, container or
instance role) and the region of the API's host (``<id>.execute-api.<region>.amazonaws.com``), else AWS_REGION /
AWS_DEFAULT_REGION / the profile's.
"""

from __future__ import annotations

import ipaddress
import json
import re
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

DEFAULT_URL = "http://127.0.0.1:3000"
SERVICE = "execute-api"
STACK_OUTPUT_API_URL = "ApiUrl"  # infra.constants.OUTPUT_API_URL (a unit test holds them equal)
TIMEOUT_SECONDS = 15.0
IDEMPOTENCY_HEADER = "Idempotency-Key"
# singleton_flags.declarations.NAME_PATTERN (a unit test holds them equal): a name the API could have declared.
FLAG_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


class FlagctlError(Exception):
    """A problem on this side (bad target, no credentials, network); carries its exit code."""

    def __init__(self, message: str, exit_code: int, code: str) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.code = code


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
        raise FlagctlError(f"cannot read stack outputs from {path}: {exc}", 2, "BAD_INPUT") from exc
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
            f"{path} must hold exactly one {STACK_OUTPUT_API_URL} output (found: {names}); use --url", 2, "BAD_INPUT"
        )
    return next(iter(found.values()))


def region_for(url: str, default_region: str | None) -> str:
    from singleton_flags.sigv4 import execute_api_region

    region = execute_api_region(url) or default_region
    if region:
        return region
    raise FlagctlError(f"cannot tell the AWS region of {url}: set AWS_REGION", 2, "BAD_INPUT")


def sign(outgoing: Outgoing, credentials: Any, region: str, service: str = SERVICE) -> Outgoing:
    """The same request with SigV4 headers (Authorization, X-Amz-Date, X-Amz-Security-Token if any): the runtime
    library's signer (``singleton_flags.sigv4``), the one OFREP clients use too."""
    from singleton_flags.sigv4 import sign_headers

    headers = sign_headers(outgoing.method, outgoing.url, outgoing.headers, outgoing.body, credentials, region, service)
    return Outgoing(outgoing.method, outgoing.url, headers, outgoing.body)


def default_signer(url: str) -> Callable[[Outgoing], Outgoing]:
    """A signer using botocore's default credential chain and region."""
    import botocore.session

    session = botocore.session.Session()
    region = region_for(url, session.get_config_variable("region"))
    credentials = session.get_credentials()
    if credentials is None:
        raise FlagctlError(
            f"no AWS credentials to sign requests to {url} (environment, profile, SSO or role)", 4, "NO_CREDENTIALS"
        )
    frozen = credentials.get_frozen_credentials()
    return lambda outgoing: sign(outgoing, frozen, region)


def urllib_transport(outgoing: Outgoing, timeout: float = TIMEOUT_SECONDS) -> Answer:
    request = urllib.request.Request(  # noqa: S310 - http(s) URLs only (FlagsClient checks the scheme)
        outgoing.url, data=outgoing.body, headers=outgoing.headers, method=outgoing.method
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - http(s) URLs only
            status, headers, raw = response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as error:
        status, headers, raw = error.code, dict(error.headers.items()), error.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise FlagctlError(f"cannot reach {outgoing.url}: {reason}", 5, "NETWORK_ERROR") from exc
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = {"error": {"code": "NOT_JSON", "message": raw[:300].decode("utf-8", errors="replace")}}
    return Answer(status, headers, body)


@dataclass
class FlagsClient:
    base_url: str
    transport: Transport = urllib_transport
    signer: Callable[[Outgoing], Outgoing] | None = None  # default: botocore's chain, for non-loopback URLs

    def __post_init__(self) -> None:
        scheme = urlsplit(self.base_url).scheme
        if scheme not in ("http", "https") or not urlsplit(self.base_url).hostname:
            raise FlagctlError(f"not an http(s) URL: {self.base_url!r}", 2, "BAD_INPUT")
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

    def restore(self, reason: str) -> Answer:
        """Bring a missing flags item back from its audit trail (nothing changes if it exists)."""
        return self.request("POST", "/flags/restore", body={"reason": reason})

    def schedule(
        self,
        flags: Mapping[str, Any],
        reason: str,
        at: str,
        timezone: str | None = None,
        if_version: int | None = None,
    ) -> Answer:
        """Schedule a change of ``flags`` at ``at`` (RFC 3339 with an offset, or a local time with ``timezone``)."""
        for name in flags:
            check_flag_name(name)
        body: dict[str, Any] = {"flags": dict(flags), "reason": reason, "at": at}
        if timezone is not None:
            body["timezone"] = timezone
        if if_version is not None:
            body["if_version"] = if_version
        return self.request("POST", "/flags/schedules", body=body)

    def schedules(self, limit: int | None = None, cursor: str | None = None) -> Answer:
        return self.request("GET", "/flags/schedules", query={"limit": limit, "cursor": cursor})

    def cancel_schedule(self, schedule_id: str) -> Answer:
        return self.request("DELETE", "/flags/schedules/" + quote(schedule_id, safe=""))


def check_flag_name(name: str) -> str:
    """A name the API could have declared, or bad input: the API would only answer 404 for anything else."""
    if not FLAG_NAME.match(name):
        raise FlagctlError(
            f"{name!r} is not a flag name (lowercase letters, digits and _, starting with a letter)", 2, "BAD_INPUT"
        )
    return name


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
