"""Spark's own Kafka connector, ``format("kafka")``, in streaming queries: a windowed
aggregation with a watermark over a checkpoint, maxOffsetsPerTrigger, failOnDataLoss after
DeleteRecords, and a broker killed during a query. Each scenario runs on Odradek and on
Apache Kafka 4.4 in the same test."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from helpers import reference_kafka
from helpers.both_brokers import KAFKA, ODRADEK, on_both
from helpers.broker import Broker, BrokerFactory
from helpers.reference_kafka import ReferenceKafka
from helpers.spark import read_topic
from helpers.topics import create_topic

QUERY_TIMEOUT = 180.0
# window-aligned event time an hour back (whole 10 s windows; inside 7 days of retention)
WINDOW_BASE_MS = (int(time.time()) - 3600) // 10 * 10 * 1000


def produce(
    bootstrap: str, topic: str, values: list[tuple[bytes, int | None]], spread: int = 0
) -> None:
    """(value, event time or None) each, acknowledged by all replicas; with `spread`,
    the i-th to partition i % spread (else the partitioner picks)."""
    failed: list[object] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, (value, timestamp) in enumerate(values):
        producer.produce(
            topic,
            value,
            partition=i % spread if spread else -1,
            timestamp=timestamp or 0,
            on_delivery=lambda error, _: error is not None and failed.append(error),
        )
    assert producer.flush(30) == 0
    assert not failed


def kafka_stream(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    reader = reader.option("subscribe", topic).option("startingOffsets", "earliest")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def to_topic(df: Any, bootstrap: str, topic: str, checkpoint: Path) -> Any:
    return (
        df.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", str(checkpoint))
    )


def run_available_now(writer: Any) -> Any:
    query = writer.trigger(availableNow=True).start()
    assert query.awaitTermination(QUERY_TIMEOUT), "the query did not finish"
    return query


def values_of(bootstrap: str, topic: str) -> list[bytes]:
    return [r.value or b"" for r in read_topic(bootstrap, topic)]


def test_windowed_aggregation_with_watermark_over_a_checkpoint(
    kafka_connector: Any,
    shared_broker: Broker,
    kafka44: ReferenceKafka,
    name_factory: Any,
    tmp_path: Path,
) -> None:
    from pyspark.sql import functions as F  # noqa: N812 - as Spark's documentation writes it

    source, sink = name_factory("events"), name_factory("counts")

    def at(second: int) -> tuple[bytes, int]:
        return b"e%d" % second, WINDOW_BASE_MS + second * 1000

    def run(bootstrap: str, checkpoint: Path) -> None:
        events = kafka_stream(kafka_connector, bootstrap, source)
        counts = (
            events.withWatermark("timestamp", "10 seconds")
            .groupBy(F.window("timestamp", "10 seconds"))
            .count()
        )
        rows = counts.select(
            ((F.col("window.start").cast("long") * 1000 - WINDOW_BASE_MS) / 1000)
            .cast("long")
            .cast("string")
            .alias("key"),
            F.col("count").cast("string").alias("value"),
        )
        run_available_now(to_topic(rows, bootstrap, sink, checkpoint).outputMode("append"))

    def scenario(bootstrap: str) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
        checkpoint = tmp_path / bootstrap.replace(":", "_")
        create_topic(bootstrap, source, partitions=2)
        create_topic(bootstrap, sink)
        produce(bootstrap, source, [at(s) for s in range(25)])  # windows 0, 10 and 20
        run(bootstrap, checkpoint)
        first = sorted((r.key or b"", r.value or b"") for r in read_topic(bootstrap, sink))
        # later events close windows 10 and 20; one at second 3 is behind the watermark
        produce(bootstrap, source, [at(s) for s in (40, 41, 3, 42, 43, 44)])
        run(bootstrap, checkpoint)  # a new query on the same checkpoint
        every = sorted((r.key or b"", r.value or b"") for r in read_topic(bootstrap, sink))
        return first, every

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes[ODRADEK] == outcomes[KAFKA]
    first, every = outcomes[ODRADEK]
    closed = [(b"0", b"10"), (b"10", b"10"), (b"20", b"5")]
    assert set(first) <= set(closed[:1])  # only window 0 was behind the first watermark
    assert every == closed  # each window once; the late event dropped; window 40 still open


def test_max_offsets_per_trigger_splits_the_backlog(
    kafka_connector: Any,
    shared_broker: Broker,
    kafka44: ReferenceKafka,
    name_factory: Any,
    tmp_path: Path,
) -> None:
    source, sink = name_factory("backlog"), name_factory("copy")

    def scenario(bootstrap: str) -> tuple[list[int], list[bytes]]:
        create_topic(bootstrap, source, partitions=2)
        create_topic(bootstrap, sink, partitions=2)
        # the same records in each partition on both brokers: Spark shares the trigger's
        # 30 between partitions by how far each is behind
        produce(bootstrap, source, [(b"%03d" % i, None) for i in range(100)], spread=2)
        stream = kafka_stream(kafka_connector, bootstrap, source, maxOffsetsPerTrigger="30")
        checkpoint = tmp_path / bootstrap.replace(":", "_")
        query = run_available_now(to_topic(stream.select("value"), bootstrap, sink, checkpoint))
        sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        return sizes, sorted(values_of(bootstrap, sink))

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes[ODRADEK] == outcomes[KAFKA]
    sizes, copied = outcomes[ODRADEK]
    assert sum(sizes) == 100 and len(sizes) >= 4 and max(sizes) <= 30
    assert copied == [b"%03d" % i for i in range(100)]


def delete_records(bootstrap: str, topic: str, before: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, before)]).values():
        future.result(30)


def test_fail_on_data_loss_after_delete_records(
    kafka_connector: Any,
    shared_broker: Broker,
    kafka44: ReferenceKafka,
    name_factory: Any,
    tmp_path: Path,
) -> None:
    from pyspark.errors import StreamingQueryException

    source, sink = name_factory("lossy"), name_factory("copy")

    def scenario(bootstrap: str) -> tuple[str, list[bytes]]:
        checkpoint = tmp_path / bootstrap.replace(":", "_")
        create_topic(bootstrap, source)
        create_topic(bootstrap, sink)

        def copy(fail_on_data_loss: str) -> Any:
            stream = kafka_stream(
                kafka_connector, bootstrap, source, failOnDataLoss=fail_on_data_loss
            )
            return run_available_now(to_topic(stream.select("value"), bootstrap, sink, checkpoint))

        produce(bootstrap, source, [(b"%02d" % i, None) for i in range(10)])
        copy("true")
        produce(bootstrap, source, [(b"%02d" % i, None) for i in range(10, 20)])
        delete_records(bootstrap, source, 15)  # offsets 10 to 14 gone before they were read
        with pytest.raises(StreamingQueryException) as refused:
            copy("true")
        copy("false")
        return refused.type.__name__, sorted(values_of(bootstrap, sink))

    outcomes = on_both(scenario, shared_broker, kafka44)
    assert outcomes[ODRADEK] == outcomes[KAFKA]
    _, copied = outcomes[ODRADEK]
    assert copied == [b"%02d" % i for i in (*range(10), *range(15, 20))]


# ------------------------------------------------------------ a broker killed mid-query


@pytest.fixture
def killable_pair(
    broker_factory: BrokerFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Broker, ReferenceKafka]]:
    """An Odradek on default settings and a Kafka 4.4 of this test's own, to kill."""
    reference_kafka.require()
    kafka = ReferenceKafka(tmp_path_factory.mktemp("kafka-spark-killed")).start()
    try:
        yield broker_factory(), kafka
    finally:
        kafka.stop()


RECORDS = 3000


def test_broker_killed_during_a_streaming_copy_loses_nothing_acknowledged(
    kafka_connector: Any,
    killable_pair: tuple[Broker, ReferenceKafka],
    name_factory: Any,
    tmp_path: Path,
) -> None:
    odradek, kafka = killable_pair
    source, sink = name_factory("in"), name_factory("out")
    by_bootstrap: dict[str, Broker | ReferenceKafka] = {
        odradek.bootstrap: odradek,
        kafka.bootstrap: kafka,
    }

    def scenario(bootstrap: str) -> dict[str, int]:
        broker = by_bootstrap[bootstrap]
        create_topic(bootstrap, source, partitions=2)
        create_topic(bootstrap, sink, partitions=2)
        stream = kafka_stream(kafka_connector, bootstrap, source)
        checkpoint = tmp_path / bootstrap.replace(":", "_")
        query = (
            to_topic(stream.select("value"), bootstrap, sink, checkpoint)
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        acknowledged: list[bytes] = []
        failed: list[object] = []

        def delivered(error: object, message: Any) -> None:
            (failed if error is not None else acknowledged).append(error or message.value())

        producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )

        def write() -> None:
            for i in range(RECORDS):
                producer.produce(source, b"%05d" % i, on_delivery=delivered)
                producer.poll(0)
                time.sleep(0.002)
            producer.flush(120)

        writer = threading.Thread(target=write)
        writer.start()
        while len(acknowledged) < RECORDS // 3:
            time.sleep(0.05)
        broker.kill()
        broker.start(60)  # beside a running Spark query and Kafka's JVM: a slow machine
        writer.join()
        assert not failed and len(acknowledged) == RECORDS
        deadline = time.monotonic() + QUERY_TIMEOUT
        copied: list[bytes] = []
        while time.monotonic() < deadline:
            assert query.exception() is None, query.exception()
            copied = values_of(bootstrap, sink)
            if set(acknowledged) <= set(copied):
                break
            time.sleep(1)
        query.stop()
        missing = set(acknowledged) - set(copied)
        assert not missing, f"{len(missing)} acknowledged records never reached the sink"
        duplicates = sum(n - 1 for n in Counter(copied).values())
        print(f"{bootstrap}: {len(copied)} copied, {duplicates} duplicates")
        return {"copied": len(set(copied)), "extra": len(set(copied) - set(acknowledged))}

    outcomes = on_both(scenario, odradek, kafka)
    assert outcomes[ODRADEK] == outcomes[KAFKA] == {"copied": RECORDS, "extra": 0}
