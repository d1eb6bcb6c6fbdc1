"""The client bench's pure parts: how a figure is judged, how GetItem calls are counted, the peers' seeded tables.

The bench itself prints figures and is not run here; these check that what it prints is computed right.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from bench import client as bench


class TestJudging:
    def test_a_figure_at_or_under_its_limit_is_met_and_one_over_says_by_how_much(self) -> None:
        assert bench.judge(5.0, 5.0) == "met"
        assert bench.judge(0.41, 0.5) == "met"
        assert bench.judge(34.7, 5.0) == "missed by 6.94x"
        assert bench.judge(1.12, 1.1) == "missed by 1.02x"

    def test_an_exact_count_is_met_only_when_equal(self) -> None:
        assert bench.judge_exactly(20, 20) == "met"
        assert bench.judge_exactly(23, 20) == "missed by +3"
        assert bench.judge_exactly(19, 20) == "missed by -1"

    def test_the_cold_ratio_is_the_median_of_the_pairs_ratios_not_the_ratio_of_medians(self) -> None:
        # Given pairs whose own ratios (1, 0.5, 3) have a median of 1, while their medians' ratio is 2 / 1
        pairs = [(1.0, 1.0), (2.0, 4.0), (3.0, 1.0)]
        assert bench.median_of_ratios(pairs) == pytest.approx(1.0)


class TestGetItemCounter:
    def test_requests_put_on_the_wire_are_counted_per_thread_retries_included_stubbed_calls_not(self) -> None:
        # Given a counter on a session, and a client of that session (one retry allowed) whose wire is a stand-in
        session = boto3.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
        counter = bench.GetItemCounter()
        counter.attach(session.events)
        client = session.client("dynamodb", config=Config(retries={"total_max_attempts": 2, "mode": "legacy"}))
        key = {"PK": {"S": "SETTINGS#APP"}, "SK": {"S": "FLAGS#V1"}}
        statuses = [500, 200, 200, 200]  # the first request fails and is retried
        sent: list[str] = []

        def wire(**_: Any) -> Any:  # registered after the counter: answers what the counter saw leave
            sent.append(threading.current_thread().name)
            return _response(statuses.pop(0))

        client.meta.events.register("before-send.dynamodb.GetItem", wire)
        # When a stubbed call is made, then two calls in this thread (the first retried) and one in another
        with Stubber(client) as stubbed:
            stubbed.add_response("get_item", {}, {"TableName": "t", "Key": key})
            client.get_item(TableName="t", Key=key)
        for _ in range(2):
            client.get_item(TableName="t", Key=key)
        other = threading.Thread(target=lambda: client.get_item(TableName="t", Key=key), name="environment-1")
        other.start()
        other.join()
        # Then the four requests sent are counted, each in its thread; the stubbed call never left
        assert counter.total == 4 == len(sent)
        assert counter.by_thread == {threading.current_thread().name: 3, "environment-1": 1}


def _response(status: int) -> Any:
    from botocore.awsrequest import AWSResponse

    body = b"{}" if status == 200 else b'{"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError"}'

    class Raw:
        def stream(self, **_: Any) -> Any:
            yield body

    return AWSResponse("https://dynamodb.us-east-1.amazonaws.com/", status, {}, Raw())


class TestPeerTables:
    def test_launchdarklys_own_store_reads_the_seeded_flag_in_daemon_mode(self, ddb: Any) -> None:
        # Given LaunchDarkly's table seeded in its SDK's item format, on moto
        from ldclient import Context, LDClient
        from ldclient.config import Config
        from ldclient.feature_store import CacheConfig
        from ldclient.integrations import DynamoDB

        bench._create_keyed_table(ddb, bench.LD_TABLE, ["namespace", "key"])
        for item in bench.launchdarkly_items({"signup_enabled": True, "beta_banner": False}):
            ddb.put_item(TableName=bench.LD_TABLE, Item=item)
        # When the SDK reads it through its DynamoDB store in daemon mode (its table check included)
        store = DynamoDB.new_feature_store(bench.LD_TABLE, caching=CacheConfig(expiration=bench.CACHE_AGE))
        client = LDClient(Config("sdk-key", feature_store=store, use_ldd=True, send_events=False))
        try:
            context = Context.create("user-1")
            # Then the store finds its $inited marker and each flag evaluates to its seeded value, not the default
            assert store.initialized
            detail = client.variation_detail("signup_enabled", context, "default")
            assert (detail.value, detail.reason["kind"]) == (True, "FALLTHROUGH")
            assert client.variation("beta_banner", context, "default") is False
        finally:
            client.close()
