"""SigV4 for the IAM-authorised API (service ``execute-api``): one signer, used by flagctl and by OFREP clients.

- ``sign_headers``: the headers a request needs to be signed (Authorization, X-Amz-Date, X-Amz-Security-Token),
  body included in the signature;
- ``execute_api_region``: the region of an ``<id>.execute-api.<region>.amazonaws.com`` URL;
- ``configured_region``: the region the AWS SDKs would use (AWS_REGION, AWS_DEFAULT_REGION, the profile's);
- ``RequestsSigV4Auth``: a ``requests`` auth object that signs every request it sends, for the Python OFREP
  provider's ``session`` (docs/ofrep.md): ``provider.session.auth = RequestsSigV4Auth(url)``.

botocore only (boto3's own dependency), imported when a request is signed. ``requests`` is never imported here:
an auth object is any callable that takes and returns the prepared request.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "REGION_NAME",
    "REGION_VARIABLES",
    "SERVICE",
    "RegionNameError",
    "RequestsSigV4Auth",
    "configured_region",
    "execute_api_region",
    "sign_headers",
]

SERVICE = "execute-api"
_EXECUTE_API_HOST = re.compile(r"^[a-z0-9]+\.execute-api\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
_SIGNATURE_HEADERS = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")
# A region name as botocore checks one (utils.validate_region_name: a host label, not all digits).
REGION_NAME = re.compile(r"^(?![0-9]+$)(?!-)[a-zA-Z0-9-]{1,63}(?<!-)$")
REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")


class RegionNameError(ValueError):
    """A configured region that is no region name; ``source`` says where it was configured."""

    def __init__(self, source: str, value: str) -> None:
        super().__init__(f"{source} is not an AWS region name")
        self.source = source
        self.value = value


def configured_region(session: Any) -> str | None:
    """The region the AWS SDKs would use: AWS_REGION, else AWS_DEFAULT_REGION, else the botocore ``session``'s
    profile ``region`` (botocore's own ``region`` setting reads AWS_DEFAULT_REGION and the profile only; the SDKs
    and the AWS CLI put AWS_REGION first). An empty variable counts as unset; a value that is no region name is
    ``RegionNameError``."""
    for variable in REGION_VARIABLES:
        value = os.environ.get(variable, "").strip()
        if value:
            return _region_name(value, variable)
    region = session.get_config_variable("region")
    return _region_name(region, "the profile's region") if region else None


def _region_name(value: str, source: str) -> str:
    if not REGION_NAME.match(value):
        raise RegionNameError(source, value)
    return value


def execute_api_region(url: str) -> str | None:
    """``eu-west-1`` for ``https://abc123.execute-api.eu-west-1.amazonaws.com/prod``; None for another host."""
    match = _EXECUTE_API_HOST.match(urlsplit(url).hostname or "")
    return match.group("region") if match else None


def sign_headers(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    credentials: Any,
    region: str,
    service: str = SERVICE,
) -> dict[str, str]:
    """``headers`` with the SigV4 signature of the request added (``credentials``: botocore's, frozen or not)."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    request = AWSRequest(method=method, url=url, data=body or b"", headers=dict(headers))
    SigV4Auth(credentials, service, region).add_auth(request)
    return dict(request.headers.items())


class RequestsSigV4Auth:
    """Signs each ``requests`` request for ``execute-api``: method, URL, headers and body.

    ``region``: the API URL's (``execute_api_region``) unless given; ``credentials``: botocore's default chain
    (environment, profile, SSO, container or instance role), looked up on the first request and refreshed by
    botocore when they expire. Raises ``ValueError`` when neither a region nor credentials can be found.
    """

    def __init__(
        self, url: str | None = None, *, region: str | None = None, credentials: Any = None, service: str = SERVICE
    ) -> None:
        self._region = region or (execute_api_region(url) if url else None)
        self._credentials = credentials
        self._service = service

    def _resolved(self) -> tuple[Any, str]:
        if self._credentials is None or self._region is None:
            import botocore.session

            session = botocore.session.Session()
            self._region = self._region or configured_region(session)
            self._credentials = self._credentials or session.get_credentials()
        if self._region is None:
            raise ValueError("no AWS region to sign for: give region=, or set AWS_REGION")
        if self._credentials is None:
            raise ValueError("no AWS credentials to sign with (environment, profile, SSO or role)")
        frozen = getattr(self._credentials, "get_frozen_credentials", None)
        return (frozen() if frozen else self._credentials), self._region

    def __call__(self, request: Any) -> Any:
        """Sign a ``requests.PreparedRequest`` in place and return it (the ``requests`` auth protocol)."""
        credentials, region = self._resolved()
        body = request.body
        if isinstance(body, str):
            body = body.encode("utf-8")
        for name in _SIGNATURE_HEADERS:  # a resent request is signed afresh
            request.headers.pop(name, None)
        signed = sign_headers(
            request.method, request.url, request.headers, body, credentials, region, service=self._service
        )
        for name in _SIGNATURE_HEADERS:
            if name in signed:
                request.headers[name] = signed[name]
        return request
