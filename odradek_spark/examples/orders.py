"""An example pipeline: revenue per product category per minute, from a topic of JSON
orders to a topic of results, exactly once.

    python -m odradek.spark.examples.orders                 # starts an Odradek of its own
    python -m odradek.spark.examples.orders --bootstrap HOST:PORT
    python -m odradek.spark.examples.orders --connector kafka    # Spark's own connector
    spark-submit odradek_spark/examples/orders.py --bootstrap HOST:PORT --checkpoint DIR

1. Produces a sample of orders (JSON, event times spread over a few minutes, some
   arriving out of order) to the ``orders`` topic, those of them it does not hold yet:
   run again (after a crash, say, with the same checkpoint) it produces nothing, and the
   query goes on from its checkpoint. A topic holding other records is an error.
2. Runs the Spark job a user would write: read the topic as a stream, parse the JSON
   with a schema, join a small static table of products, count orders and sum revenue
   per one-minute event-time window and category (with a watermark), and write the
   results to the ``revenue`` topic through the exactly-once sink, until the input is
   drained (``trigger(availableNow=True)``). With ``--connector kafka`` the same job reads
   and writes through Spark's own Kafka connector, ``format("kafka")`` (its sink is at
   least once: a retried task may write a result row twice, which a table read by key
   does not mind).
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
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.spark import KAFKA_CONNECTOR_PACKAGE

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
# spark.sql.shuffle.partitions: the aggregation's state and the sink's tasks (one Kafka
# transaction each per micro-batch) are split this many ways; the table is small.
SHUFFLE_PARTITIONS = 2
CONNECTORS = ("odradek", "kafka")


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
    # Idempotent: a retried send does not write an order twice.
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True}
    )
    for order in orders:
        producer.produce(topic, json.dumps(order).encode(), key=order["customer"].encode())
    if producer.flush(60) != 0:
        raise RuntimeError("could not produce the sample orders")


class InputTopicError(Exception):
    """The input topic holds records that are not the sample's (another sample, another
    program's records, or orders twice)."""


def missing_orders(
    topic: str, present: list[tuple[int, int, bytes | None]], orders: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The orders of the sample that ``present`` (partition, offset, value of each record
    in the topic) does not hold yet. Raises InputTopicError when a record is not one of
    the sample's orders or an order is there twice: counting them would give other sums
    than the check expects."""
    by_id = {order["order_id"]: order for order in orders}
    seen: set[str] = set()
    advice = (
        f"run with new --input-topic and --output-topic names and a new --checkpoint, or with "
        f"the --orders and --seed that produced {topic!r}"
    )
    for partition, offset, value in present:
        try:
            order = json.loads(value or b"")
        except ValueError:
            order = None
        order_id = order.get("order_id") if isinstance(order, dict) else None
        if not isinstance(order_id, str) or by_id.get(order_id) != order:
            raise InputTopicError(
                f"topic {topic!r} holds a record that is not one of this sample's "
                f"{len(orders)} orders (partition {partition}, offset {offset}: "
                f"{(value or b'')[:120]!r}); {advice}"
            )
        if order_id in seen:
            raise InputTopicError(
                f"topic {topic!r} holds order {order_id} twice (again at partition "
                f"{partition}, offset {offset}), so its counts would not match; {advice}"
            )
        seen.add(order_id)
    return [order for order in orders if order["order_id"] not in seen]


def ensure_orders(bootstrap: str, topic: str, orders: list[dict[str, Any]]) -> int:
    """Produce the orders ``topic`` does not hold yet; return how many that was."""
    missing = missing_orders(topic, read_records(bootstrap, topic), orders)
    if missing:
        produce_orders(bootstrap, topic, missing)
    return len(missing)


# ---------------------------------------------------------------- the Spark job


def run_job(
    spark: Any, bootstrap: str, source: str, sink: str, checkpoint: str, connector: str = "odradek"
) -> Any:
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
        spark.readStream.format(connector)
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
        results.writeStream.format(connector)
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


def read_records(
    bootstrap: str, topic: str, *, read_committed: bool = False, timeout: float = 60.0
) -> list[tuple[int, int, bytes | None]]:
    """(partition, offset, value) of every record in ``topic`` up to its current end, in
    offset order per partition (read_uncommitted by default, as the Spark source reads)."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    partitions = list(metadata.topics[topic].partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "orders-example-reader",
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    records: list[tuple[int, int, bytes | None]] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        pending = set(partitions)
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic!r} took over {timeout:.0f} s")
            for message in consumer.consume(1000, timeout=1.0):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(message.partition())
                    elif error.fatal():
                        raise RuntimeError(f"reading {topic!r}: {error}")
                    continue
                value = cast("bytes | None", message.value())
                records.append((message.partition() or 0, message.offset() or 0, value))
    finally:
        consumer.close()
    return records


def read_results(bootstrap: str, topic: str) -> dict[tuple[str, str], tuple[int, int]]:
    """The last value per key of the results topic, as a read_committed consumer sees it."""
    table: dict[tuple[str, str], tuple[int, int]] = {}
    for _, _, value in read_records(bootstrap, topic, read_committed=True):
        row = json.loads(value or b"{}")
        table[(row["window_start"], row["category"])] = (row["orders"], row["revenue_cents"])
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
        [sys.executable, "-m", "odradek", "--data-dir", str(data_dir), "--port", str(port)],
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
    parser.add_argument("--orders", type=positive_int, default=20_000, help="orders in the sample")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--input-topic", default="orders")
    parser.add_argument("--output-topic", default="revenue")
    parser.add_argument("--checkpoint", help="the query's checkpoint directory")
    parser.add_argument(
        "--shuffle-partitions",
        type=positive_int,
        help=f"spark.sql.shuffle.partitions for a new checkpoint (default: spark-submit's "
        f"--conf if given, else {SHUFFLE_PARTITIONS}); a checkpoint keeps its first value",
    )
    parser.add_argument(
        "--connector",
        choices=CONNECTORS,
        default="odradek",
        help='format("odradek"), with its exactly-once sink, or Spark\'s own format("kafka")',
    )
    parser.add_argument(
        "--kafka-jars",
        type=Path,
        help=f"a directory holding the jars of Spark's Kafka connector, for --connector kafka "
        f"(default: spark.jars.packages fetches {KAFKA_CONNECTOR_PACKAGE})",
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="odradek-orders-") as scratch:
        try:
            if args.bootstrap:
                return run(args, args.bootstrap, Path(scratch))
            with odradek(Path(scratch) / "data") as bootstrap:
                print(f"started Odradek on {bootstrap}")
                return run(args, bootstrap, Path(scratch))
        except (InputTopicError, ConnectorError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def kafka_connector_config(jars: Path | None) -> dict[str, str]:
    """What puts Spark's Kafka connector on a local session: the jars in ``jars``, or the
    package fetched from Maven Central."""
    if jars is None:
        return {"spark.jars.packages": KAFKA_CONNECTOR_PACKAGE}
    found = sorted(str(jar) for jar in jars.glob("*.jar"))
    if not found:
        raise ConnectorError(f"no jars in {jars} (--kafka-jars)")
    return {"spark.jars": ",".join(found)}


class ConnectorError(Exception):
    """Spark's Kafka connector cannot be put on the session as asked."""


def spark_session(shuffle_partitions: int | None, config: dict[str, str] | None = None) -> Any:
    """The local session, or under spark-submit the one spark-submit made (its master and
    settings) with what the job needs: window starts formatted in UTC, as the table and
    the check have them, whatever the driver's time zone; and few shuffle partitions,
    not Spark's 200 (a task and a transaction per partition and micro-batch for a table
    of a few dozen rows), unless spark-submit was given a number."""
    import odradek.spark as odradek_spark

    partitions = shuffle_partitions or SHUFFLE_PARTITIONS
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return odradek_spark.local_session(
            "orders-example", shuffle_partitions=partitions, config=config
        )
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("orders-example").getOrCreate()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    given = spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions")
    if shuffle_partitions is not None or not given:
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    odradek_spark.register(spark)
    return spark


def run(args: argparse.Namespace, bootstrap: str, scratch: Path) -> int:
    # under spark-submit, --jars or --packages put Spark's Kafka connector on the session
    kafka = args.connector == "kafka" and "PYSPARK_GATEWAY_PORT" not in os.environ
    session_config = kafka_connector_config(args.kafka_jars) if kafka else None
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic in (args.input_topic, args.output_topic):
        if topic not in admin.list_topics(timeout=30).topics:
            admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(30)

    orders = sample_orders(args.orders, args.seed)
    produced = ensure_orders(bootstrap, args.input_topic, orders)
    if produced == len(orders):
        print(f"produced {len(orders)} orders to {args.input_topic!r}")
    elif produced == 0:
        print(f"{args.input_topic!r} already holds the {len(orders)} sample orders")
    else:
        print(
            f"{args.input_topic!r} already held {len(orders) - produced} of the "
            f"{len(orders)} sample orders; produced the other {produced}"
        )

    spark = spark_session(args.shuffle_partitions, session_config)
    began = time.monotonic()
    query = run_job(
        spark,
        bootstrap,
        args.input_topic,
        args.output_topic,
        args.checkpoint or str(scratch / "checkpoint"),
        args.connector,
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
