"""franz-go (kgo and kadm, tests/go) on Apache Kafka 4.4 and Odradek at once.

Each test runs one scenario of the Go program on both brokers, asserts what it must
show on each, and that the two results are the same: a scenario that fails on Kafka
too points at the client or the scenario, one that fails on Odradek alone at Odradek.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import go_client
from helpers.broker import Broker
from helpers.client_programs import on_both
from helpers.reference_kafka import ReferenceKafka

pytestmark = pytest.mark.timeout(120)

Results = tuple[dict[str, Any], dict[str, Any]]


@pytest.fixture
def scenario(
    kafka44: ReferenceKafka, shared_broker: Broker, name_factory: Callable[[str], str]
) -> Callable[..., Results]:
    """``scenario(name, *flags, records=N)`` runs it on Kafka 4.4 and Odradek with the
    same fresh topic and group names; returns (Kafka's result, Odradek's)."""
    go_client.binary()

    def run(name: str, *flags: str, records: int = 30) -> Results:
        topic, group = name_factory("topic"), name_factory("group")
        flags = (*flags, "-records", str(records))
        return on_both(
            lambda bootstrap: go_client.run(name, bootstrap, topic, group, *flags),
            kafka44.bootstrap,
            shared_broker.bootstrap,
        )

    return run


def test_produce_and_consume_in_order(scenario: Callable[..., Results]) -> None:
    kafka, odradek = scenario("produce-consume")
    for result in (kafka, odradek):
        assert result["produced"] == {str(p): list(range(10)) for p in range(3)}
        for p in range(3):
            assert result["consumed"][str(p)] == [
                {"offset": n, "key": f"k-{i}", "value": f"v-{i}", "headers": [["seq", str(i)]]}
                for n, i in enumerate(range(p, 30, 3))
            ]
    assert odradek == kafka


def test_kip848_group_splits_partitions_and_commits(scenario: Callable[..., Results]) -> None:
    kafka, odradek = scenario("group-848", records=40)
    for result in (kafka, odradek):
        assert result["members"] == [
            {"assigned": [0, 1], "consumed": {"0": 10, "1": 10}, "values": 20},
            {"assigned": [2, 3], "consumed": {"2": 10, "3": 10}, "values": 20},
        ]
        assert result["distinct"] == 40
        assert result["committed"] == {str(p): 10 for p in range(4)}
        assert result["listed_stable"] == {
            "type": "consumer",
            "state": "Stable",
            "protocol_type": "consumer",
        }
        assert result["described_stable"] == {
            "state": "Stable",
            "assignor": "range",
            "assignments": [[0, 1], [2, 3]],
        }
        assert result["listed_after_leave"]["state"] == "Empty"
        assert result["described_after_leave"]["state"] == "Empty"
        assert result["described_after_leave"]["assignments"] is None
    assert odradek == kafka


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_group_transact_session_exactly_once(
    scenario: Callable[..., Results], protocol: str
) -> None:
    flags = ["-consumer-protocol"] if protocol == "consumer" else []
    kafka, odradek = scenario("transact", *flags)
    for result in (kafka, odradek):
        # the first transaction (at most 8 records) was aborted and its records read again
        assert 0 < result["aborted"] <= 8
        assert result["committed"] == 30
        assert result["transactions"] >= 4
        assert result["read_committed"] == {
            "count": 30,
            "each_once": 30,
            "by_partition": {str(p): 10 for p in range(3)},
        }
        assert result["read_uncommitted"] == 30 + result["aborted"]
        assert result["offsets"] == {str(p): 10 for p in range(3)}
        assert result["described_txn"] == {"error": "", "state": "CompleteCommit", "topics": 0}
    timing = ("aborted", "transactions", "read_uncommitted")
    assert {k: v for k, v in odradek.items() if k not in timing} == {
        k: v for k, v in kafka.items() if k not in timing
    }


def test_kadm_administration(scenario: Callable[..., Results]) -> None:
    kafka, odradek = scenario("admin")
    for result in (kafka, odradek):
        assert result == {
            "create": {"error": "", "partitions": 3, "replication": 1},
            "create_again": "TOPIC_ALREADY_EXISTS",
            "listed": {"error": "", "internal": False, "replicas": {"0": 1, "1": 1, "2": 1}},
            "configs": {
                "retention.ms": ["3600000", "DYNAMIC_TOPIC_CONFIG"],
                "cleanup.policy": ["compact", "DYNAMIC_TOPIC_CONFIG"],
                "compression.type": ["producer", "DEFAULT_CONFIG"],
            },
            "produced": {str(p): [0, 1] for p in range(3)},
            "end_offsets": {str(p): 2 for p in range(3)},
            # Kafka keeps the records of a topic that is compacted and not deleted
            "delete_records_compacted": "POLICY_VIOLATION",
            "start_offsets": {"0": 1, "1": 0, "2": 0},
            "altered": {"partitions": 4, "retention.ms": "7200000", "cleanup.policy": "delete"},
            "offsets": {"0": [2, "two"], "1": [1, ""]},
            "group_listed": {
                "found": True,
                "state": "Empty",
                "type": "classic",
                "protocol_type": "",
            },
            "group_described": {"error": "", "state": "Empty", "protocol_type": "", "members": 0},
            "delete": "",
            "delete_group": "",
        }
