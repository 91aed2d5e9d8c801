"""A partition that starts with one tiny batch and goes on with large ones is served
like the same partition without it: whole batches, the same Fetch round trips.

(A consume loop that asks librdkafka for `num_messages` at a time waits its whole
timeout on a last call that finds fewer: one warm-up record more makes 300,000
records end on such a call, which once looked like a 6.6x slower broker. Here the
loop never asks for more than is left, and the broker's Fetch count is compared.)
"""

from __future__ import annotations

import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from helpers.broker import BrokerFactory, free_port
from helpers.topics import create_topic

pytestmark = pytest.mark.timeout(120)

RECORDS = 6000  # 1 KB each: about six batches of librdkafka's default 1 MB
FETCH = 'odradek_requests_total{api="fetch"}'


def _fetches(port: int | None) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    for line in text.decode().splitlines():
        if line.startswith(FETCH):
            return float(line.rpartition(" ")[2])
    return 0.0


def _fill(bootstrap: str, topic: str, warm_up: bool) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 100})
    if warm_up:
        producer.produce(topic, b"w", partition=0)
        producer.flush(10)
    value = b"v" * 1000
    for _ in range(RECORDS):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(30) == 0


def _read_all(bootstrap: str, topic: str, expected: int) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "layouts", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = 0
        for _ in range(1000):
            if got >= expected:
                break
            for message in consumer.consume(num_messages=min(1000, expected - got), timeout=5):
                assert message.error() is None, message.error()
                got += 1
        return got
    finally:
        consumer.close()


def test_tiny_first_batch_costs_no_extra_fetches(
    broker_factory: BrokerFactory, unique_topic: str
) -> None:
    broker = broker_factory(start=False)
    broker.metrics_port = free_port()
    broker.start()
    plain, warmed = f"{unique_topic}-plain", f"{unique_topic}-warmed"
    fetches = {}
    for topic, warm_up in ((plain, False), (warmed, True)):
        create_topic(broker.bootstrap, topic, 1)
        _fill(broker.bootstrap, topic, warm_up)
        before = _fetches(broker.metrics_port)
        expected = RECORDS + warm_up
        assert _read_all(broker.bootstrap, topic, expected) == expected
        fetches[topic] = _fetches(broker.metrics_port) - before
    # librdkafka keeps a fetch parked at the end (it counts too); the tiny batch may
    # cost the first fetch at most
    assert fetches[warmed] <= fetches[plain] + 1, fetches
