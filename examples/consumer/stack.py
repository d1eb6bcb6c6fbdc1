"""A consumer's stack: a signup function reading the flags of a deployed singleton-flags stage in-process.

The function gets the client as a layer (with this application's flags.json), its SINGLETON_FLAGS_* variables
and a read grant on the flags item only, all from ``SingletonFlags.bind``; the flags service is found through
its SSM parameters, so this stack never imports a CloudFormation export of it. The route is a function URL
that only SigV4-signed callers of this account may invoke.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Duration, Stack, aws_lambda as lambda_, aws_logs as logs
from constructs import Construct

from singleton_flags_cdk import SingletonFlags

HERE = Path(__file__).resolve().parent
DECLARATIONS = HERE / "flags.json"


class ConsumerStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, flags_stage: str, build_dir: Path | None = None, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        flags = SingletonFlags(
            self, "Flags", stage=flags_stage, declarations=DECLARATIONS, max_age=5, build_dir=build_dir
        )
        self.signup = lambda_.Function(
            self,
            "Signup",
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.ARM_64,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(HERE / "signup"), exclude=["**/__pycache__"]),
            memory_size=256,
            timeout=Duration.seconds(5),
            log_group=logs.LogGroup(self, "SignupLogs", retention=logs.RetentionDays.ONE_MONTH),
        )
        flags.bind(self.signup)
        self.url = self.signup.add_function_url(auth_type=lambda_.FunctionUrlAuthType.AWS_IAM)
