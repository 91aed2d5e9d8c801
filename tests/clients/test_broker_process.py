"""The broker as a process: command-line overrides, clean stop, restart, crash and restart.

These also check the test harness itself (conftest.Broker), through librdkafka.
"""

from __future__ import annotations

import time

import pytest
from helpers.broker import Broker, BrokerFactory, port_accepts
from helpers.env import require_module

require_module("confluent_kafka")

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer  # noqa: E402
from confluent_kafka import TopicPartition as TP  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def produce_n(b: Broker, topic: str, n: int, prefix: str = "v") -> None:
    errors: list[KafkaError] = []
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all"})
    for i in range(n):
        p.produce(
            topic,
            key=f"k{i}".encode(),
            value=f"{prefix}{i}".encode(),
            partition=0,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
    assert p.flush(15) == 0
    assert not errors, errors


def read_all(b: Broker, topic: str, expect: int) -> list[bytes | None]:
    c = Consumer(
        {
            "bootstrap.servers": b.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        c.assign([TP(topic, 0, OFFSET_BEGINNING)])
        out: list[bytes | None] = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF and len(out) >= expect:
                    break
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(str(msg.error()))
            out.append(msg.value())
        return out
    finally:
        c.close()


def test_overrides_reach_the_broker(broker_factory: BrokerFactory, unique_topic: str) -> None:
    b = broker_factory(num_partitions=3)
    produce_n(b, unique_topic, 1)  # auto-created with num.partitions
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(unique_topic, timeout=15)
    assert sorted(md.topics[unique_topic].partitions) == [0, 1, 2]


def test_auto_create_disabled(broker_factory: BrokerFactory, unique_topic: str) -> None:
    b = broker_factory({"auto.create.topics.enable": False})
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(unique_topic, timeout=15)
    err = md.topics[unique_topic].error
    assert err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_sigterm_is_a_clean_exit_and_data_survives(broker: Broker, unique_topic: str) -> None:
    produce_n(broker, unique_topic, 20)
    assert broker.stop() == 0
    assert not port_accepts(broker.host, broker.port)
    broker.start()
    assert read_all(broker, unique_topic, 20) == [f"v{i}".encode() for i in range(20)]
    produce_n(broker, unique_topic, 5, prefix="w")
    got = read_all(broker, unique_topic, 25)
    assert got[20:] == [f"w{i}".encode() for i in range(5)]


def test_kill9_then_restart_keeps_acknowledged_records(broker: Broker, unique_topic: str) -> None:
    produce_n(broker, unique_topic, 50)
    broker.kill()
    broker.start()
    assert read_all(broker, unique_topic, 50) == [f"v{i}".encode() for i in range(50)]
