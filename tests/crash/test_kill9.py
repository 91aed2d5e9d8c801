"""kill -9 and damaged segment files: acknowledged data survives, damage is cut off."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    futures[topic].result(10)


def consume_all(bootstrap: str, topic: str, expected: int, timeout: float = 30) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(topic, 0, 0)])
    messages = []
    deadline = time.monotonic() + timeout
    while len(messages) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        messages.append(msg)
    # read a little longer to catch duplicates beyond the expected count
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            messages.append(msg)
    consumer.close()
    return messages


def test_idempotent_acks_all_producer_survives_kill9(broker, unique_topic) -> None:
    create_topic(broker.bootstrap, unique_topic)
    acked: list[int] = []
    lock = threading.Lock()
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 2,
            "message.timeout.ms": 60000,
            "retry.backoff.ms": 50,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 200,
        }
    )

    def delivered(err, msg) -> None:
        if err is None:
            with lock:
                acked.append(int(msg.value()))

    stop = threading.Event()

    def produce_forever() -> None:
        i = 0
        while not stop.is_set():
            try:
                producer.produce(
                    unique_topic, value=str(i).encode(), partition=0, on_delivery=delivered
                )
                i += 1
            except BufferError:
                pass
            producer.poll(0)
            if i % 50 == 0:
                time.sleep(0.005)

    sender = threading.Thread(target=produce_forever)
    sender.start()
    for _round in range(3):
        time.sleep(1.0)
        broker.kill()
        time.sleep(0.3)
        broker.start()
    time.sleep(1.0)
    stop.set()
    sender.join()
    assert producer.flush(60) == 0
    assert len(acked) > 100

    messages = consume_all(broker.bootstrap, unique_topic, len(acked))
    values = [int(m.value()) for m in messages]
    offsets = [m.offset() for m in messages]
    assert offsets == list(range(len(offsets))), "offsets are contiguous from 0"
    assert len(values) == len(set(values)), "no record is stored twice"
    assert set(acked) <= set(values), "every acknowledged record is stored"
    assert values == sorted(values), "records keep the order they were sent in"


def _segments(data_dir: Path, topic: str) -> list[Path]:
    return sorted((data_dir / f"{topic}-0").glob("*.log"))


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
        producer.flush(10)
    assert producer.flush(10) == 0


def test_torn_tail_is_truncated_and_rest_served(broker, unique_topic) -> None:
    create_topic(broker.bootstrap, unique_topic)
    _produce(broker.bootstrap, unique_topic, 20)
    broker.kill()
    segment = _segments(broker.data_dir, unique_topic)[-1]
    size = segment.stat().st_size
    with open(segment, "r+b") as f:
        f.truncate(size - 7)  # cut into the last batch
    broker.start()
    values = [m.value() for m in consume_all(broker.bootstrap, unique_topic, 19, timeout=10)]
    assert values == [f"v{i}".encode() for i in range(19)]
    _produce(broker.bootstrap, unique_topic, 1)
    messages = consume_all(broker.bootstrap, unique_topic, 20, timeout=10)
    assert [m.offset() for m in messages] == list(range(20))


def test_garbled_tail_is_truncated(broker, unique_topic) -> None:
    create_topic(broker.bootstrap, unique_topic)
    _produce(broker.bootstrap, unique_topic, 10)
    broker.kill()
    segment = _segments(broker.data_dir, unique_topic)[-1]
    with open(segment, "r+b") as f:
        f.seek(-5, os.SEEK_END)
        f.write(b"\xde\xad\xbe\xef\x00")
        f.seek(0, os.SEEK_END)
        f.write(os.urandom(100))  # trailing garbage after it
    broker.start()
    values = [m.value() for m in consume_all(broker.bootstrap, unique_topic, 9, timeout=10)]
    assert values == [f"v{i}".encode() for i in range(9)]
