"""The example pipeline (``make pipeline``) runs end to end and its results check out; it
produces its sample orders only where the input topic does not hold them yet, and says
plainly when the topic holds something else. (``test_example_submit.py`` runs it under
spark-submit on a standalone cluster.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer
from helpers.broker import Broker
from helpers.env import missing
from helpers.spark import KAFKA_CONNECTOR_LIB, kafka_connector_jars, read_topic
from helpers.topics import create_topic

from odradek.spark.examples.orders import ensure_orders, produce_orders, sample_orders


def example(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek.spark.examples.orders", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_orders_pipeline_matches_plain_python(
    shared_broker: Broker, name_factory: Callable[[str], str], tmp_path: Path
) -> None:
    run = example(
        "--bootstrap",
        shared_broker.bootstrap,
        "--orders",
        "3000",
        "--input-topic",
        name_factory("orders"),
        "--output-topic",
        name_factory("revenue"),
        "--checkpoint",
        str(tmp_path / "ck"),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "results match the same computation done in plain Python" in run.stdout
    assert "3000 orders in, 44 result rows out" in run.stdout


def test_orders_pipeline_through_sparks_own_kafka_connector(
    shared_broker: Broker, name_factory: Callable[[str], str], tmp_path: Path
) -> None:
    if not kafka_connector_jars():
        missing(
            f"Spark's Kafka connector jars are not in {KAFKA_CONNECTOR_LIB} (make install-test)"
        )
    run = example(
        *("--bootstrap", shared_broker.bootstrap, "--orders", "3000"),
        *("--connector", "kafka", "--kafka-jars", str(KAFKA_CONNECTOR_LIB)),
        *("--input-topic", name_factory("orders"), "--output-topic", name_factory("revenue")),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "results match the same computation done in plain Python" in run.stdout
    assert "3000 orders in, 44 result rows out" in run.stdout


def test_kafka_jars_without_jars_is_a_clear_error(tmp_path: Path) -> None:
    run = example("--connector", "kafka", "--kafka-jars", str(tmp_path), timeout=60)
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"no jars in {tmp_path} (--kafka-jars)" in run.stderr


def order_ids(bootstrap: str, topic: str) -> list[str]:
    return [json.loads(r.value or b"")["order_id"] for r in read_topic(bootstrap, topic)]


def test_sample_orders_are_produced_only_where_missing(
    shared_broker: Broker, unique_topic: str
) -> None:
    """A topic holding part of the sample (a run stopped while producing) gets the rest,
    one holding all of it gets nothing more."""
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, unique_topic, partitions=2)
    orders = sample_orders(300, seed=3)
    produce_orders(bootstrap, unique_topic, orders[100:220])

    assert ensure_orders(bootstrap, unique_topic, orders) == 180
    ids = order_ids(bootstrap, unique_topic)
    assert sorted(ids) == sorted(o["order_id"] for o in orders)

    assert ensure_orders(bootstrap, unique_topic, orders) == 0
    assert len(order_ids(bootstrap, unique_topic)) == 300


def test_input_topic_with_other_records_is_a_clear_error(
    shared_broker: Broker, name_factory: Callable[[str], str]
) -> None:
    """Records that are not this sample's (another --orders or --seed, another program's)
    stop the example before Spark starts, with what to do about it; nothing is produced."""
    bootstrap = shared_broker.bootstrap
    source, sink = name_factory("orders"), name_factory("revenue")
    create_topic(bootstrap, source, partitions=2)
    produce_orders(bootstrap, source, sample_orders(50, seed=8))
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(source, b"not an order", partition=0)
    assert producer.flush(30) == 0

    args = ("--bootstrap", bootstrap, "--input-topic", source, "--output-topic", sink)
    run = example(*args, "--orders", "50", "--seed", "8", timeout=60)  # the sample and one more
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    assert "is not one of this sample's 50 orders (partition 0, offset" in run.stderr
    assert "b'not an order'" in run.stderr
    assert "new --input-topic and --output-topic names" in run.stderr

    run = example(*args, "--orders", "50", timeout=60)  # another seed: another sample
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    assert "is not one of this sample's 50 orders" in run.stderr
    assert len(read_topic(bootstrap, source)) == 51


def test_orders_twice_in_the_input_topic_is_a_clear_error(
    shared_broker: Broker, name_factory: Callable[[str], str]
) -> None:
    bootstrap = shared_broker.bootstrap
    source = name_factory("orders")
    create_topic(bootstrap, source, partitions=2)
    orders = sample_orders(20, seed=7)
    produce_orders(bootstrap, source, orders)
    produce_orders(bootstrap, source, orders[:1])
    run = example(
        *("--bootstrap", bootstrap, "--orders", "20", "--input-topic", source),
        *("--output-topic", name_factory("revenue")),
        timeout=60,
    )
    assert run.returncode == 2, run.stdout[-3000:] + run.stderr[-3000:]
    assert "holds order o000000 twice" in run.stderr


def test_bad_arguments_are_clear_errors() -> None:
    run = example("--orders", "0", timeout=60)
    assert run.returncode == 2
    assert "--orders: must be 1 or more, not 0" in run.stderr
    run = example("--shuffle-partitions", "two", timeout=60)
    assert run.returncode == 2
    assert "--shuffle-partitions: not a whole number: 'two'" in run.stderr
