"""A small Kafka application: `app.py produce TOPIC COUNT` or `app.py consume TOPIC COUNT GROUP`.

It finds the broker at $BOOTSTRAP_SERVERS (kafka:9092 on the compose network), and
prints one line saying what it did; a consumer commits what it read to its group."""

from __future__ import annotations

import os
import sys
import time

from kafka import KafkaConsumer, KafkaProducer

BOOTSTRAP = os.environ.get("BOOTSTRAP_SERVERS", "kafka:9092")


def produce(topic: str, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all")
    host = os.uname().nodename
    for i in range(count):
        producer.send(topic, key=host.encode(), value=f"{host}-{i}".encode())
    producer.flush(timeout=30)
    producer.close()
    print(f"produced {count} records to {topic}")


def consume(topic: str, count: int, group: str) -> None:
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=BOOTSTRAP,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    seen = 0
    deadline = time.monotonic() + 60
    while seen < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            seen += len(records)
    consumer.commit()
    consumer.close()
    print(f"consumed {seen} records from {topic} as {group}")
    if seen < count:
        sys.exit(1)


if __name__ == "__main__":
    action, topic, number = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if action == "produce":
        produce(topic, number)
    else:
        consume(topic, number, sys.argv[4])
