"""Faults met by the Java client 4.4 (tests/java's KafkaTool): an idempotent producer
retrying a lost leader, a consumer group whose coordinator is away, a transaction
whose commit meets CONCURRENT_TRANSACTIONS; everything acknowledged is read back."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from helpers import java
from helpers.java import record_line

from odradek.testing import Broker, FaultControl

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", autouse=True)
def _java_tool() -> None:
    java.command(["--help"])  # compile once


@pytest.fixture
def faults(shared_broker: Broker) -> Iterator[FaultControl]:
    control = shared_broker.faults
    yield control
    control.clear()


def test_an_idempotent_producer_retries_a_lost_leader(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    java.admin(bootstrap, "create-topic", "--topic", unique_topic, "--partitions", "1")
    faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic=unique_topic)
    sent = [record_line(f"k{i}", f"v{i}") for i in range(30)]
    acks = java.produce(bootstrap, unique_topic, records=sent, idempotence=True).records
    assert sorted(a["offset"] for a in acks) == list(range(30))
    assert faults.in_force() == [], str(faults.in_force())  # the three refusals were met
    got = java.consume(bootstrap, unique_topic, until_end=True).records
    assert [r["value"] for r in got] == [f"v{i}" for i in range(30)]


def test_a_group_consumes_once_its_coordinator_is_back(
    shared_broker: Broker, faults: FaultControl, unique_topic: str, unique_group: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    java.admin(bootstrap, "create-topic", "--topic", unique_topic, "--partitions", "2")
    java.produce(bootstrap, unique_topic, count=10)
    fault = faults.coordinator("unavailable", group=unique_group, duration_ms=2000)
    started = time.monotonic()
    got = java.consume(bootstrap, unique_topic, group=unique_group, max_records=10).records
    assert len(got) == 10
    assert time.monotonic() - started >= 1.5
    assert fault.fired() == 0  # over


def test_a_commit_meets_concurrent_transactions_and_succeeds(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    transactional_id = f"{unique_topic}-tx"
    java.admin(bootstrap, "create-topic", "--topic", unique_topic, "--partitions", "1")
    faults.error("EndTxn", "CONCURRENT_TRANSACTIONS", count=2, transactional_id=transactional_id)
    records = [record_line(None, f"t{i}") for i in range(5)]
    java.produce(
        bootstrap,
        unique_topic,
        records=records,
        transaction="commit",
        props={"transactional.id": transactional_id},
    )
    assert faults.in_force() == []
    got = java.consume(
        bootstrap, unique_topic, until_end=True, isolation_level="read_committed"
    ).records
    assert [r["value"] for r in got] == [f"t{i}" for i in range(5)]


def test_a_leaderless_partition_holds_the_producer_until_it_has_a_leader(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    java.admin(bootstrap, "create-topic", "--topic", unique_topic, "--partitions", "1")
    java.produce(bootstrap, unique_topic, count=1)  # the leader known
    faults.leaderless(unique_topic, 0, duration_ms=2000)
    started = time.monotonic()
    acks = java.produce(bootstrap, unique_topic, count=5, idempotence=True).records
    assert time.monotonic() - started >= 1.5
    assert sorted(a["offset"] for a in acks) == list(range(1, 6))


def test_a_slow_broker_past_the_clients_request_timeout(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    """Answers held back past request.timeout.ms: the producer times the request out
    and sends it again; idempotence keeps each record once."""
    bootstrap = shared_broker.bootstrap_servers
    java.admin(bootstrap, "create-topic", "--topic", unique_topic, "--partitions", "1")
    faults.delay("Produce", 3000, count=1, topic=unique_topic)
    acks = java.produce(
        bootstrap,
        unique_topic,
        count=5,
        idempotence=True,
        props={"request.timeout.ms": 1000, "delivery.timeout.ms": 20000},
    ).records
    assert sorted(a["offset"] for a in acks) == list(range(5))
    got = java.consume(bootstrap, unique_topic, until_end=True).records
    assert [r["value"] for r in got] == [f"value-{i}" for i in range(5)]
