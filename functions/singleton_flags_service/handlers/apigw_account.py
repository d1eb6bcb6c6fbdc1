"""API Gateway's account-level CloudWatch Logs role, set only where the account and region have none.

API Gateway needs that role (account setting ``cloudwatchRoleArn``) before a stage can log to CloudWatch
Logs, access logs included. It is one setting per account and region, shared by every API: a role someone
else set is never overwritten, so a second stage (or another team's stack) finds it set and leaves it.
Delete does nothing: other APIs may depend on the setting. Standard library and boto3 only.
"""

from __future__ import annotations

from collections.abc import Mapping
from time import sleep
from typing import Any

import boto3
from botocore.exceptions import ClientError

from singleton_flags_service.custom_resource import logger, run, send_response

PHYSICAL_ID = "apigateway-account-cloudwatch-role"
# A role just created may not be usable by API Gateway for a few seconds (IAM is eventually consistent):
# UpdateAccount answers BadRequestException until it is.
SET_ATTEMPTS = 12
SET_RETRY_SECONDS = 5

CLIENT = boto3.client("apigateway")


def _set_role(role_arn: str) -> None:
    for attempt in range(1, SET_ATTEMPTS + 1):
        try:
            CLIENT.update_account(patchOperations=[{"op": "replace", "path": "/cloudwatchRoleArn", "value": role_arn}])
            return
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "BadRequestException" or attempt == SET_ATTEMPTS:
                raise
            logger.info("API Gateway does not accept the role yet (%s); retrying", exc.response["Error"]["Message"])
            sleep(SET_RETRY_SECONDS)


def apply(event: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    if event["RequestType"] == "Delete":
        return PHYSICAL_ID, {}
    role_arn = event["ResourceProperties"]["RoleArn"]
    current = CLIENT.get_account().get("cloudwatchRoleArn")
    if current:
        logger.info("API Gateway's CloudWatch Logs role is already set to %s: left as it is", current)
        return PHYSICAL_ID, {"RoleArn": current, "Applied": "false"}
    _set_role(role_arn)
    logger.info("API Gateway's CloudWatch Logs role set to %s", role_arn)
    return PHYSICAL_ID, {"RoleArn": role_arn, "Applied": "true"}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return run(event, context, apply, default_physical_id=PHYSICAL_ID, send=send_response)
