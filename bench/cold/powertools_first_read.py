"""Cold: Powertools' stock DynamoDBProvider (a table keyed by name), one get with a 5 s cache age."""

import os
import sys

from aws_lambda_powertools.utilities.parameters import DynamoDBProvider

provider = DynamoDBProvider(table_name=os.environ["BENCH_POWERTOOLS_TABLE"])
value: object = provider.get("signup_enabled", max_age=5)  # the item's BOOL, as boto3's resource reads it
sys.exit(0 if value is True else 1)
