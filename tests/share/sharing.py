"""Share-group helpers for tests: confluent-kafka ShareConsumers, group configs set
through the AdminClient, and polling until records arrive."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Message, Producer, ShareConsumer
from helpers import group_configs

# short timeouts, so that tests of expiry take seconds (the broker's bounds are lowered too)
FAST = {
    "group.share.heartbeat.interval.ms": 500,
    "group.share.min.heartbeat.interval.ms": 100,
    "group.share.session.timeout.ms": 6000,
    "group.share.min.session.timeout.ms": 1000,
    "group.share.record.lock.duration.ms": 3000,
    "group.share.min.record.lock.duration.ms": 1000,
}


@dataclass(frozen=True)
class Delivery:
    partition: int
    offset: int
    value: bytes
    delivery_count: int


def share_consumer(
    bootstrap: str, group: str, topics: Iterable[str], **config: object
) -> ShareConsumer:
    settings: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group}
    settings.update({k.replace("_", "."): v for k, v in config.items()})
    consumer = ShareConsumer(settings)
    consumer.subscribe(list(topics))
    return consumer


def explicit(bootstrap: str, group: str, topics: Iterable[str]) -> ShareConsumer:
    return share_consumer(bootstrap, group, topics, share_acknowledgement_mode="explicit")


def describe_group_configs(bootstrap: str, group: str) -> dict[str, tuple[str, int]]:
    """name -> (value, source) of every config of the group."""
    described = group_configs.describe_group_configs(bootstrap, group)
    return {name: (entry.value, int(entry.source)) for name, entry in described.items()}


def earliest_group(bootstrap: str, group: str) -> str:
    """A group that starts from the beginning of its partitions (the default is latest)."""
    group_configs.set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    return group


def produce(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes],
    partition: int | None = None,
    batch_records: int = 10000,
) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": batch_records}
    )
    for value in values:
        if partition is None:
            producer.produce(topic, value)
        else:
            producer.produce(topic, value, partition=partition)
    assert producer.flush(30) == 0


def delivery(message: Message) -> Delivery:
    error = message.error()
    assert error is None, error
    value = message.value()
    assert isinstance(value, bytes)
    return Delivery(
        message.partition() or 0, message.offset() or 0, value, message.delivery_count()
    )


def poll_once(consumer: ShareConsumer, timeout: float = 0.5) -> list[tuple[Message, Delivery]]:
    return [(m, delivery(m)) for m in consumer.poll(timeout)]


def poll_until(consumer: ShareConsumer, count: int, timeout: float = 30.0) -> list[Delivery]:
    """Poll (implicit acknowledgement) until `count` records came, or the time is up."""
    got: list[Delivery] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got.extend(d for _m, d in poll_once(consumer))
    return got


def poll_for(consumer: ShareConsumer, seconds: float) -> list[Delivery]:
    """Everything that arrives in `seconds` (implicit acknowledgement)."""
    got: list[Delivery] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got.extend(d for _m, d in poll_once(consumer))
    return got


def share_among(
    bootstrap: str, group: str, topic: str, members: int, expected: int, hold: float = 20.0
) -> dict[int, list[Delivery]]:
    """`members` ShareConsumers, each in a thread, read `topic` (implicit
    acknowledgement) until `expected` records came in all, or 60 s; then one more
    second, so that anything delivered twice shows. What each member received.
    A member keeps each poll's records locked a moment, and until every member has
    some (at most `hold` seconds, less than the lock duration): a member that joins
    late on a busy machine still finds records left to share."""
    received: dict[int, list[Delivery]] = {index: [] for index in range(members)}
    done = threading.Event()

    def member(index: int) -> None:
        consumer = share_consumer(bootstrap, group, [topic])
        try:
            while not done.is_set():
                got = poll_once(consumer)
                received[index].extend(d for _m, d in got)
                time.sleep(0.05)  # work on the records, holding their locks
                until = time.monotonic() + hold
                while got and not all(received.values()) and time.monotonic() < until:
                    if done.wait(0.05):
                        break
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(i,)) for i in range(members)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while sum(map(len, received.values())) < expected and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1)
    done.set()
    for thread in threads:
        thread.join(30)
    return received
