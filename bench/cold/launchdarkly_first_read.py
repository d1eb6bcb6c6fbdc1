"""Cold: LaunchDarkly's SDK in daemon mode over its DynamoDB feature store (5 s cache), one evaluation."""

import os
import sys

from ldclient import Context, LDClient
from ldclient.config import Config
from ldclient.feature_store import CacheConfig
from ldclient.integrations import DynamoDB

store = DynamoDB.new_feature_store(os.environ["BENCH_LD_TABLE"], caching=CacheConfig(expiration=5))
client = LDClient(Config("bench-sdk-key", feature_store=store, use_ldd=True, send_events=False))
value = client.variation("signup_enabled", Context.create("user-1"), False)
client.close()  # type: ignore[no-untyped-call]  # the SDK leaves close() unannotated
sys.exit(0 if value is True else 1)
