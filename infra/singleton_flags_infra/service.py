"""The whole flags service in your own CDK stack (extra ``singleton-flags-service[cdk]``), built as this project's
stack builds it, with the consumer-side helpers of ``singleton_flags_cdk`` bound to what it builds.

    service = FlagsService(self, "Flags", config=config, declarations="flags.json")
    service.bind(my_function)        # the client's layer (the one the service publishes), variables, read grant
    service.grant_admin(operators)   # every route of the API
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import aws_iam as iam, aws_lambda as lambda_
from constructs import Construct

from singleton_flags.declarations import Declarations, load_declarations
from singleton_flags_cdk import SingletonFlags

from .config import FlagsConfig, parse_config
from .stack import Service, compose

__all__ = ["FlagsService"]


class FlagsService(Construct):
    """The service (``config``: a ``FlagsConfig``, or cdk.json's ``singleton-flags`` object), and ``flags``: the
    consumer-side construct over its table and the client layers it publishes.

    ``declarations`` (a path or ``Declarations``) are the flags the service is built for and the layers carry;
    without them, the service's own (``singleton_flags_service/declarations.json``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FlagsConfig | Mapping[str, Any],
        declarations: Declarations | str | os.PathLike[str] | None = None,
        build_dir: Path | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        parsed = config if isinstance(config, FlagsConfig) else parse_config(config)
        loaded = (
            declarations
            if isinstance(declarations, Declarations) or declarations is None
            else load_declarations(Path(declarations))
        )
        self.service: Service = compose(self, config=parsed, declarations=loaded)
        self.flags = SingletonFlags(
            self,
            "Client",
            table=self.service.storage.table,
            declarations=loaded,
            max_age=parsed.cache_max_age_seconds,
            max_stale=parsed.max_stale_seconds,
            build_dir=build_dir,
            layers=self.service.discovery.layers,
        )

    @property
    def table(self) -> Any:
        return self.service.storage.table

    def bind(self, function: lambda_.Function, *, layer: bool = True) -> iam.Grant:
        """``SingletonFlags.bind``: the client's layer, its variables and the read grant."""
        return self.flags.bind(function, layer=layer)

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        return self.flags.grant_read(grantee)

    def grant_admin(self, principal: iam.IGrantable) -> iam.Grant:
        """Every route of the service's API (change, history, revert, restore): its admin policy's statements."""
        grant: iam.Grant = self.service.api.grant_admin(principal)
        return grant
