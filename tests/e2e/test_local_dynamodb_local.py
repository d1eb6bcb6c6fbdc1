"""The local runner against a real DynamoDB (AWS's DynamoDB Local): it creates and seeds the table, and a
second start seeds again without touching live values. Never skipped when ``CI`` is set.
"""

from __future__ import annotations

from local.dynamodb_local import local_client
from singleton_flags.keys import SINGLETON_SK, singleton_key
from tests.support.runner import start_runner

TABLE = "singleton-flags-e2e"


def test_the_runner_creates_and_seeds_the_table_on_dynamodb_local_and_keeps_live_values(
    dynamodb_local_endpoint, tmp_path
):
    dynamodb_local = dynamodb_local_endpoint
    # Given: DynamoDB Local without the table
    client = local_client(dynamodb_local)
    assert TABLE not in client.list_tables()["TableNames"]
    # When: the runner starts against it
    runner = start_runner(tmp_path / "first.log", AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local, TABLE_NAME=TABLE)
    try:
        answer = runner.get("/flags")
        changed = runner.send("PATCH", "/flags", {"flags": {"signup_enabled": False}, "reason": "on DynamoDB Local"})
    finally:
        assert runner.stop() == 0
    # Then: the table exists with TTL, the singleton was seeded at version 0, and the write landed there
    assert "created and seeded" in runner.output()
    assert answer.status == 200 and answer.body["version"] == 0 and answer.body["reason"] == "STATIC"
    assert changed.status == 200 and changed.body["version"] == 1
    ttl = client.describe_time_to_live(TableName=TABLE)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires_at"
    item = client.get_item(TableName=TABLE, Key=singleton_key(SINGLETON_SK), ConsistentRead=True)["Item"]
    assert item["signup_enabled"] == {"BOOL": False} and item["schema_version"] == {"N": "1"}

    # When: it starts again on the same table
    again = start_runner(tmp_path / "second.log", AWS_ENDPOINT_URL_DYNAMODB=dynamodb_local, TABLE_NAME=TABLE)
    try:
        reread = again.get("/flags")
    finally:
        again.stop()
    # Then: seeding again kept the live value and the version
    assert "existing values kept" in again.output()
    assert reread.body["flags"]["signup_enabled"] is False and reread.body["version"] == 1
