"""docker/compose.cluster.yaml under podman-compose: three controllers and three brokers
in containers of their own; a topic gets three replicas by default, and when the
container of a partition's leader is killed, another broker takes over with every
acknowledged record; when the leading controller's is killed, another controller
leads and topics are created through it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from helpers.broker import free_port
from helpers.containers import ClusterCompose, run
from helpers.names import unique_name
from helpers.wire import WireClient

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
    cluster.wait_healthy([*ClusterCompose.CONTROLLERS, *ClusterCompose.BROKERS])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic("payments", 3)]).values():  # default RF: 3
        try:
            future.result(30)
        except KafkaException as exc:
            # a CreateTopics the broker passed on again after the controller answered
            # too slowly for it, on a busy machine: the topic is there all the same
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    partition = admin.list_topics("payments", timeout=10).topics["payments"].partitions[0]
    assert sorted(partition.replicas) == [4, 5, 6] and sorted(partition.isrs) == [4, 5, 6]
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
    # the leading controller's container killed: another controller leads
    active = quorum_leader(cluster)
    assert active in (1, 2, 3)
    run(["podman", "kill", cluster.container(cluster.service_of(active))])
    deadline = time.monotonic() + 30
    while quorum_leader(cluster) in (active, -1):
        assert time.monotonic() < deadline, cluster.logs()
        time.sleep(0.2)
    # (two brokers are left: the first leader's container is still down)
    for future in admin.create_topics([NewTopic("after-failover", 1, 2)]).values():
        future.result(30)
    created = admin.list_topics("after-failover", timeout=10).topics["after-failover"]
    assert len(created.partitions[0].replicas) == 2


def quorum_leader(cluster: ClusterCompose) -> int:
    """The controller leading the quorum, as a broker's DescribeQuorum shows it (-1: none,
    or no broker answered)."""
    request = {
        "topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    }
    for port in cluster.ports:
        try:
            with WireClient(f"localhost:{port}") as client:
                answer = client.call(55, 2, request)
        except OSError:
            continue
        partition = answer.topics[0].partitions[0] if answer.topics else None
        if answer.error_code == 0 and partition is not None and partition.error_code == 0:
            return int(partition.leader_id)
    return -1
