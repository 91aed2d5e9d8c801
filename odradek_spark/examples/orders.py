"""An example pipeline: revenue per product category per minute, from a topic of JSON
orders to a topic of results, exactly once.

    python -m odradek_spark.examples.orders                 # starts an Odradek of its own
    python -m odradek_spark.examples.orders --bootstrap HOST:PORT
    spark-submit odradek_spark/examples/orders.py --bootstrap HOST:PORT --checkpoint DIR

1. Produces a sample of orders (JSON, event times spread over a few minutes, some
   arriving out of order) to the ``orders`` topic.
2. Runs the Spark job a user would write: read the topic as a stream, parse the JSON
   with a schema, join a small static table of products, count orders and sum revenue
   per one-minute event-time window and category (with a watermark), and write the
   results to the ``revenue`` topic through the exactly-once sink, until the input is
   drained (``trigger(availableNow=True)``).
3. Reads the results back as a read_committed consumer, prints the table and checks it
   against the same sums computed in plain Python.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PRODUCTS = [
    # product id, name, category, unit price in cents
    ("p01", "espresso beans", "coffee", 1490),
    ("p02", "filter papers", "coffee", 390),
    ("p03", "moka pot", "coffee", 3450),
    ("p04", "green tea", "tea", 820),
    ("p05", "teapot", "tea", 2990),
    ("p06", "oat milk", "dairy-free", 260),
    ("p07", "almond milk", "dairy-free", 310),
    ("p08", "croissant", "bakery", 180),
    ("p09", "sourdough", "bakery", 520),
]
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
WINDOW = timedelta(minutes=1)


# ---------------------------------------------------------------- the sample data


def sample_orders(count: int, seed: int) -> list[dict[str, Any]]:
    """Orders over ten minutes of event time; one in ten arrives up to 40 s late (after
    orders with later event times)."""
    rng = random.Random(seed)
    span = 600
    orders = []
    for i in range(count):
        at = START + timedelta(seconds=span * i / count)
        if rng.random() < 0.1:
            at -= timedelta(seconds=rng.uniform(0, 40))
        product = rng.choice(PRODUCTS)
        orders.append(
            {
                "order_id": f"o{i:06d}",
                "customer": f"c{rng.randrange(500):03d}",
                "product_id": product[0],
                "quantity": rng.randint(1, 4),
                "event_time": at.isoformat(timespec="milliseconds"),
            }
        )
    return orders


def expected_revenue(orders: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, int]]:
    """(window start, category) -> (orders, revenue in cents), computed without Spark."""
    products = {p[0]: p for p in PRODUCTS}
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for order in orders:
        at = datetime.fromisoformat(order["event_time"])
        start = at - timedelta(seconds=at.second, microseconds=at.microsecond)
        _, _, category, price = products[order["product_id"]]
        entry = totals[(start.strftime("%Y-%m-%d %H:%M:%S"), category)]
        entry[0] += 1
        entry[1] += order["quantity"] * price
    return {key: (n, cents) for key, (n, cents) in totals.items()}


def produce_orders(bootstrap: str, topic: str, orders: list[dict[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for order in orders:
        producer.produce(topic, json.dumps(order).encode(), key=order["customer"].encode())
    if producer.flush(60) != 0:
        raise RuntimeError("could not produce the sample orders")


# ---------------------------------------------------------------- the Spark job


def run_job(spark: Any, bootstrap: str, source: str, sink: str, checkpoint: str) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    order_schema = StructType(
        [
            StructField("order_id", StringType()),
            StructField("customer", StringType()),
            StructField("product_id", StringType()),
            StructField("quantity", IntegerType()),
            StructField("event_time", StringType()),
        ]
    )
    products = spark.createDataFrame(
        PRODUCTS, "product_id string, name string, category string, price_cents int"
    )
    orders = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "5000")
        .load()
        .select(F.from_json(F.col("value").cast("string"), order_schema).alias("order"))
        .select("order.*")
        .withColumn("event_time", F.to_timestamp("event_time"))
    )
    revenue = (
        orders.withWatermark("event_time", "2 minutes")
        .join(products, "product_id")
        .groupBy(F.window("event_time", "1 minute").alias("window"), "category")
        .agg(
            F.count("*").alias("orders"),
            F.sum(F.col("quantity") * F.col("price_cents")).alias("revenue_cents"),
        )
    )
    # Complete mode: every micro-batch writes the whole (small) result table, keyed by
    # window and category, so the topic reads as a table whose last value per key is the
    # answer. Append mode would write each window once, but only after the watermark
    # passes it, and a finite sample never moves the watermark past its last windows;
    # Spark's Python sinks do not offer update mode.
    results = revenue.select(
        F.concat_ws("|", F.date_format("window.start", "yyyy-MM-dd HH:mm:ss"), "category").alias(
            "key"
        ),
        F.to_json(
            F.struct(
                F.date_format("window.start", "yyyy-MM-dd HH:mm:ss").alias("window_start"),
                "category",
                "orders",
                "revenue_cents",
            )
        ).alias("value"),
    )
    query = (
        results.writeStream.format("odradek")
        .outputMode("complete")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return query


# ---------------------------------------------------------------- reading the results


def read_results(bootstrap: str, topic: str) -> dict[tuple[str, str], tuple[int, int]]:
    """The last value per key of the results topic, as a read_committed consumer sees it."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    partitions = list(metadata.topics[topic].partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "orders-example-reader",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    table: dict[tuple[str, str], tuple[int, int]] = {}
    pending = set(partitions)
    deadline = time.monotonic() + 60
    while pending and time.monotonic() < deadline:
        for message in consumer.consume(1000, timeout=1.0):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition())
                continue
            row = json.loads(message.value() or b"{}")
            table[(row["window_start"], row["category"])] = (row["orders"], row["revenue_cents"])
    consumer.close()
    return table


def print_table(table: dict[tuple[str, str], tuple[int, int]]) -> None:
    print(f"{'window start (UTC)':<20} {'category':<12} {'orders':>7} {'revenue':>11}")
    for (start, category), (orders, cents) in sorted(table.items()):
        print(f"{start:<20} {category:<12} {orders:>7} {cents / 100:>11.2f}")


# ---------------------------------------------------------------- an Odradek to run on


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def odradek(data_dir: Path) -> Iterator[str]:
    """An Odradek broker process on a free local port, stopped on exit."""
    port = _free_port()
    broker = subprocess.Popen(
        [sys.executable, "-m", "broker", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if broker.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the Odradek broker did not start") from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        broker.terminate()
        broker.wait(30)


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="a Kafka or Odradek; by default one is started")
    parser.add_argument("--orders", type=int, default=20_000, help="orders in the sample")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--input-topic", default="orders")
    parser.add_argument("--output-topic", default="revenue")
    parser.add_argument("--checkpoint", help="the query's checkpoint directory")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="odradek-orders-") as scratch:
        if args.bootstrap:
            return run(args, args.bootstrap, Path(scratch))
        with odradek(Path(scratch) / "data") as bootstrap:
            print(f"started Odradek on {bootstrap}")
            return run(args, bootstrap, Path(scratch))


def run(args: argparse.Namespace, bootstrap: str, scratch: Path) -> int:
    import odradek_spark

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic in (args.input_topic, args.output_topic):
        if topic not in admin.list_topics(timeout=30).topics:
            admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(30)

    orders = sample_orders(args.orders, args.seed)
    produce_orders(bootstrap, args.input_topic, orders)
    print(f"produced {len(orders)} orders to {args.input_topic!r}")

    if "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit: its session and master
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.appName("orders-example").getOrCreate()
        odradek_spark.register(spark)
    else:
        spark = odradek_spark.local_session("orders-example")
    began = time.monotonic()
    query = run_job(
        spark,
        bootstrap,
        args.input_topic,
        args.output_topic,
        args.checkpoint or str(scratch / "checkpoint"),
    )
    took = time.monotonic() - began
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    spark.stop()

    table = read_results(bootstrap, args.output_topic)
    print_table(table)
    want = expected_revenue(orders)
    print(
        f"{len(orders)} orders in, {len(table)} result rows out, {len(batches)} micro-batches, "
        f"{took:.1f} s"
    )
    if table != want:
        wrong = sorted(k for k in set(want) | set(table) if want.get(k) != table.get(k))
        print(f"MISMATCH with the plain-Python computation in {len(wrong)} rows: {wrong[:5]}")
        return 1
    print("results match the same computation done in plain Python")
    return 0


if __name__ == "__main__":
    sys.exit(main())
