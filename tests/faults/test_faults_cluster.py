"""Faults in a cluster: a follower whose fetching is paused falls out of the ISR and
comes back into it once the fault is over; a leader moved by the controller, which
the producer follows. What was acknowledged is all there."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.testing import Cluster


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"not within {timeout} s: {what}"
        time.sleep(0.1)
    return time.monotonic() - started


def _in_sync(cluster: Cluster, topic: str) -> None:
    """A topic of one partition on all three nodes, each in sync."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, 1, 3)]).values():
        future.result(30)
    _wait(lambda: len(cluster.isr_of(topic, 0)) == 3, 30, "the ISR is full")


def _read(bootstrap: str, topic: str, count: int) -> list[bytes]:
    """Partition 0 from its start (assigned: no group coordinator needed)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def test_a_paused_follower_leaves_the_isr_and_comes_back() -> None:
    with Cluster(3, faults=True) as cluster:
        bootstrap = cluster.bootstrap_servers
        _in_sync(cluster, "paused")
        leader = cluster.leader_of("paused", 0)
        follower = next(n for n in cluster.isr_of("paused", 0) if n != leader)
        fault = cluster.node(follower).faults.pause_fetching("paused", 0, duration_ms=6000)

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "1"})
        for i in range(20):
            producer.produce("paused", f"m{i}".encode())
        assert producer.flush(30) == 0
        _wait(lambda: follower not in cluster.isr_of("paused", 0), 10, "the follower leaves")
        assert fault.fired() > 0
        for i in range(20, 40):
            producer.produce("paused", f"m{i}".encode())
        assert producer.flush(30) == 0
        _wait(lambda: follower in cluster.isr_of("paused", 0), 20, "the follower is back")

        # the follower holds everything: it leads, the others gone, and serves it all
        for node in cluster.nodes:
            if node != follower:
                cluster.node(node).stop()
        _wait(lambda: cluster.leader_of("paused", 0) == follower, 30, "the follower leads")
        values = _read(cluster.node(follower).bootstrap_servers, "paused", 40)
        assert values == [f"m{i}".encode() for i in range(40)]


def test_a_leader_moved_by_the_controller_and_the_producer_follows() -> None:
    with Cluster(3, faults=True) as cluster:
        bootstrap = cluster.bootstrap_servers
        _in_sync(cluster, "moving")
        before = cluster.leader_of("moving", 0)
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        for i in range(10):
            producer.produce("moving", f"m{i}".encode())
        assert producer.flush(30) == 0
        after = cluster.controller.faults.move_leader("moving", 0)
        assert after != before
        _wait(lambda: cluster.leader_of("moving", 0) == after, 10, "the new leader shows")
        for i in range(10, 20):
            producer.produce("moving", f"m{i}".encode())
        assert producer.flush(30) == 0
        assert _read(bootstrap, "moving", 20) == [f"m{i}".encode() for i in range(20)]
