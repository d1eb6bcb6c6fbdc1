"""The consumer-side CDK construct (extra ``singleton-flags[cdk]``): bind your functions to a deployed flags service.

    flags = SingletonFlags(self, "Flags", stage="prod", declarations="flags.json")  # a deployed one, found in SSM
    flags = SingletonFlags(self, "Flags", table=table, declarations="flags.json")  # or its table, given
    flags.bind(my_function)  # the client's layer, its SINGLETON_FLAGS_* variables and the read grant
    flags.bind(bundling_function, layer=False)  # a function that bundles singleton-flags itself
    flags.grant_read(role)   # the grant alone

``grant_read`` adds one statement to the grantee's policy: ``dynamodb:GetItem`` on the table, conditioned on
``dynamodb:LeadingKeys`` being ``SETTINGS#APP``: the flags, never an audit record (``AUDIT#APP``) or an
Idempotency-Key item. ``bind`` attaches a layer built without Docker (``singleton_flags_cdk.layer``) for the
function's architecture, carrying the client and the application's declarations. A deployed service is found
through its SSM parameters ``/singleton-flags/<stage>/...`` (``discovery_parameter``), resolved by
CloudFormation at deploy time: no CloudFormation export ties the application's stack to the flags stack. Binding
needs aws-cdk-lib alone; the whole service in your own stack is the service's construct
(``singleton_flags_infra.FlagsService``, distribution ``singleton-flags-service[cdk]``), which binds through this one.
Never imported by the client (``singleton_flags``): a function that only reads flags does not need aws-cdk-lib.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from aws_cdk import Stack, aws_dynamodb as dynamodb, aws_iam as iam, aws_lambda as lambda_, aws_ssm as ssm
from constructs import Construct

from singleton_flags.client import (
    ENV_DECLARATIONS,
    ENV_MAX_AGE,
    ENV_MAX_STALE,
    ENV_REGION,
    ENV_SORT_KEY,
    ENV_TABLE,
)
from singleton_flags.declarations import Declarations, load_declarations
from singleton_flags.keys import SINGLETON_PK, SINGLETON_SK
from singleton_flags.settings import DEFAULT_MAX_AGE_SECONDS
from singleton_flags_cdk.layer import LAYER_DECLARATIONS_PATH, build_client_layer

__all__ = [
    "ARCHITECTURES",
    "READ_ACTIONS",
    "SingletonFlags",
    "client_layer_version",
    "discovery_parameter",
    "read_condition",
]

READ_ACTIONS = ("dynamodb:GetItem",)
# The Python runtimes the client layer is published for (the package requires Python 3.11 or later).
LAYER_RUNTIMES = (lambda_.Runtime.PYTHON_3_11, lambda_.Runtime.PYTHON_3_12, lambda_.Runtime.PYTHON_3_13)
ARCHITECTURES = {"arm64": lambda_.Architecture.ARM_64, "x86_64": lambda_.Architecture.X86_64}
# What the service publishes in SSM for the applications that bind to it (discovery_parameter names them).
TABLE_NAME_PARAMETER = "table-name"
TABLE_ARN_PARAMETER = "table-arn"
API_URL_PARAMETER = "api-url"
CLIENT_LAYER_PARAMETER = "client-layer-arn"  # one per architecture: client-layer-arn/arm64, .../x86_64


def discovery_parameter(stage: str, name: str) -> str:
    """The SSM parameter holding what a stage's service publishes: ``/singleton-flags/<stage>/<name>``."""
    return f"/singleton-flags/{stage}/{name}"


def default_build_dir() -> Path:
    """Where layer builds are kept between synths: ``.build/`` of the directory the CDK app runs in."""
    return Path.cwd() / ".build"


def client_layer_version(
    scope: Construct,
    construct_id: str,
    *,
    declarations: Declarations | Path,
    architecture: str,
    build_dir: Path | None = None,
) -> lambda_.LayerVersion:
    """The client and ``declarations`` as a layer for ``architecture`` (``arm64`` or ``x86_64``)."""
    directory = build_client_layer(
        declarations,
        architecture=architecture,
        build_dir=build_dir or default_build_dir(),
    )
    return lambda_.LayerVersion(
        scope,
        construct_id,
        code=lambda_.Code.from_asset(str(directory)),
        compatible_runtimes=list(LAYER_RUNTIMES),
        compatible_architectures=[ARCHITECTURES[architecture]],
        description=f"singleton-flags client and declarations ({architecture}); {ENV_DECLARATIONS}="
        f"{LAYER_DECLARATIONS_PATH}",
    )


def read_condition() -> dict[str, dict[str, list[str]]]:
    """Every key of the request in the flags' partition (IAM's LeadingKeys names partition keys only)."""
    return {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [SINGLETON_PK]}}


class SingletonFlags(Construct):
    """A deployed flags service: found by its ``stage`` in SSM, or given as its ``table``.

    ``declarations`` (a path or ``Declarations``) are the application's: the layer ``bind`` attaches carries
    them. ``layers`` (by architecture) are client layers already built for them (the service's own construct
    passes those it publishes); any other is built here. ``build_dir`` keeps the layer builds (default ``.build/``
    of the working directory).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        declarations: Declarations | str | os.PathLike[str] | None = None,
        stage: str | None = None,
        table: dynamodb.ITableV2 | dynamodb.ITable | None = None,
        sort_key: str = SINGLETON_SK,
        max_age: int | None = None,
        max_stale: int | None = None,
        build_dir: Path | None = None,
        layers: Mapping[str, lambda_.ILayerVersion] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        if (stage is None) == (table is None):
            raise ValueError(
                "SingletonFlags needs exactly one of stage= (a deployed service, found in SSM) or table= (a "
                "deployed service's table); to build the service itself, use singleton_flags_infra.FlagsService"
            )
        self.sort_key = sort_key
        self.build_dir = build_dir
        self.declarations: Declarations | None = (
            declarations
            if isinstance(declarations, Declarations) or declarations is None
            else load_declarations(Path(declarations))
        )
        self._layers: dict[str, lambda_.ILayerVersion] = dict(layers or {})
        if table is not None:
            self.table = table
        else:
            # The ARN alone: CloudFormation derives the name from it (one parameter, one source of truth).
            self.table = dynamodb.TableV2.from_table_arn(
                self,
                "Table",
                ssm.StringParameter.value_for_string_parameter(
                    self, discovery_parameter(str(stage), TABLE_ARN_PARAMETER)
                ),
            )
        self.max_age = max_age
        self.max_stale = max_stale

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """GetItem of the flags item only: the flags' partition, never the audit trail."""
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=list(READ_ACTIONS),
            resource_arns=[self.table.table_arn],
            conditions=read_condition(),
        )

    def environment(self) -> dict[str, str]:
        """The variables ``Flags.from_env`` reads."""
        env = {
            ENV_TABLE: self.table.table_name,
            ENV_SORT_KEY: self.sort_key,
            ENV_REGION: Stack.of(self.table).region,
            ENV_MAX_AGE: str(self.max_age if self.max_age is not None else DEFAULT_MAX_AGE_SECONDS),
        }
        if self.max_stale is not None:
            env[ENV_MAX_STALE] = str(self.max_stale)
        return env

    def client_layer(self, architecture: lambda_.Architecture) -> lambda_.ILayerVersion:
        """The client and the application's declarations as a layer for ``architecture`` (built once per synth)."""
        [name] = [key for key, value in ARCHITECTURES.items() if value.name == architecture.name]
        if name not in self._layers:
            if self.declarations is None:
                raise ValueError(
                    "the client layer carries the application's declarations: pass declarations= to "
                    "SingletonFlags, or bind(function, layer=False) for a function that bundles singleton-flags "
                    "and its declarations"
                )
            self._layers[name] = client_layer_version(
                self,
                f"ClientLayer-{name}",
                declarations=self.declarations,
                architecture=name,
                build_dir=self.build_dir,
            )
        return self._layers[name]

    def bind(self, function: lambda_.Function, *, layer: bool = True) -> iam.Grant:
        """Give ``function`` the read grant and the client's variables, and (``layer``) the client's layer, for its
        architecture, with the declarations at the path ``SINGLETON_FLAGS_DECLARATIONS`` names."""
        if layer:
            if not function.runtime.name.startswith("python3"):
                raise ValueError(f"the client layer is for Python runtimes, not {function.runtime.name}")
            function.add_layers(self.client_layer(function.architecture))
            function.add_environment(ENV_DECLARATIONS, LAYER_DECLARATIONS_PATH)
        for key, value in self.environment().items():
            function.add_environment(key, value)
        return self.grant_read(function)
