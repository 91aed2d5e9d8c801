"""What a Spark user sees when something is wrong: a clear error in bounded time, never a
hang. Unknown topics, a broker nobody listens on, bad options on both sides."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.broker import Broker, free_port

# generous for a loaded CI machine, far below a hang
BOUND = 60.0


def closed_port() -> int:
    port = free_port()
    with socket.socket() as s:  # nothing listens there
        s.settimeout(0.2)
        assert s.connect_ex(("127.0.0.1", port)) != 0
    return port


def failure_of(action: Any) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(Exception) as caught:  # noqa: PT011 - Spark wraps the error
        action()
    return str(caught.value), time.monotonic() - started


def reader(spark: Any, bootstrap: str, **options: str) -> Any:
    r = spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        r = r.option(name, value)
    return r


def test_unknown_topic_is_an_error(spark: Any, shared_broker: Broker, unique_topic: str) -> None:
    message, took = failure_of(
        lambda: reader(spark, shared_broker.bootstrap, subscribe=unique_topic).load().collect()
    )
    assert f"Topic(s) not found on {shared_broker.bootstrap}: {unique_topic}" in message
    assert took < BOUND
    message, _ = failure_of(
        lambda: (
            reader(spark, shared_broker.bootstrap, assign=f'{{"{unique_topic}": [0]}}')
            .load()
            .collect()
        )
    )
    assert "Assigned partitions do not exist" in message


def test_unknown_topic_fails_a_streaming_query(
    spark: Any, shared_broker: Broker, unique_topic: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    query = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", shared_broker.bootstrap)
        .option("subscribe", unique_topic)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .start()
    )
    message, _ = failure_of(lambda: query.awaitTermination(BOUND))
    assert "Topic(s) not found" in message
    assert time.monotonic() - started < BOUND


def test_unreachable_broker_fails_within_the_timeout(spark: Any, tmp_path: Path) -> None:
    nowhere = f"127.0.0.1:{closed_port()}"
    message, took = failure_of(
        lambda: (
            reader(spark, nowhere, subscribe="t", **{"kafkaConsumer.pollTimeoutMs": "3000"})
            .load()
            .collect()
        )
    )
    assert f"Kafka at {nowhere} failed within 3 s" in message
    assert took < BOUND

    frame = spark.createDataFrame([("v",)], "value string")
    message, took = failure_of(
        lambda: (
            frame.write.format("odradek")
            .option("kafka.bootstrap.servers", nowhere)
            .option("topic", "t")
            .option("kafkaProducer.timeoutMs", "3000")
            .mode("append")
            .save()
        )
    )
    assert "KafkaSinkError" in message and "failed" in message
    assert took < BOUND


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "Exactly one of the options 'subscribe', 'subscribePattern' or 'assign'"),
        ({"subscribe": "t", "startingOffsets": "latest"}, "'latest' is not valid in batch"),
        ({"subscribe": "t", "startingOffsets": "{bad"}, "is not valid JSON"),
        ({"subscribe": "t", "kafka.auto.offset.reset": "x"}, "not supported"),
    ],
)
def test_bad_source_options(
    spark: Any, shared_broker: Broker, options: dict[str, str], message: str
) -> None:
    error, took = failure_of(
        lambda: reader(spark, shared_broker.bootstrap, **options).load().collect()
    )
    assert message in error
    assert took < BOUND


def test_user_schema_is_refused(spark: Any, shared_broker: Broker) -> None:
    error, _ = failure_of(
        lambda: (
            reader(spark, shared_broker.bootstrap, subscribe="t")
            .schema("value string")
            .load()
            .collect()
        )
    )
    assert "fixed schema" in error


@pytest.mark.parametrize(
    ("columns", "options", "message"),
    [
        ("key string", {"topic": "t"}, "Required attribute 'value' not found"),
        ("value int", {"topic": "t"}, "value attribute type must be a string or binary"),
        ("value string", {}, "topic option required when no 'topic' attribute is present"),
        ("value string, partition string", {"topic": "t"}, "partition attribute type"),
    ],
)
def test_bad_sink_input(
    spark: Any, shared_broker: Broker, columns: str, options: dict[str, str], message: str
) -> None:
    frame = spark.createDataFrame([], columns)
    writer = frame.write.format("odradek").option(
        "kafka.bootstrap.servers", shared_broker.bootstrap
    )
    for name, value in options.items():
        writer = writer.option(name, value)
    error, took = failure_of(lambda: writer.mode("append").save())
    assert message in error
    assert took < BOUND


def test_null_topic_in_the_data_is_an_error(spark: Any, shared_broker: Broker) -> None:
    frame = spark.createDataFrame([(None, "v")], "topic string, value string")
    error, _ = failure_of(
        lambda: (
            frame.write.format("odradek")
            .option("kafka.bootstrap.servers", shared_broker.bootstrap)
            .mode("append")
            .save()
        )
    )
    assert "null topic present in the data" in error
