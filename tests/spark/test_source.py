"""Spark batch reads through ``format("odradek")`` against a real broker: what each real
client produced comes back column by column, and the options pick the right records."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions
from helpers import java
from helpers.broker import Broker
from helpers.spark import Record, read_topic, records_from_rows
from helpers.topics import create_topic

NOW_MS = int(time.time() * 1000)

# (key, value, headers, timestamp) sent by every client; partitions chosen by key hash
SAMPLE: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int]] = [
    (b"k1", b"v1", [("h", b"x"), ("h", b"y")], NOW_MS - 60_000),
    (None, b"no key", [], NOW_MS - 50_000),
    (b"tombstone", None, [], NOW_MS - 40_000),
    (b"\x00\xff", b"\x80\x81" * 300, [("bin", b"\x00\x01")], NOW_MS - 30_000),
    (b"", b"", [], NOW_MS - 20_000),
] + [(f"key-{i}".encode(), f"value-{i}".encode() * 20, [], NOW_MS + i) for i in range(200)]


def read(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
    reader = reader.option("subscribe", topic)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def produce_librdkafka(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd"})
    for key, value, headers, ts in SAMPLE:
        producer.produce(topic, value, key, headers=headers or None, timestamp=ts)
    assert producer.flush(30) == 0


def produce_java(bootstrap: str, topic: str) -> None:
    lines = [
        java.record_line(key, value, headers=headers, timestamp=ts)
        for key, value, headers, ts in SAMPLE
    ]
    java.produce(bootstrap, topic, records=lines, compression="lz4", linger_ms=20).check()


def produce_kafka_python(bootstrap: str, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip")
    for key, value, headers, ts in SAMPLE:
        producer.send(topic, value=value, key=key, headers=headers, timestamp_ms=ts)
    producer.flush(30)
    producer.close()


def produce_aiokafka(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="snappy")
        await producer.start()
        try:
            for key, value, headers, ts in SAMPLE:
                await producer.send(topic, value=value, key=key, headers=headers, timestamp_ms=ts)
            await producer.flush()
        finally:
            await producer.stop()

    asyncio.run(run())


PRODUCERS: dict[str, Callable[[str, str], None]] = {
    "librdkafka-zstd": produce_librdkafka,
    "java-lz4": produce_java,
    "kafka-python-gzip": produce_kafka_python,
    "aiokafka-snappy": produce_aiokafka,
}


@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_batch_read_equals_what_each_client_produced(
    spark: Any, shared_broker: Broker, unique_topic: str, client: str
) -> None:
    create_topic(shared_broker.bootstrap, unique_topic, partitions=3)
    PRODUCERS[client](shared_broker.bootstrap, unique_topic)
    expected = read_topic(shared_broker.bootstrap, unique_topic)
    assert len(expected) == len(SAMPLE)

    df = read(spark, shared_broker.bootstrap, unique_topic, includeHeaders="true")
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    rows = df.collect()
    assert {r.topic for r in rows} == {unique_topic}
    assert records_from_rows(rows) == expected
    # and what the client sent, whatever partition it chose
    got = {(r.key, r.value, r.headers or (), r.timestamp) for r in expected}
    sent = {(k, v, tuple(h), ts) for k, v, h, ts in SAMPLE}
    assert got == sent
    # no headers column unless asked, as in Spark's Kafka source
    assert "headers" not in read(spark, shared_broker.bootstrap, unique_topic).columns


def test_log_append_time_topics_report_timestamp_type_1(
    spark: Any, shared_broker: Broker, unique_topic: str
) -> None:
    create_topic(
        shared_broker.bootstrap, unique_topic, configs={"message.timestamp.type": "LogAppendTime"}
    )
    produce_librdkafka(shared_broker.bootstrap, unique_topic)
    rows = read(spark, shared_broker.bootstrap, unique_topic).collect()
    assert len(rows) == len(SAMPLE)
    assert {r.timestampType for r in rows} == {1}
    assert records_from_rows(rows) == [
        Record(r.partition, r.offset, r.key, r.value, None, r.timestamp, r.timestamp_type)
        for r in read_topic(shared_broker.bootstrap, unique_topic)
    ]


def test_offsets_timestamps_assign_pattern_and_min_partitions(
    spark: Any, shared_broker: Broker, unique_topic: str
) -> None:
    boot = shared_broker.bootstrap
    create_topic(boot, unique_topic, partitions=2)
    producer = Producer({"bootstrap.servers": boot})
    for i in range(100):
        producer.produce(unique_topic, str(i).encode(), partition=i % 2, timestamp=1_000_000 + i)
    assert producer.flush(30) == 0

    def offsets(df: Any) -> list[tuple[int, int]]:
        return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())

    everything = read(spark, boot, unique_topic)
    assert offsets(everything) == [(p, o) for p in (0, 1) for o in range(50)]

    ranged = read(
        spark,
        boot,
        unique_topic,
        startingOffsets=f'{{"{unique_topic}": {{"0": 10, "1": -2}}}}',
        endingOffsets=f'{{"{unique_topic}": {{"0": 20, "1": -1}}}}',
    )
    assert offsets(ranged) == [(0, o) for o in range(10, 20)] + [(1, o) for o in range(50)]

    # record i has timestamp 1_000_000 + i and sits at offset i // 2 of partition i % 2
    timed = read(spark, boot, unique_topic, startingTimestamp="1000090")
    assert offsets(timed) == [(0, o) for o in range(45, 50)] + [(1, o) for o in range(45, 50)]
    by_partition = read(
        spark,
        boot,
        unique_topic,
        startingOffsetsByTimestamp=f'{{"{unique_topic}": {{"1": 1000021}}}}',
        endingOffsetsByTimestamp=f'{{"{unique_topic}": {{"1": 1000031}}}}',
    )
    assert offsets(by_partition) == [(0, o) for o in range(50)] + [(1, o) for o in range(10, 15)]
    with pytest.raises(Exception, match="No record in"):
        read(spark, boot, unique_topic, startingTimestamp="2000000").collect()
    late = read(
        spark,
        boot,
        unique_topic,
        startingTimestamp="2000000",
        startingOffsetsByTimestampStrategy="latest",
    )
    assert late.count() == 0

    assigned = (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", boot)
        .option("assign", f'{{"{unique_topic}": [1]}}')
        .load()
    )
    assert offsets(assigned) == [(1, o) for o in range(50)]

    pattern = (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", boot)
        .option("subscribePattern", unique_topic[:-3] + ".*")
        .load()
    )
    assert {r.topic for r in pattern.select("topic").distinct().collect()} >= {unique_topic}

    split = read(spark, boot, unique_topic, minPartitions="6")
    assert split.rdd.getNumPartitions() == 6
    assert offsets(split) == offsets(everything)


def test_read_committed_hides_aborted_and_open_transactions(
    spark: Any, shared_broker: Broker, unique_topic: str
) -> None:
    boot = shared_broker.bootstrap
    create_topic(boot, unique_topic)

    def txn_producer(name: str) -> Producer:
        p = Producer({"bootstrap.servers": boot, "transactional.id": f"{unique_topic}-{name}"})
        p.init_transactions(30)
        p.begin_transaction()
        return p

    committed = txn_producer("a")
    for i in range(5):
        committed.produce(unique_topic, f"committed-{i}".encode())
    committed.commit_transaction(30)
    aborted = txn_producer("b")
    for i in range(5):
        aborted.produce(unique_topic, f"aborted-{i}".encode())
    assert aborted.flush(30) == 0  # else the client drops them instead of aborting them
    aborted.abort_transaction(30)
    left_open = txn_producer("c")
    for i in range(5):
        left_open.produce(unique_topic, f"open-{i}".encode())
    assert left_open.flush(30) == 0
    plain = Producer({"bootstrap.servers": boot})
    plain.produce(unique_topic, b"after-open")
    assert plain.flush(30) == 0

    def values(**options: str) -> list[str]:
        rows = read(spark, boot, unique_topic, **options).select("value").collect()
        return sorted(r.value.decode() for r in rows)

    assert values(**{"kafka.isolation.level": "read_committed"}) == [
        f"committed-{i}" for i in range(5)
    ]  # stops at the open transaction: the last stable offset
    assert len(values()) == 16  # read_uncommitted: everything, aborted and open included
    left_open.commit_transaction(30)
    assert values(**{"kafka.isolation.level": "read_committed"}) == sorted(
        [f"committed-{i}" for i in range(5)] + [f"open-{i}" for i in range(5)] + ["after-open"]
    )


def test_lost_offsets_follow_fail_on_data_loss(
    spark: Any, shared_broker: Broker, unique_topic: str
) -> None:
    boot = shared_broker.bootstrap
    create_topic(boot, unique_topic)
    producer = Producer({"bootstrap.servers": boot})
    for i in range(30):
        producer.produce(unique_topic, str(i).encode())
    assert producer.flush(30) == 0
    from confluent_kafka import TopicPartition

    admin = AdminClient({"bootstrap.servers": boot})
    done = admin.delete_records([TopicPartition(unique_topic, 0, 10)])
    for future in done.values():
        future.result(30)
    from_zero = f'{{"{unique_topic}": {{"0": 0}}}}'
    with pytest.raises(Exception, match="Lost data"):
        read(spark, boot, unique_topic, startingOffsets=from_zero).collect()
    rows = read(spark, boot, unique_topic, startingOffsets=from_zero, failOnDataLoss="false")
    assert sorted(r.offset for r in rows.select("offset").collect()) == list(range(10, 30))


def test_batch_read_sees_partitions_added_to_a_topic(
    spark: Any, shared_broker: Broker, unique_topic: str
) -> None:
    boot = shared_broker.bootstrap
    create_topic(boot, unique_topic, partitions=1)
    admin = AdminClient({"bootstrap.servers": boot})
    for future in admin.create_partitions([NewPartitions(unique_topic, 3)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": boot})
    for p in range(3):
        producer.produce(unique_topic, f"p{p}".encode(), partition=p)
    assert producer.flush(30) == 0
    rows = read(spark, boot, unique_topic).collect()
    assert sorted((r.partition, r.value) for r in rows) == [(p, f"p{p}".encode()) for p in range(3)]
