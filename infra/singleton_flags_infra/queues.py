"""Last-stop queues: where deliveries end that no retry delivered (dead-letter and on-failure queues)."""

from __future__ import annotations

from aws_cdk import Duration, aws_sqs as sqs
from constructs import Construct

from . import constants
from .nag import acknowledge


def last_stop_queue(scope: Construct, construct_id: str, what: str) -> sqs.Queue:
    """An encrypted, TLS-only queue kept 14 days; alarmed on depth by infra/monitoring.py.

    ``what`` completes the cdk-nag acknowledgment: "This queue is itself <what>, which cdk-nag does not see)".
    """
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(constants.DLQ_RETENTION_DAYS),
    )
    acknowledge(
        queue,
        "AwsSolutions-SQS3",
        f"This queue is itself {what}, which cdk-nag does not see); it is alarmed on depth.",
    )
    return queue
