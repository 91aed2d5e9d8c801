"""Faults met by aiokafka: a producer that retries a partition's lost leader, and a
consumer group whose coordinator is away while it joins; nothing acknowledged lost."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from odradek.testing import Broker, FaultControl


@pytest.fixture
def faults(shared_broker: Broker) -> Iterator[FaultControl]:
    control = shared_broker.faults
    yield control
    control.clear()


async def _topic(bootstrap: str, name: str, partitions: int = 1) -> str:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()
    return name


async def _consume(bootstrap: str, topic: str, group: str, expected: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest"
    )
    await consumer.start()
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            values += [m.value for messages in batches.values() for m in messages if m.value]
    finally:
        await consumer.stop()
    return values


async def test_a_producer_retries_a_lost_leader_and_every_message_arrives_once(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = await _topic(bootstrap, unique_topic)
    fault = faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic=topic, partition=0)
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, enable_idempotence=True, retry_backoff_ms=20
    )
    await producer.start()
    try:
        sent = [await producer.send_and_wait(topic, f"m{i}".encode()) for i in range(10)]
    finally:
        await producer.stop()
    assert [record.offset for record in sent] == list(range(10))
    assert fault.fired() == 0 and faults.in_force() == []
    values = await _consume(bootstrap, topic, f"{topic}-reader", 10)
    assert sorted(values) == sorted(f"m{i}".encode() for i in range(10))


async def test_a_group_joins_once_its_coordinator_is_back(
    shared_broker: Broker, faults: FaultControl, unique_topic: str, unique_group: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = await _topic(bootstrap, unique_topic, partitions=2)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(6):
            await producer.send_and_wait(topic, f"v{i}".encode(), partition=i % 2)
    finally:
        await producer.stop()
    faults.coordinator("loading", group=unique_group, duration_ms=1500)
    started = time.monotonic()
    values = await _consume(bootstrap, topic, unique_group, 6)
    assert sorted(values) == [f"v{i}".encode() for i in range(6)]
    assert time.monotonic() - started >= 1.0


async def test_a_leaderless_partition_holds_the_producer_until_it_has_a_leader(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = await _topic(bootstrap, unique_topic)
    faults.leaderless(topic, 0, duration_ms=1500)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, retry_backoff_ms=50)
    await producer.start()
    started = time.monotonic()
    try:
        sent = [await producer.send_and_wait(topic, f"m{i}".encode()) for i in range(5)]
    finally:
        await producer.stop()
    assert time.monotonic() - started >= 1.0
    assert [record.offset for record in sent] == list(range(5))


async def test_a_transaction_meets_concurrent_transactions_and_commits(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = await _topic(bootstrap, unique_topic)
    transactional_id = f"{topic}-tx"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id)
    await producer.start()
    fault = faults.error(
        "AddPartitionsToTxn", "CONCURRENT_TRANSACTIONS", count=2, transactional_id=transactional_id
    )
    try:
        async with producer.transaction():
            for i in range(5):
                await producer.send(topic, f"t{i}".encode())
    finally:
        await producer.stop()
    assert fault.fired() == 0 and faults.in_force() == []  # both refusals met
    values = await _consume(bootstrap, topic, f"{topic}-reader", 5)
    assert sorted(values) == [f"t{i}".encode() for i in range(5)]


async def test_closed_connections_are_made_again(
    shared_broker: Broker, faults: FaultControl, unique_topic: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = await _topic(bootstrap, unique_topic)
    client_id = f"{topic}-client"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=client_id)
    await producer.start()
    try:
        first = await producer.send_and_wait(topic, b"before")
        assert faults.close_connections(client_id=client_id) >= 1
        second = await producer.send_and_wait(topic, b"after")
    finally:
        await producer.stop()
    assert (first.offset, second.offset) == (0, 1)
