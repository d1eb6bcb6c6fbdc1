"""What applications need to find the service, as SSM parameters ``/singleton-flags/<stage>/...``: the table's
name and ARN, the API's URL and the client layer's ARN per architecture (the layers built here, carrying the
service's declarations).

SSM, not CloudFormation exports: an application's stack that imported an export would block every update of
this stack that changes the exported value (a new layer version on each declarations change), while an SSM
parameter is read by the application's stack at its own deploy
(``singleton_flags_cdk.SingletonFlags(stage=)``).
"""

from __future__ import annotations

from aws_cdk import aws_dynamodb as dynamodb, aws_lambda as lambda_, aws_ssm as ssm
from constructs import Construct

from singleton_flags.declarations import Declarations
from singleton_flags_cdk.construct import (
    API_URL_PARAMETER,
    ARCHITECTURES,
    CLIENT_LAYER_PARAMETER,
    TABLE_ARN_PARAMETER,
    TABLE_NAME_PARAMETER,
    client_layer_version,
    discovery_parameter,
)
from singleton_flags_service.contract import load_service_declarations

from . import constants


class Discovery(Construct):
    """The client layers and the parameters naming the table, the API and the layers."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: str,
        table: dynamodb.ITableV2,
        api_url: str,
        declarations: Declarations | None,
    ) -> None:
        super().__init__(scope, construct_id)
        served = declarations if declarations is not None else load_service_declarations()
        self.layers: dict[str, lambda_.ILayerVersion] = {
            name: client_layer_version(
                self,
                f"ClientLayer-{name}",
                declarations=served,
                architecture=name,
                build_dir=constants.BUILD_DIR,
            )
            for name in ARCHITECTURES
        }
        values = {
            TABLE_NAME_PARAMETER: (table.table_name, "Name of the flags table"),
            TABLE_ARN_PARAMETER: (table.table_arn, "ARN of the flags table"),
            API_URL_PARAMETER: (api_url, "Base URL of the flags API (SigV4-signed calls only)"),
            **{
                f"{CLIENT_LAYER_PARAMETER}/{name}": (
                    layer.layer_version_arn,
                    f"The singleton-flags client layer ({name}) with the service's declarations",
                )
                for name, layer in self.layers.items()
            },
        }
        self.parameters = {
            name: ssm.StringParameter(
                self,
                f"Parameter-{name.replace('/', '-')}",
                parameter_name=discovery_parameter(stage, name),
                string_value=value,
                description=description,
            )
            for name, (value, description) in values.items()
        }
