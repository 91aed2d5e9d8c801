"""Streaming through ``format("odradek")`` and the sink's output as other clients see it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions
from helpers import java
from helpers.broker import Broker
from helpers.spark import read_topic
from helpers.topics import create_topic


def stream(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def produce(bootstrap: str, topic: str, values: list[str], partition: int = -1) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value.encode(), partition=partition)
    assert producer.flush(30) == 0


def wait_for(check: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_stream_picks_up_new_records_and_new_partitions(
    spark: Any, shared_broker: Broker, unique_topic: str, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    create_topic(boot, unique_topic, partitions=1)
    produce(boot, unique_topic, [f"a{i}" for i in range(10)])
    table = "seen_" + unique_topic[-10:]
    query = (
        stream(spark, boot, unique_topic)
        .selectExpr("partition", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(table)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    try:

        def seen() -> set[tuple[int, str]]:
            return {(r.partition, r.value) for r in spark.table(table).collect()}

        wait_for(lambda: len(seen()) == 10, "the first records")
        produce(boot, unique_topic, [f"b{i}" for i in range(5)])
        wait_for(lambda: len(seen()) == 15, "records produced while the query runs")
        admin = AdminClient({"bootstrap.servers": boot})
        for future in admin.create_partitions([NewPartitions(unique_topic, 3)]).values():
            future.result(30)
        produce(boot, unique_topic, ["on-1"], partition=1)
        produce(boot, unique_topic, ["on-2"], partition=2)
        wait_for(lambda: len(seen()) == 17, "records in partitions added while running")
        assert {(1, "on-1"), (2, "on-2")} <= seen()
        assert query.exception() is None
    finally:
        query.stop()


def test_max_offsets_per_trigger_caps_each_micro_batch(
    spark: Any, shared_broker: Broker, unique_topic: str, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    create_topic(boot, unique_topic, partitions=2)
    produce(boot, unique_topic, [str(i) for i in range(350)])
    query = (
        stream(spark, boot, unique_topic, maxOffsetsPerTrigger="100")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    rows = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(rows) == 350
    assert len(rows) >= 4 and max(rows) <= 100, rows


def test_read_committed_stream_stops_at_open_transactions(
    spark: Any, shared_broker: Broker, unique_topic: str, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    create_topic(boot, unique_topic)
    txn = Producer({"bootstrap.servers": boot, "transactional.id": unique_topic})
    txn.init_transactions(30)
    for outcome in ("commit", "abort", "open"):
        txn.begin_transaction()
        for i in range(3):
            txn.produce(unique_topic, f"{outcome}-{i}".encode())
        assert txn.flush(30) == 0
        if outcome == "commit":
            txn.commit_transaction(30)
        elif outcome == "abort":
            txn.abort_transaction(30)

    def run() -> list[str]:
        seen: list[str] = []
        query = (
            stream(spark, boot, unique_topic, **{"kafka.isolation.level": "read_committed"})
            .selectExpr("CAST(value AS STRING) AS value")
            .writeStream.foreachBatch(lambda df, _batch: seen.extend(r.value for r in df.collect()))
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120)
        return sorted(seen)

    assert run() == ["commit-0", "commit-1", "commit-2"]
    txn.commit_transaction(30)
    # the same query, restarted from its checkpoint, goes on past the now-committed records
    assert run() == ["open-0", "open-1", "open-2"]


def test_sink_output_is_read_back_by_other_clients(
    spark: Any, shared_broker: Broker, name_factory: Any, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    batch_topic, stream_topic, source = (
        name_factory("batch"),
        name_factory("stream"),
        name_factory("src"),
    )
    create_topic(boot, batch_topic, partitions=3)
    rows = [
        ("k1", "v1", 0, [("h", b"x")]),
        (None, "no key", 1, None),
        ("k3", "v3", None, [("a", b"1"), ("b", None)]),
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value string, partition int, headers array<struct<key:string,value:binary>>",
    )
    df.write.format("odradek").option("kafka.bootstrap.servers", boot).option(
        "topic", batch_topic
    ).mode("append").save()

    got = read_topic(boot, batch_topic)
    assert sorted(((r.key, r.value, r.headers) for r in got), key=repr) == sorted(
        [
            (b"k1", b"v1", (("h", b"x"),)),
            (None, b"no key", None),
            (b"k3", b"v3", (("a", b"1"), ("b", None))),
        ],
        key=repr,
    )
    by_value = {r.value: r.partition for r in got}
    assert by_value[b"v1"] == 0 and by_value[b"no key"] == 1
    java_got = java.consume(
        boot, batch_topic, until_end=True, isolation_level="read_committed"
    ).records
    assert sorted(java.decode_bytes(r["value"]) or b"" for r in java_got) == sorted(
        [b"v1", b"no key", b"v3"]
    )

    from kafka import KafkaConsumer

    create_topic(boot, source, partitions=2)
    create_topic(boot, stream_topic, partitions=2)
    produce(boot, source, [f"s{i}" for i in range(50)])
    query = (
        stream(spark, boot, source)
        .selectExpr("CONCAT('t-', CAST(value AS STRING)) AS value", "key")
        .writeStream.format("odradek")
        .option("kafka.bootstrap.servers", boot)
        .option("topic", stream_topic)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    consumer = KafkaConsumer(
        stream_topic,
        bootstrap_servers=boot,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        consumer_timeout_ms=5000,
    )
    values = sorted(m.value.decode() for m in consumer)
    consumer.close()
    assert values == sorted(f"t-s{i}" for i in range(50))


def test_topic_recreated_smaller_is_data_loss(
    spark: Any, shared_broker: Broker, unique_topic: str, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    create_topic(boot, unique_topic)
    produce(boot, unique_topic, [str(i) for i in range(20)])

    def run(**options: str) -> Exception | None:
        query = (
            stream(spark, boot, unique_topic, **options)
            .writeStream.format("noop")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            assert query.awaitTermination(120)
        except Exception as exc:  # Spark re-raises the query's failure here
            return exc
        return None

    assert run() is None
    admin = AdminClient({"bootstrap.servers": boot})
    for future in admin.delete_topics([unique_topic], operation_timeout=30).values():
        future.result(30)
    create_topic(boot, unique_topic)
    produce(boot, unique_topic, ["again"])
    failed = run()
    assert failed is not None and "now end before offsets already read" in str(failed)
    assert run(failOnDataLoss="false") is None
