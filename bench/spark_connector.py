"""Spark connector benchmark: the ``odradek`` source and sink beside the same Kafka
client (confluent-kafka) reading and writing the same records directly, without Spark
(the ceiling), in one run against one Odradek broker.

    .venv/bin/python -m bench.spark_connector [--quick]

- source: a Spark batch read of a 2-partition topic, forced with the ``noop`` sink,
  against one consumer assigned to both partitions reading every record (touching each
  value) with ``consume()`` in batches;
- sink: a Spark batch write of a cached 2-partition data frame of values, against one
  transactional producer writing the same records in one transaction with the sink's
  settings (murmur2 partitioner, linger.ms=5).

A third row per size, "sink floor", writes the same data frame into a Python sink that
only counts the Arrow batches it is given: what Spark itself costs any Python data source
writer, the best the Kafka sink could do here.

Each Spark job is timed alone (the session is started and warmed up first). The ratio
is Spark / direct; the target is >= 0.5 on 1 KB records.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek_spark.examples.orders import odradek

RESULTS = Path(__file__).with_name("results") / "spark.json"
PARTITIONS = 2


def create_topic(bootstrap: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=PARTITIONS)])[name].result(30)
    return name


def fill(bootstrap: str, topic: str, count: int, size: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    value = b"x" * size
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0


def direct_read(bootstrap: str, topic: str, count: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-direct",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    started = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen = 0
    size = 0
    ended = 0
    while ended < PARTITIONS:
        for message in consumer.consume(2000, timeout=1.0):
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    ended += 1
                continue
            size += len(message.value() or b"")
            seen += 1
    took = time.perf_counter() - started
    consumer.close()
    assert seen == count, (seen, count)
    return took


def spark_read(spark: Any, bootstrap: str, topic: str) -> float:
    started = time.perf_counter()
    (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    return time.perf_counter() - started


def direct_write(bootstrap: str, topic: str, count: int, size: int) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-direct-{uuid.uuid4().hex}",
            "partitioner": "murmur2_random",
            "linger.ms": 5,
        }
    )
    producer.init_transactions(30)
    value = b"x" * size
    started = time.perf_counter()
    producer.begin_transaction()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    producer.commit_transaction(120)
    return time.perf_counter() - started


def dropping_sink() -> type:
    """A Python data source whose writer drops every batch (defined here, so that Spark
    ships it to its workers by value when this file runs as ``__main__``)."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class Dropping(DataSourceArrowWriter):
        def write(self, iterator: Any) -> WriterCommitMessage:
            for batch in iterator:
                batch.column("value").to_pylist()  # what any sink does first
            return WriterCommitMessage()

    class DroppingSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "dropping"

        def writer(self, schema: Any, overwrite: bool) -> Dropping:
            return Dropping()

    return DroppingSource


def spark_write(
    spark: Any, bootstrap: str, topic: str, count: int, size: int, fmt: str = "odradek"
) -> float:
    frame = (
        spark.range(count, numPartitions=PARTITIONS)
        .selectExpr(f"CAST(repeat('x', {size}) AS BINARY) AS value")
        .cache()
    )
    assert frame.count() == count
    started = time.perf_counter()
    (
        frame.write.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    took = time.perf_counter() - started
    frame.unpersist()
    return took


def row(case: str, count: int, size: int, spark_s: float, direct_s: float) -> dict[str, Any]:
    return {
        "case": case,
        "records": count,
        "record_bytes": size,
        "spark_records_per_s": count / spark_s,
        "direct_records_per_s": count / direct_s,
        "spark_mb_per_s": count * size / spark_s / 1e6,
        "direct_mb_per_s": count * size / direct_s / 1e6,
        "ratio": direct_s / spark_s,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few records, for a smoke run")
    args = parser.parse_args()
    cases = [(1024, 20_000), (100, 50_000)] if args.quick else [(1024, 200_000), (100, 1_000_000)]

    import odradek_spark

    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-spark-") as scratch,
        odradek(Path(scratch) / "data") as bootstrap,
    ):
        spark = odradek_spark.local_session("bench-spark")
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(dropping_sink())
        warm = create_topic(bootstrap, "warm-up")
        fill(bootstrap, warm, 1000, 100)
        spark_read(spark, bootstrap, warm)
        spark_write(spark, bootstrap, create_topic(bootstrap, "warm-up-out"), 1000, 100)
        for size, count in cases:
            source = create_topic(bootstrap, f"source-{size}")
            fill(bootstrap, source, count, size)
            direct = min(direct_read(bootstrap, source, count) for _ in range(2))
            through_spark = min(spark_read(spark, bootstrap, source) for _ in range(2))
            rows.append(row(f"source {size} B", count, size, through_spark, direct))
            direct = direct_write(bootstrap, create_topic(bootstrap, f"direct-{size}"), count, size)
            through_spark = spark_write(
                spark, bootstrap, create_topic(bootstrap, f"sink-{size}"), count, size
            )
            rows.append(row(f"sink {size} B", count, size, through_spark, direct))
            floor = spark_write(spark, bootstrap, "unused", count, size, fmt="dropping")
            rows.append(row(f"sink floor {size} B", count, size, floor, direct))
        spark.stop()

    print(
        f"{'case':<14} {'records':>9} {'Spark rec/s':>12} {'direct rec/s':>13} "
        f"{'Spark MB/s':>11} {'direct MB/s':>12} {'ratio':>6}"
    )
    for r in rows:
        print(
            f"{r['case']:<18} {r['records']:>9} {r['spark_records_per_s']:>12,.0f} "
            f"{r['direct_records_per_s']:>13,.0f} {r['spark_mb_per_s']:>11.1f} "
            f"{r['direct_mb_per_s']:>12.1f} {r['ratio']:>6.2f}"
        )
    if not args.quick:
        RESULTS.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
        print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
