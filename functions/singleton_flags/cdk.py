"""The CDK construct (extra ``singleton-flags[cdk]``): the flags service in your stack, and read grants.

    flags = SingletonFlags(self, "Flags", declarations="flags.json", config=config)  # the whole service
    flags = SingletonFlags(self, "Flags", table=table)  # or a deployed service's table
    flags.bind(my_function)  # SINGLETON_FLAGS_* variables (what Flags.from_env reads) and the read grant
    flags.grant_read(role)   # the grant alone

``grant_read`` adds one statement to the grantee's policy: ``dynamodb:GetItem`` on the table, conditioned on
``dynamodb:LeadingKeys`` being ``SETTINGS#APP``: the flags, never an audit record (``AUDIT#APP``) or an
Idempotency-Key item. Building the whole service needs this repository's CDK app (``infra``: the functions'
code, the API, the alarms); binding to a table needs aws-cdk-lib alone. Never imported by the package's
``__init__``: a function that only reads flags does not need aws-cdk-lib.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aws_cdk import Stack, aws_dynamodb as dynamodb, aws_iam as iam, aws_lambda as lambda_
from constructs import Construct

from singleton_flags.client import ENV_MAX_AGE, ENV_MAX_STALE, ENV_REGION, ENV_SORT_KEY, ENV_TABLE
from singleton_flags.declarations import Declarations, load_declarations
from singleton_flags.keys import SINGLETON_PK, SINGLETON_SK
from singleton_flags.settings import DEFAULT_MAX_AGE_SECONDS

__all__ = ["READ_ACTIONS", "SingletonFlags", "read_condition"]

READ_ACTIONS = ("dynamodb:GetItem",)


def read_condition() -> dict[str, dict[str, list[str]]]:
    """Every key of the request in the flags' partition (IAM's LeadingKeys names partition keys only)."""
    return {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [SINGLETON_PK]}}


class SingletonFlags(Construct):
    """The flags service (``config``: built as the project's stack builds it) or a deployed one's ``table``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        declarations: Declarations | str | os.PathLike[str] | None = None,
        config: Any = None,
        table: dynamodb.ITableV2 | dynamodb.ITable | None = None,
        sort_key: str = SINGLETON_SK,
        max_age: int | None = None,
        max_stale: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.sort_key = sort_key
        self.service: Any = None
        if table is not None:
            self.table = table
        else:
            if config is None:
                raise ValueError("SingletonFlags needs a config to build the service, or the table= of a deployed one")
            try:
                from infra.stack import compose
            except ImportError as exc:
                raise ImportError(
                    "building the whole service needs the singleton-flags CDK app (infra/) on the path; "
                    "to bind functions to a deployed service, pass its table="
                ) from exc
            loaded: Declarations | None = None  # the stack's default: functions/singleton_flags/declarations.json
            if isinstance(declarations, Declarations):
                loaded = declarations
            elif declarations is not None:
                loaded = load_declarations(Path(declarations))
            self.service = compose(self, config=config, declarations=loaded)
            self.table = self.service.storage.table
        self.max_age = max_age if max_age is not None else getattr(config, "cache_max_age_seconds", None)
        self.max_stale = max_stale if max_stale is not None else getattr(config, "max_stale_seconds", None)

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

    def bind(self, function: lambda_.Function) -> iam.Grant:
        """Give ``function`` the client's variables and the read grant."""
        for key, value in self.environment().items():
            function.add_environment(key, value)
        return self.grant_read(function)
