"""Faults injected into a real broker, met by librdkafka (confluent-kafka): what the
application sees while the fault lasts, and that nothing acknowledged is lost once
it ends."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.testing import Broker, FaultControl, FaultRefused, free_port


@pytest.fixture
def faults(shared_broker: Broker) -> Iterator[FaultControl]:
    control = shared_broker.faults
    yield control
    control.clear()


def _topic(bootstrap: str, name: str, partitions: int = 1) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions)]).values():
        future.result(15)
    return name


def _produce(bootstrap: str, topic: str, count: int, **config: object) -> list[int]:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, **config})
    errors: list[KafkaError] = []
    offsets: list[int] = []

    def delivered(error: KafkaError | None, message: object) -> None:
        if error is not None:
            errors.append(error)
        else:
            offsets.append(message.offset())  # type: ignore[attr-defined]

    for i in range(count):
        producer.produce(topic, f"m{i}".encode(), on_delivery=delivered)
    producer.flush(60)
    assert errors == []
    return offsets


def _consume_all(bootstrap: str, topic: str, group: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def test_a_producer_retries_not_leader_and_every_message_arrives_once(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic(bootstrap, unique_topic)
    fault = faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic=topic)
    offsets = _produce(bootstrap, topic, 50, **{"retry.backoff.ms": 20, "linger.ms": 5})
    assert fault.fired() == 0 and faults.in_force() == []  # all three used, and over
    assert sorted(offsets) == list(range(50))
    values = _consume_all(bootstrap, topic, f"{topic}-reader", 50)
    assert sorted(values) == sorted(f"m{i}".encode() for i in range(50))


def test_a_fault_scoped_to_another_topic_leaves_this_one_alone(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic(bootstrap, unique_topic)
    other = faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=5, topic=f"{topic}-other")
    assert _produce(bootstrap, topic, 3) == [0, 1, 2]
    assert other.fired() == 0 and len(faults.in_force()) == 1


def test_a_slow_broker_and_the_clients_request_timeout(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    """The answer held back past the producer's delivery timeout: the application gets
    _MSG_TIMED_OUT; once the fault is over, the next message goes through."""
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic(bootstrap, unique_topic)
    _produce(bootstrap, topic, 1)  # connected and the leader known
    faults.delay("Produce", 4000, duration_ms=3000, topic=topic)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "request.timeout.ms": 1000,
            "message.timeout.ms": 1500,
            "retries": 0,
        }
    )
    errors: list[KafkaError | None] = []
    producer.produce(topic, b"late", on_delivery=lambda error, _m: errors.append(error))
    producer.flush(10)
    assert [e.code() if e else None for e in errors] == [KafkaError._MSG_TIMED_OUT]
    time.sleep(3.2)  # the fault's time is over
    assert _produce(bootstrap, topic, 1) != []


def test_a_consumer_group_meets_an_unavailable_coordinator_and_then_consumes(
    shared_broker: Broker, faults: FaultControl, unique_topic: str, unique_group: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic(bootstrap, unique_topic, partitions=2)
    _produce(bootstrap, topic, 20)
    fault = faults.coordinator("unavailable", group=unique_group, duration_ms=2000)
    started = time.monotonic()
    values = _consume_all(bootstrap, topic, unique_group, 20)
    assert len(values) == 20
    assert time.monotonic() - started >= 1.5  # nothing came before the coordinator did
    assert fault.fired() == 0  # over


def test_closed_connections_are_made_again(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic(bootstrap, unique_topic)
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": f"{topic}-client"})
    producer.produce(topic, b"before")
    assert producer.flush(15) == 0
    assert faults.close_connections(client_id=f"{topic}-client") >= 1
    producer.produce(topic, b"after")
    assert producer.flush(15) == 0
    assert sorted(_consume_all(bootstrap, topic, f"{topic}-g", 2)) == [b"after", b"before"]


def test_a_leaderless_partition_holds_the_producer_until_it_has_a_leader_again(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic(bootstrap, unique_topic)
    faults.leaderless(topic, 0, duration_ms=1500)
    started = time.monotonic()
    assert _produce(bootstrap, topic, 5, **{"retry.backoff.ms": 50}) == [0, 1, 2, 3, 4]
    assert time.monotonic() - started >= 1.0


def test_faults_are_refused_by_a_broker_not_started_for_them(
    broker: Broker, unique_topic: str
) -> None:
    with pytest.raises(FaultRefused, match="fault injection is off on this broker"):
        broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=1)
    # and the broker serves Kafka clients as ever
    topic = _topic(broker.bootstrap_servers, unique_topic)
    assert _produce(broker.bootstrap_servers, topic, 2) == [0, 1]


def test_a_transaction_meets_concurrent_transactions_and_commits(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    """CONCURRENT_TRANSACTIONS on EndTxn (the id's previous transaction still
    completing) is retried by the producer; the transaction commits, and a
    read_committed consumer sees it once. (librdkafka 2.16 adds partitions with
    Produce, transactions version 2, so AddPartitionsToTxn is not sent.)"""
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic(bootstrap, unique_topic)
    transactional_id = f"{topic}-tx"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(15)
    fault = faults.error(
        "EndTxn", "CONCURRENT_TRANSACTIONS", count=2, transactional_id=transactional_id
    )
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"t{i}".encode())
    producer.commit_transaction(30)
    assert fault.fired() == 0 and faults.in_force() == []  # both refusals met
    consumer_values = _consume_all(bootstrap, topic, f"{topic}-reader", 5)
    assert sorted(consumer_values) == [f"t{i}".encode() for i in range(5)]


def test_a_fault_shows_in_the_log_and_in_the_metrics(unique_topic: str) -> None:
    metrics_port = free_port("127.0.0.1")
    node = Broker(faults=True, metrics_port=metrics_port).start()
    try:
        topic = _topic(node.bootstrap_servers, unique_topic)
        node.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic=topic)
        _produce(node.bootstrap_servers, topic, 1, **{"retry.backoff.ms": 20})
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics") as answer:
            text = answer.read().decode()
        assert 'odradek_faults_applied_total{api="Produce",kind="error"} 2.0' in text
        log = node.log_text()
        assert '"event": "fault set"' in log and log.count('"event": "fault applied"') == 2
        assert '"why": "over"' in log
    finally:
        node.close()
