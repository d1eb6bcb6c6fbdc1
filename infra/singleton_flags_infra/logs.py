"""Log groups with the configured retention: every log group of the stack is built here."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, aws_logs as logs
from constructs import Construct

# CloudWatch's accepted retention periods (singleton_flags_infra.config.LOG_RETENTION_DAYS) -> CDK's enum.
_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}


def log_group(scope: Construct, construct_id: str, retention_days: int) -> logs.LogGroup:
    """A log group kept ``retention_days`` and removed with the stack (the audit trail lives in the table)."""
    return logs.LogGroup(
        scope,
        construct_id,
        retention=_RETENTION[retention_days],
        removal_policy=RemovalPolicy.DESTROY,
    )
