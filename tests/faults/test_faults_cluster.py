"""Faults in a cluster: a follower whose fetching is paused falls out of the ISR, and
comes back into it once the fault is over; what was acknowledged meanwhile is all
there, on every replica."""

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


def test_a_paused_follower_leaves_the_isr_and_comes_back() -> None:
    with Cluster(3, faults=True) as cluster:
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic("paused", 1, 3)]).values():
            future.result(30)
        _wait(lambda: len(cluster.isr_of("paused", 0)) == 3, 30, "the ISR is full")
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
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.node(follower).bootstrap_servers,
                "group.id": "paused-reader",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition("paused", 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 40 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        consumer.close()
        assert values == [f"m{i}".encode() for i in range(40)]
