"""Each entry point loads exactly what it needs, no more: the read function's cold start, an application's
`from singleton_flags import Flags` (no pydantic, no X-Ray SDK, no write path, no CDK, no testing tools) and the
testing helper.

The lists are exact and kept here on purpose: a module joining a closure is a decision (a cold start's cost, a
dependency an application ships), made by editing this file. The standard library is left out (it varies with
the Python version): ``tests.support.closures``.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.closures import import_closure

# Lambda's runtime has boto3 and its dependencies; AWS's Powertools layer has Powertools and typing-extensions.
RUNTIME_DEPENDENCIES = frozenset(
    {
        "aws_lambda_powertools",
        "boto3",
        "botocore",
        "certifi",
        "dateutil",
        "jmespath",
        "s3transfer",
        "six",
        "typing_extensions",
        "urllib3",
    }
)
# The client's reader: what an application's function and the read function both run.
READER = frozenset(
    {
        "singleton_flags",
        *(
            f"singleton_flags.{name}"
            for name in (
                "aws",
                "codec",
                "declarations",
                "emf",
                "errors",
                "keys",
                "provider",
                "reader",
                "settings",
                "snapshot",
                "snapstart",
                "vocabulary",
            )
        ),
    }
)
# An application's `from singleton_flags import Flags`: the reader and the typed client over it.
CLIENT = READER | {"singleton_flags.client"}
# The read function: the reader, and the service's read side: its own settings (reader_contract; not contract, which
# builds every function's), the HTTP answers, OFREP's answers (the JSON rules of a request with a context come on
# demand), the route table, the function's logger and its names.
READ_FUNCTION = READER | {
    "singleton_flags_service",
    *(
        f"singleton_flags_service.{name}"
        for name in (
            "api",
            "api.http",
            "api.ofrep",
            "api.routes",
            "errors",
            "handlers",
            "handlers.read_api",
            "observability",
            "reader_contract",
            "vocabulary",
        )
    ),
}
READ_FUNCTION_ENV = {"TABLE_NAME": "t", "AWS_DEFAULT_REGION": "us-east-1"}


def test_the_read_function_loads_exactly_the_read_path(tmp_path: Path) -> None:
    # Given a new interpreter, outside the checkout, configured as the read function is
    # When the read function's handler module is imported (its cold start)
    closure = import_closure("import singleton_flags_service.handlers.read_api", tmp_path, READ_FUNCTION_ENV)
    # Then it loads the read path's modules, exactly: no write path, no schedules, no guards, no request models
    assert sorted(closure.own) == sorted(READ_FUNCTION)
    # And only what Lambda's runtime and the Powertools layer provide: no pydantic, no X-Ray SDK
    assert sorted(closure.third_party) == sorted(RUNTIME_DEPENDENCIES)
    # And the request rules' unicodedata waits for the first OFREP body with a context (api.requests)
    assert "unicodedata" not in closure.stdlib


def test_the_client_loads_exactly_the_reader_and_itself(tmp_path: Path) -> None:
    # Given a new interpreter, outside the checkout
    # When an application imports the client
    closure = import_closure("from singleton_flags import Flags", tmp_path)
    # Then it loads the client's own modules only: nothing of the service, the CDK helpers or the testing helper
    assert sorted(closure.own) == sorted(CLIENT)
    # And boto3 and Powertools with their dependencies, nothing else (no pytest, no pydantic, no CDK)
    assert sorted(closure.third_party) == sorted(RUNTIME_DEPENDENCIES)


def test_the_testing_helper_adds_only_itself_and_pytest(tmp_path: Path) -> None:
    # Given a new interpreter, outside the checkout
    # When an application's tests import the testing helper
    closure = import_closure("import singleton_flags.testing", tmp_path)
    # Then it adds itself to the client's modules, and pytest's, never the CDK, moto, pydantic or the X-Ray SDK
    assert sorted(closure.own) == sorted(CLIENT | {"singleton_flags.testing"})
    assert "pytest" in closure.third_party
    assert not closure.third_party & {"aws_cdk", "constructs", "moto", "pydantic", "aws_xray_sdk"}
