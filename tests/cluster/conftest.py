"""The three-broker cluster the cluster tests share, its topic creation and a reader
of a partition."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.testing import Cluster

SESSION_MS = 2000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(brokers=3, base_dir=tmp_path, session_timeout_ms=SESSION_MS) as made:
        yield made


def create_topic(
    cluster: Cluster, name: str, partitions: int = 1, factor: int = 3, **configs: str
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(name, partitions, factor, config=configs)
    for future in admin.create_topics([topic]).values():
        future.result(15)


def read_all(cluster: Cluster, topic: str, partition: int, expected: int) -> list[bytes]:
    """Every value of the partition from its start (read_committed), in order."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"check-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values
