"""Transactional producers and send_offsets_to_transaction with aiokafka and kafka-python."""

from __future__ import annotations

import pytest
from helpers.env import require_module
from helpers.topics import create_topic
from txn_clients import rdk_read
from txn_helpers import READ_COMMITTED, Wire

pytestmark = pytest.mark.timeout(120)


def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    return [m.value() for m in rdk_read(bootstrap, topic, "read_committed")]


def all_values(bootstrap: str, topic: str) -> list[bytes]:
    return [m.value() for m in rdk_read(bootstrap, topic, "read_uncommitted")]


def group_offset(bootstrap: str, group: str, topic: str) -> tuple[int, int]:
    with Wire(bootstrap) as w:
        return w.offset_fetch(group, [(topic, 0)], require_stable=True)[(topic, 0)]


async def test_aiokafka_transactions(
    shared_broker, unique_topic, unique_group, name_factory
) -> None:
    require_module("aiokafka")
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import ProducerFenced
    from aiokafka.structs import TopicPartition

    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    source = name_factory("src")
    create_topic(b, source)
    tid = name_factory("tid")
    producer = AIOKafkaProducer(bootstrap_servers=b, transactional_id=tid)
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(unique_topic, b"c1", partition=0)
            await producer.send_and_wait(unique_topic, b"c2", partition=0)
            await producer.send_offsets_to_transaction({TopicPartition(source, 0): 4}, unique_group)
        assert group_offset(b, unique_group, source) == (4, 0)

        await producer.begin_transaction()
        await producer.send_and_wait(unique_topic, b"a1", partition=0)
        await producer.send_offsets_to_transaction({TopicPartition(source, 0): 9}, unique_group)
        await producer.abort_transaction()
        assert group_offset(b, unique_group, source) == (4, 0)

        # zombie fencing: a second producer with the same id
        await producer.begin_transaction()
        await producer.send_and_wait(unique_topic, b"zombie", partition=0)
        fresh = AIOKafkaProducer(bootstrap_servers=b, transactional_id=tid)
        await fresh.start()
        try:
            async with fresh.transaction():
                await fresh.send_and_wait(unique_topic, b"fresh", partition=0)
        finally:
            await fresh.stop()
        with pytest.raises(ProducerFenced):
            await producer.commit_transaction()
    finally:
        await producer.stop()
    assert committed_values(b, unique_topic) == [b"c1", b"c2", b"fresh"]
    assert all_values(b, unique_topic) == [b"c1", b"c2", b"a1", b"zombie", b"fresh"]


def test_kafka_python_transactions(shared_broker, unique_topic, unique_group, name_factory) -> None:
    require_module("kafka")
    from kafka import KafkaProducer
    from kafka.structs import OffsetAndMetadata, TopicPartition

    b = shared_broker.bootstrap
    create_topic(b, unique_topic)
    source = name_factory("src")
    create_topic(b, source)
    tid = name_factory("tid")
    producer = KafkaProducer(bootstrap_servers=b, transactional_id=tid)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(unique_topic, b"c1", partition=0)
        producer.send(unique_topic, b"c2", partition=0)
        producer.send_offsets_to_transaction(
            {TopicPartition(source, 0): OffsetAndMetadata(6, "", -1)}, unique_group
        )
        producer.commit_transaction()
        assert group_offset(b, unique_group, source) == (6, 0)

        producer.begin_transaction()
        producer.send(unique_topic, b"a1", partition=0).get(15)
        producer.send_offsets_to_transaction(
            {TopicPartition(source, 0): OffsetAndMetadata(11, "", -1)}, unique_group
        )
        with Wire(b) as w:  # open: read_committed stops before it
            assert w.list_offset(unique_topic, 0, READ_COMMITTED) == 3
        producer.abort_transaction()
        assert group_offset(b, unique_group, source) == (6, 0)

        for i in range(20):  # back to back
            producer.begin_transaction()
            producer.send(unique_topic, b"n%d" % i, partition=0)
            producer.send_offsets_to_transaction(
                {TopicPartition(source, 0): OffsetAndMetadata(100 + i, "", -1)}, unique_group
            )
            producer.commit_transaction()
        assert group_offset(b, unique_group, source) == (119, 0)
    finally:
        producer.close(timeout=10)
    assert committed_values(b, unique_topic) == [b"c1", b"c2"] + [b"n%d" % i for i in range(20)]
    assert len(all_values(b, unique_topic)) == 23
