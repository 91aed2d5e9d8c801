"""Spark's own Kafka connector, ``format("kafka")`` (spark-sql-kafka 4.2 with its
kafka-clients 3.9), in batch queries: each scenario runs on Odradek and on Apache Kafka
4.4 in the same test, and both must give the same rows."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer
from helpers.both_brokers import KAFKA, ODRADEK, on_both
from helpers.broker import Broker
from helpers.reference_kafka import ReferenceKafka
from helpers.spark import read_topic
from helpers.topics import create_topic

# event times of the records produced below: whole seconds an hour back (older ones
# would be past the topics' 7 days of retention, and Kafka deletes them)
BASE_MS = (int(time.time()) - 3600) * 1000
PER_PARTITION = 20


def produce_numbered(bootstrap: str, topic: str, partitions: int) -> None:
    """PER_PARTITION records in each partition: key p-i, value v-p-i, a header, and
    timestamp BASE_MS + i seconds."""
    failed: list[object] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(partitions):
        for i in range(PER_PARTITION):
            producer.produce(
                topic,
                f"v-{p}-{i}".encode(),
                f"{p}-{i}".encode(),
                partition=p,
                timestamp=BASE_MS + i * 1000,
                headers=[("n", str(i).encode()), ("n", b"again")],
                on_delivery=lambda error, _: error is not None and failed.append(error),
            )
    assert producer.flush(30) == 0
    assert not failed


def kafka_read(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def offsets_of(df: Any) -> list[tuple[str, int, int]]:
    rows = df.select("topic", "partition", "offset").collect()
    return sorted((r.topic, r.partition, r.offset) for r in rows)


def same_on_both(scenario: Callable[[str], Any], broker: Broker, kafka: ReferenceKafka) -> Any:
    outcomes = on_both(scenario, broker, kafka)
    assert outcomes[ODRADEK] == outcomes[KAFKA]
    return outcomes[ODRADEK]


def test_batch_write_with_key_value_headers_and_partition_column(
    kafka_connector: Any, shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    rows = [
        (f"k{i}", f"v{i}" * (i + 1), [("h", str(i).encode()), ("h2", None)], i % 3)
        for i in range(30)
    ]
    schema = (
        "key string, value string, headers array<struct<key:string,value:binary>>, partition int"
    )

    def scenario(bootstrap: str) -> list[tuple[Any, ...]]:
        create_topic(bootstrap, unique_topic, partitions=3)
        df = kafka_connector.createDataFrame(rows, schema)
        df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option(
            "topic", unique_topic
        ).save()
        # two tasks write at once: order within a partition is theirs to choose
        return sorted(
            (r.partition, r.key, r.value, r.headers) for r in read_topic(bootstrap, unique_topic)
        )

    written = same_on_both(scenario, shared_broker, kafka44)
    assert written == sorted(
        (
            i % 3,
            f"k{i}".encode(),
            (f"v{i}" * (i + 1)).encode(),
            (("h", str(i).encode()), ("h2", None)),
        )
        for i in range(30)
    )


def test_batch_write_topic_column_and_null_key(
    kafka_connector: Any, shared_broker: Broker, kafka44: ReferenceKafka, name_factory: Any
) -> None:
    first, second = name_factory("a"), name_factory("b")

    def scenario(bootstrap: str) -> list[tuple[Any, ...]]:
        for topic in (first, second):
            create_topic(bootstrap, topic)
        df = kafka_connector.createDataFrame(
            [(first, None, b"x"), (second, b"k", b"y"), (first, b"k", None)],
            "topic string, key binary, value binary",
        )
        df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).save()
        return [
            sorted((r.key or b"", r.value or b"") for r in read_topic(bootstrap, topic))
            for topic in (first, second)
        ]

    assert same_on_both(scenario, shared_broker, kafka44) == [
        [(b"", b"x"), (b"k", b"")],
        [(b"k", b"y")],
    ]


def test_batch_read_by_offsets_json(
    kafka_connector: Any, shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    def scenario(bootstrap: str) -> list[tuple[str, int, int]]:
        create_topic(bootstrap, unique_topic, partitions=2)
        produce_numbered(bootstrap, unique_topic, 2)
        starting = json.dumps({unique_topic: {"0": 5, "1": -2}})  # -2: earliest
        ending = json.dumps({unique_topic: {"0": 15, "1": -1}})  # -1: latest
        df = kafka_read(
            kafka_connector,
            bootstrap,
            subscribe=unique_topic,
            startingOffsets=starting,
            endingOffsets=ending,
        )
        return offsets_of(df)

    got = same_on_both(scenario, shared_broker, kafka44)
    assert got == [(unique_topic, 0, o) for o in range(5, 15)] + [
        (unique_topic, 1, o) for o in range(PER_PARTITION)
    ]


def test_batch_read_by_timestamps(
    kafka_connector: Any, shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    def scenario(bootstrap: str) -> tuple[list[Any], list[Any]]:
        create_topic(bootstrap, unique_topic, partitions=2)
        produce_numbered(bootstrap, unique_topic, 2)
        by_partition = kafka_read(
            kafka_connector,
            bootstrap,
            subscribe=unique_topic,
            startingOffsetsByTimestamp=json.dumps(
                {unique_topic: {"0": BASE_MS + 10_000, "1": BASE_MS + 3_500}}
            ),
            endingOffsetsByTimestamp=json.dumps(
                {unique_topic: {"0": BASE_MS + 12_000, "1": BASE_MS + 99_000_000}}
            ),
        )
        everywhere = kafka_read(
            kafka_connector,
            bootstrap,
            subscribe=unique_topic,
            startingTimestamp=str(BASE_MS + 17_000),
        )
        rows = everywhere.select("partition", "offset", "timestamp", "timestampType").collect()
        stamped = sorted(
            (r.partition, r.offset, int(r.timestamp.timestamp() * 1000), r.timestampType)
            for r in rows
        )
        return offsets_of(by_partition), stamped

    by_partition, stamped = same_on_both(scenario, shared_broker, kafka44)
    # from the first record at or after the time; ending before the first at or after it
    assert by_partition == [(unique_topic, 0, 10), (unique_topic, 0, 11)] + [
        (unique_topic, 1, o) for o in range(4, PER_PARTITION)
    ]
    assert stamped == [
        (p, o, BASE_MS + o * 1000, 0) for p in (0, 1) for o in range(17, PER_PARTITION)
    ]


def test_batch_read_assign_and_subscribe_pattern(
    kafka_connector: Any, shared_broker: Broker, kafka44: ReferenceKafka, name_factory: Any
) -> None:
    prefix = name_factory("pattern")
    first, second, other = f"{prefix}-one", f"{prefix}-two", f"{prefix}x-three"

    def scenario(bootstrap: str) -> tuple[list[Any], list[Any]]:
        for topic in (first, second, other):
            create_topic(bootstrap, topic, partitions=2)
            produce_numbered(bootstrap, topic, 2)
        assigned = kafka_read(
            kafka_connector, bootstrap, assign=json.dumps({first: [1], second: [0]})
        )
        pattern = kafka_read(kafka_connector, bootstrap, subscribePattern=f"{prefix}-.*")
        return offsets_of(assigned), offsets_of(pattern)

    assigned, pattern = same_on_both(scenario, shared_broker, kafka44)
    every = range(PER_PARTITION)
    assert assigned == [(first, 1, o) for o in every] + [(second, 0, o) for o in every]
    assert pattern == [(t, p, o) for t in (first, second) for p in (0, 1) for o in every]


def test_include_headers_and_min_partitions(
    kafka_connector: Any, shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    def scenario(bootstrap: str) -> tuple[int, int, list[Any]]:
        create_topic(bootstrap, unique_topic, partitions=2)
        produce_numbered(bootstrap, unique_topic, 2)
        plain = kafka_read(kafka_connector, bootstrap, subscribe=unique_topic)
        split = kafka_read(kafka_connector, bootstrap, subscribe=unique_topic, minPartitions="6")
        with_headers = kafka_read(
            kafka_connector, bootstrap, subscribe=unique_topic, includeHeaders="true"
        )
        rows = with_headers.select("partition", "offset", "key", "value", "headers").collect()
        assert "headers" not in plain.columns
        return (
            plain.rdd.getNumPartitions(),
            split.rdd.getNumPartitions(),
            sorted(
                (
                    r.partition,
                    r.offset,
                    bytes(r.key),
                    bytes(r.value),
                    [(h.key, bytes(h.value)) for h in r.headers],
                )
                for r in rows
            ),
        )

    plain_tasks, split_tasks, rows = same_on_both(scenario, shared_broker, kafka44)
    assert plain_tasks == 2
    assert split_tasks >= 6
    assert rows == [
        (
            p,
            i,
            f"{p}-{i}".encode(),
            f"v-{p}-{i}".encode(),
            [("n", str(i).encode()), ("n", b"again")],
        )
        for p in (0, 1)
        for i in range(PER_PARTITION)
    ]


def test_read_committed_over_aborted_transactions(
    kafka_connector: Any, shared_broker: Broker, kafka44: ReferenceKafka, unique_topic: str
) -> None:
    def scenario(bootstrap: str) -> tuple[list[bytes], list[bytes]]:
        create_topic(bootstrap, unique_topic, partitions=2)
        producer = Producer(
            {"bootstrap.servers": bootstrap, "transactional.id": f"{unique_topic}-{bootstrap}"}
        )
        producer.init_transactions(30)
        for txn, commit in enumerate((True, False, True, False, True)):
            producer.begin_transaction()
            for i in range(4):
                producer.produce(unique_topic, f"t{txn}-{i}".encode(), partition=i % 2)
            assert producer.flush(30) == 0  # in the log before the abort
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
        committed = kafka_read(
            kafka_connector,
            bootstrap,
            subscribe=unique_topic,
            **{"kafka.isolation.level": "read_committed"},
        )
        everything = kafka_read(
            kafka_connector,
            bootstrap,
            subscribe=unique_topic,
            **{"kafka.isolation.level": "read_uncommitted"},
        )
        return (
            sorted(bytes(r.value) for r in committed.select("value").collect()),
            sorted(bytes(r.value) for r in everything.select("value").collect()),
        )

    committed, everything = same_on_both(scenario, shared_broker, kafka44)
    assert committed == sorted(f"t{t}-{i}".encode() for t in (0, 2, 4) for i in range(4))
    assert everything == sorted(f"t{t}-{i}".encode() for t in range(5) for i in range(4))
