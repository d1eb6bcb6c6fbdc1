"""SigV4 for OFREP clients (singleton_flags.sigv4): the Python OFREP provider's session signs every request.

The signer is flagctl's too (its AWS test vector lives in test_flagctl_cli.py); here: the ``requests`` auth
object the provider's public ``session`` takes, the body in the signature, the region from the API's URL, and a
package whose import never loads ``requests`` (a runtime dependency it does not have).
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from typing import Any

import botocore.auth
import pytest
import requests
from botocore.credentials import Credentials
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from requests.adapters import BaseAdapter

from singleton_flags.sigv4 import RequestsSigV4Auth, execute_api_region, sign_headers

API_URL = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod"
CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
EVALUATION = {"key": "signup_enabled", "value": True, "reason": "CACHED", "variant": "stored", "metadata": {}}


@pytest.fixture(autouse=True)
def frozen_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: datetime.datetime(2015, 8, 30, 12, 36, 0))


class Recording(BaseAdapter):
    """A transport that records what the session sends and answers one OFREP evaluation."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[requests.PreparedRequest] = []

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:
        self.sent.append(request)
        response = requests.Response()
        response.status_code = 200
        response.headers["Content-Type"] = "application/json"
        response._content = json.dumps(EVALUATION).encode()
        response.request = request
        return response

    def close(self) -> None:
        pass


def recompute(request: requests.PreparedRequest, body: bytes) -> str:
    """The Authorization botocore computes for the request as sent, with ``body``."""
    unsigned = {k: v for k, v in request.headers.items() if k not in ("Authorization", "X-Amz-Date")}
    return sign_headers(str(request.method), str(request.url), unsigned, body, CREDENTIALS, "eu-west-1")[
        "Authorization"
    ]


def test_the_python_ofrep_provider_sends_each_evaluation_signed_body_included() -> None:
    # Given the Python OFREP provider, its public session signing with our auth object
    provider = OFREPProvider(API_URL)
    provider.session.auth = RequestsSigV4Auth(API_URL, credentials=CREDENTIALS)
    transport = Recording()
    provider.session.mount("https://", transport)
    # When it evaluates a flag with a context
    details = provider.resolve_boolean_details("signup_enabled", False, EvaluationContext("user-1", {"plan": "pro"}))
    # Then the request went out signed for execute-api in the URL's region, the session token with it
    assert details.value is True
    (sent,) = transport.sent
    assert sent.url == API_URL + "/ofrep/v1/evaluate/flags/signup_enabled"
    authorization = sent.headers["Authorization"]
    assert authorization.startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/eu-west-1/execute-api/aws4_request"
    )
    signed_headers = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"host", "content-type", "x-amz-date", "x-amz-security-token"} <= set(signed_headers)
    assert (sent.headers["X-Amz-Date"], sent.headers["X-Amz-Security-Token"]) == ("20150830T123600Z", "session-token")
    # and the signature is over the very body sent: another body would not verify
    body = sent.body if isinstance(sent.body, bytes) else str(sent.body).encode()
    assert json.loads(body) == {"context": {"targetingKey": "user-1", "plan": "pro"}}
    assert recompute(sent, body) == authorization
    assert recompute(sent, body.replace(b"pro", b"max")) != authorization


def test_a_resent_request_is_signed_afresh_not_twice() -> None:
    auth = RequestsSigV4Auth(API_URL, credentials=CREDENTIALS)
    request = requests.Request("POST", API_URL + "/ofrep/v1/evaluate/flags", json={}).prepare()
    first = auth(request).headers["Authorization"]
    again = auth(request)
    assert again.headers["Authorization"] == first
    assert "authorization" not in again.headers["Authorization"].split("SignedHeaders=")[1].split(",")[0]


@pytest.mark.parametrize(
    ("url", "region"),
    [
        (API_URL, "eu-west-1"),
        ("https://abc.execute-api.cn-north-1.amazonaws.com.cn/prod", "cn-north-1"),
        ("https://flags.example.com/prod", None),
        ("http://127.0.0.1:3000", None),
    ],
)
def test_the_region_comes_from_an_execute_api_url(url: str, region: str | None) -> None:
    assert execute_api_region(url) == region


def test_no_region_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    # Given a custom domain, and no region anywhere in the environment or the AWS config
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    auth = RequestsSigV4Auth("https://flags.example.com/prod", credentials=CREDENTIALS)
    request = requests.Request("POST", "https://flags.example.com/prod/ofrep/v1/evaluate/flags", json={}).prepare()
    # Then signing says what is missing
    with pytest.raises(ValueError, match="no AWS region"):
        auth(request)


def test_importing_the_package_and_its_signer_loads_no_requests() -> None:
    script = "import sys, singleton_flags, singleton_flags.sigv4; print('requests' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", script], env=dict(os.environ), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("environment", "region"),
    [
        ({"AWS_REGION": "eu-central-1", "AWS_DEFAULT_REGION": "us-west-2"}, "eu-central-1"),
        ({"AWS_REGION": "", "AWS_DEFAULT_REGION": "us-west-2"}, "us-west-2"),
    ],
    ids=["aws-region-first", "empty-aws-region-is-unset"],
)
def test_a_custom_domain_is_signed_for_the_region_the_sdks_would_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, environment: dict[str, str], region: str
) -> None:
    # Given a custom domain, and the region only in the environment
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    auth = RequestsSigV4Auth("https://flags.example.com/prod", credentials=CREDENTIALS)
    request = requests.Request("POST", "https://flags.example.com/prod/ofrep/v1/evaluate/flags", json={}).prepare()
    # When a request is signed / Then its credential scope names that region
    signed = auth(request)
    assert f"/{region}/execute-api/aws4_request" in signed.headers["Authorization"]
