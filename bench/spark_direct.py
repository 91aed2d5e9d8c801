"""The Spark benchmark's ceiling: the same Kafka client (confluent-kafka) the connector
uses, driven directly, without Spark (see bench/spark.py)."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from bench.peers import (
    ErrorSink,
    payloads,
)
from odradek.spark.reader import CONSUME_CHUNK, consumer_config
from odradek.spark.sink import producer_config

CLIENT_TIMEOUT = 120.0


def direct_read(bootstrap: str, topic: str, partitions: int, sink: ErrorSink) -> tuple[int, int]:
    """Read every partition of ``topic`` from offset 0 to its high watermark with the Spark
    reader's consumer settings (no group): (records, value bytes).

    The topic has no gaps (no transactions), so the records still due are known: consume()
    is never asked for more, or its last call would wait out its timeout."""
    settings = consumer_config({"bootstrap.servers": bootstrap, "client.id": "odradek-bench"})
    consumer = Consumer({**settings, "error_cb": sink})
    records = value_bytes = 0
    try:
        expected = sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=CLIENT_TIMEOUT)[1]
            for p in range(partitions)
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        idle_since = time.monotonic()
        while records < expected:
            batch = consumer.consume(min(CONSUME_CHUNK, expected - records), timeout=1.0)
            if not batch:
                if time.monotonic() - idle_since > CLIENT_TIMEOUT:
                    raise RuntimeError(f"direct read of {topic} stalled at {records}/{expected}")
                continue
            idle_since = time.monotonic()
            for message in batch:
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(error)
                    continue
                value = message.value()
                value_bytes += len(value) if value is not None else 0
                records += 1
    finally:
        consumer.close()
    return records, value_bytes


def direct_write(bootstrap: str, topic: str, count: int, size: int, sink: ErrorSink) -> None:
    """``count`` records of ``size`` bytes in one transaction, with the Spark sink's
    producer settings (murmur2_random, linger.ms=5) and its way of waiting for room.
    Unlike the sink, no consumer group marker is read or committed."""
    settings = producer_config(
        {"bootstrap.servers": bootstrap, "client.id": "odradek-bench"},
        f"odradek-bench-direct-{uuid.uuid4().hex[:10]}",
    )
    producer = Producer({**settings, "error_cb": sink})
    values = payloads(size)
    produce_one = producer.produce
    # connected first, as the sink's tasks are: init_transactions() on a fresh producer
    # otherwise sometimes waits ~0.5 s for librdkafka's coordinator query
    producer.list_topics(timeout=CLIENT_TIMEOUT)
    producer.init_transactions(CLIENT_TIMEOUT)
    producer.begin_transaction()
    for i in range(count):
        value = values[i & 15]
        try:
            produce_one(topic, value)
        except BufferError:
            while True:
                producer.poll(0.05)
                try:
                    produce_one(topic, value)
                    break
                except BufferError:
                    continue
        if i & 1023 == 0:
            producer.poll(0)
    producer.commit_transaction(CLIENT_TIMEOUT)


def committed_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Records of ``topic`` a read_committed consumer sees (commit markers excluded)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "odradek-bench-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    seen = 0
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        pending = set(range(partitions))
        deadline = time.monotonic() + CLIENT_TIMEOUT
        while pending and time.monotonic() < deadline:
            for message in consumer.consume(10_000, timeout=0.5):
                if message.error() is not None:
                    pending.discard(message.partition())
                else:
                    seen += 1
    finally:
        consumer.close()
    return seen
