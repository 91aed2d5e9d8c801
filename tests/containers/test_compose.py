"""The container image under podman-compose: application containers reach the broker by
its service name while the host uses the external listener, data survives down and up,
and stop is clean."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from helpers.broker import free_port
from helpers.containers import Compose
from helpers.names import unique_name

pytestmark = pytest.mark.usefixtures("images")


@pytest.fixture
def compose() -> Iterator[Compose]:
    project = Compose(unique_name("odradek-compose").replace("-", "_").lower(), free_port())
    try:
        yield project
    finally:
        project("down", "-v", check=False)


def start_broker(compose: Compose) -> None:
    compose("up", "-d", "kafka")
    compose.wait_healthy()


def read_all(bootstrap: str, topic: str, count: int, group: str | None = None) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or unique_name("reader"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        return values
    finally:
        consumer.close()


def test_containers_use_the_service_name_and_the_host_the_external_listener(
    compose: Compose,
) -> None:
    start_broker(compose)
    producer = Producer({"bootstrap.servers": compose.bootstrap})
    for i in range(50):
        producer.produce("orders", b"host-%d" % i)
    assert producer.flush(30) == 0
    # the application containers know only kafka:9092
    produced = compose("run", "--rm", "producer")
    assert "produced 100 records to orders" in produced.stdout, produced.stdout
    consumed = compose("run", "--rm", "consumer", "consume", "orders", "150", "order-readers")
    assert "consumed 150 records from orders as order-readers" in consumed.stdout
    values = read_all(compose.bootstrap, "orders", 150)
    assert len(values) == 150
    assert sorted(v for v in values if v.startswith(b"host-")) == sorted(
        b"host-%d" % i for i in range(50)
    )
    from_container = [v for v in values if not v.startswith(b"host-")]
    assert len(from_container) == 100
    assert len({v.rsplit(b"-", 1)[0] for v in from_container}) == 1  # one container's hostname
    assert len(set(from_container)) == 100


def test_down_and_up_keep_records_and_committed_offsets(compose: Compose) -> None:
    start_broker(compose)
    compose("run", "--rm", "producer")
    consumed = compose("run", "--rm", "consumer")
    assert "consumed 100 records from orders as order-readers" in consumed.stdout
    compose("down")  # the volume stays
    start_broker(compose)
    consumer = Consumer({"bootstrap.servers": compose.bootstrap, "group.id": "order-readers"})
    try:
        committed = consumer.committed([TopicPartition("orders", p) for p in range(3)], 30)
    finally:
        consumer.close()
    assert sum(tp.offset for tp in committed if tp.offset >= 0) == 100
    assert len(read_all(compose.bootstrap, "orders", 100)) == 100


def test_stop_is_clean_and_quick(compose: Compose) -> None:
    start_broker(compose)
    started = time.monotonic()
    compose("stop", timeout=60)
    elapsed = time.monotonic() - started
    status, code = compose.state()
    # exit status 0: the broker stopped on SIGTERM by itself; a kill after the stop
    # timeout (10 s) would leave 137
    assert (status, code) == ("exited", 0), compose.logs()
    assert '"stopped"' in compose.logs()
    assert elapsed < 10, elapsed
