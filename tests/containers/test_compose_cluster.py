"""docker/compose.cluster.yaml under podman-compose: a controller and three brokers in
containers of their own; a topic gets three replicas by default, and when the
container of a partition's leader is killed, another broker takes over with every
acknowledged record."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from helpers.broker import free_port
from helpers.containers import ClusterCompose, run
from helpers.names import unique_name

pytestmark = pytest.mark.usefixtures("images")


@pytest.fixture
def cluster() -> Iterator[ClusterCompose]:
    name = unique_name("odradek-cluster").replace("-", "_").lower()
    project = ClusterCompose(name, [free_port(), free_port(), free_port()], 2000)
    try:
        yield project
    finally:
        project("down", "-v", check=False)


def test_three_brokers_in_containers_fail_over(cluster: ClusterCompose) -> None:
    cluster("up", "-d")
    cluster.wait_healthy(["controller-1", *ClusterCompose.BROKERS])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic("payments", 3)]).values():  # default RF: 3
        future.result(30)
    partition = admin.list_topics("payments", timeout=10).topics["payments"].partitions[0]
    assert sorted(partition.replicas) == [2, 3, 4] and sorted(partition.isrs) == [2, 3, 4]
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True}
    )
    for i in range(100):
        producer.produce("payments", str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    run(["podman", "kill", cluster.container(cluster.service_of(partition.leader))])
    for i in range(100, 200):
        producer.produce("payments", str(i).encode(), partition=0)
    assert producer.flush(60) == 0, cluster.logs()
    after = admin.list_topics("payments", timeout=10).topics["payments"].partitions[0]
    assert after.leader != partition.leader
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "check"})
    consumer.assign([TopicPartition("payments", 0, 0)])
    values = []
    deadline = time.monotonic() + 60
    while len(values) < 200 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(int(message.value()))
    consumer.close()
    assert values == list(range(200))
