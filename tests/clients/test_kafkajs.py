"""KafkaJS 2.2.4 (tests/js/scenarios.js) on Apache Kafka 4.4 and Odradek at once.

Each test runs one scenario on both brokers, asserts what it must show on each, and
that the two results are the same. KafkaJS 2.2.4 knows only older versions of each
request; it sends the highest one the broker also takes, and every one of them is
still served by Kafka 4.4 (which dropped the oldest versions of several APIs in 4.0).
The tests check which versions it sent, on both brokers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import js_client
from helpers.broker import Broker
from helpers.client_programs import on_both
from helpers.reference_kafka import ReferenceKafka

pytestmark = pytest.mark.timeout(180)

Results = tuple[dict[str, Any], dict[str, Any]]

# The version of each request KafkaJS 2.2.4 sends: the newest it knows, each of them
# at or above the oldest that Kafka 4.4 (and Odradek) serve.
REQUEST_VERSIONS = {
    "ApiVersions": 2,
    "Metadata": 6,
    "CreateTopics": 3,
    "GroupCoordinator": 2,  # FindCoordinator
    "JoinGroup": 5,
    "SyncGroup": 3,
    "Heartbeat": 3,
    "LeaveGroup": 3,
    "OffsetFetch": 4,
    "OffsetCommit": 5,
    "ListOffsets": 3,
    "Fetch": 11,
    "Produce": 7,
    "DescribeGroups": 2,
    "InitProducerId": 1,
    "AddPartitionsToTxn": 1,
    "AddOffsetsToTxn": 1,
    "TxnOffsetCommit": 1,
    "EndTxn": 1,
}


@pytest.fixture
def scenario(
    kafka44: ReferenceKafka, shared_broker: Broker, name_factory: Callable[[str], str]
) -> Callable[[str], Results]:
    """``scenario(name)`` runs it on Kafka 4.4 and Odradek with the same fresh topic and
    group names; returns (Kafka's result, Odradek's), request versions checked."""
    js_client.node()

    def run(name: str) -> Results:
        topic, group = name_factory("topic"), name_factory("group")
        kafka, odradek = on_both(
            lambda bootstrap: js_client.run(name, bootstrap, topic, group),
            kafka44.bootstrap,
            shared_broker.bootstrap,
        )
        for result in (kafka, odradek):
            sent = result.pop("request_versions")
            assert sent == {api: [REQUEST_VERSIONS[api]] for api in sent}
            assert {"ApiVersions", "Metadata", "Produce", "Fetch"} <= sent.keys()
        return kafka, odradek

    return run


def test_produce_and_consume(scenario: Callable[[str], Results]) -> None:
    kafka, odradek = scenario("produce-consume")
    for result in (kafka, odradek):
        assert result["produced"] == {str(p): {"error": 0, "base_offset": 0} for p in range(3)}
        for p in range(3):
            assert result["consumed"][str(p)] == [
                {"offset": n, "key": f"k-{i}", "value": f"v-{i}", "headers": [["seq", str(i)]]}
                for n, i in enumerate(range(p, 30, 3))
            ]
    assert odradek == kafka


def test_three_member_group(scenario: Callable[[str], Results]) -> None:
    kafka, odradek = scenario("group")
    for result in (kafka, odradek):
        # KafkaJS's round-robin assigner: partitions dealt out one member after another
        assert result["members"] == [
            {"assigned": [p, p + 3], "consumed": {str(p): 10, str(p + 3): 10}, "values": 20}
            for p in range(3)
        ]
        assert result["distinct"] == 60
        assert result["described"] == {
            "state": "Stable",
            "protocol": "RoundRobinAssigner",
            "members": 3,
        }
        assert result["committed"] == {str(p): 10 for p in range(6)}
    assert odradek == kafka


def test_transaction_with_send_offsets(scenario: Callable[[str], Results]) -> None:
    kafka, odradek = scenario("transact")
    for result in (kafka, odradek):
        # the first batch's transaction was aborted, the batch read again and committed
        assert result["aborted"] > 0
        assert result["committed"] == 30
        assert result["multiple_transactions"] is True
        assert result["read_committed"] == {"count": 30, "each_once": 30}
        assert result["read_uncommitted"] == 30 + result["aborted"]
        assert result["offsets"] == {str(p): 10 for p in range(3)}
    assert {k: v for k, v in odradek.items() if k != "aborted"} == {
        k: v for k, v in kafka.items() if k != "aborted"
    }
