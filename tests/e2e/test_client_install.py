"""An application's path: `AWS_ENDPOINT_URL_DYNAMODB=<DynamoDB Local> make run` creates and seeds the table;
the client's wheel with its `[openfeature]` extra installed into an empty virtual environment, then the docs' client and
OpenFeature examples
read the flags from that table.

Selected with ``-m install`` (also part of the e2e tier): it builds the package and installs it with its
dependencies, from pip's cache or PyPI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from singleton_flags_service.contract import DECLARATIONS_FILE
from tests.support.doc_examples import examples
from tests.support.packaging import install_into_empty_venv
from tests.support.runner import MAKE_RUN, start_runner

pytestmark = pytest.mark.install


CHECKS = """
import importlib.util, json, sys
import singleton_flags
import my_function
page = {"FLAGS": my_function.FLAGS}
answer = my_function.handler({}, None)
exec(compile(OPENFEATURE, "reading-flags.md#openfeature", "exec"), page)
absent = {name: importlib.util.find_spec(name) is None for name in ("aws_cdk", "moto", "pydantic")}
print(json.dumps({"answer": answer, "absent": absent, "package": singleton_flags.__file__}))
"""


TABLE = "singleton-flags-install"


def test_an_empty_venv_with_the_openfeature_extra_reads_the_flags_from_the_table_make_run_created(
    tmp_path: Path, dynamodb_local_endpoint: str, wheelhouse: Path
) -> None:
    # Given the table `make run` created and seeded on DynamoDB Local
    runner = start_runner(
        tmp_path / "runner.log", command=MAKE_RUN, AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local_endpoint, TABLE_NAME=TABLE
    )
    try:
        seeded = runner.get("/flags")
    finally:
        runner.stop()  # Ctrl-C: make re-raises it, the runner stops cleanly
    assert "created and seeded" in runner.output() and "local runner stopped" in runner.output()
    assert seeded.body["version"] == 0
    # And an empty virtual environment and the package installed into it with its [openfeature] extra
    python = install_into_empty_venv(tmp_path, "singleton-flags[openfeature]", wheelhouse=wheelhouse)
    venv = python.parents[1]
    # And an application: its declarations and the docs' client example as its function
    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(DECLARATIONS_FILE, app / "flags.json")
    code = examples()
    (app / "my_function.py").write_text(code["client"])
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_local_endpoint,
        "SINGLETON_FLAGS_TABLE": TABLE,
    }
    # When the function runs, then the OpenFeature example
    out = subprocess.run(
        [str(python), "-c", f"OPENFEATURE = {code['openfeature']!r}\n{CHECKS}"],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    printed, result = out.stdout.strip().splitlines()[:-1], json.loads(out.stdout.strip().splitlines()[-1])
    # Then both read the seeded item (version 0, the declared initial values) from DynamoDB Local
    assert result["answer"] == {"statusCode": 200, "body": "limit 600, signup True (CACHED)"}
    expected = "False CACHED {'flagSetId': 'singleton-flags', 'version': 0, 'fetchedAt': "
    assert printed and printed[0].startswith(expected)
    # And the environment holds the package, not the CDK, moto or pydantic
    assert result["absent"] == {"aws_cdk": True, "moto": True, "pydantic": True}
    assert result["package"].startswith(str(venv))
