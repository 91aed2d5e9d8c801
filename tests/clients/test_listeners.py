"""Kafka's listener and environment configuration with real clients, settings that stop
the broker with a reason, `odradek health`, and the test-broker defaults."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer
from helpers.broker import REPO_ROOT, Broker, free_port
from helpers.wire import WireClient

METADATA, FIND_COORDINATOR = 3, 10


def advertised(bootstrap: str) -> tuple[str, int]:
    with WireClient(bootstrap) as client:
        reply = client.call(METADATA, 9, {"topics": [], "allow_auto_topic_creation": False})
        [broker] = reply.brokers
        coordinator = client.call(FIND_COORDINATOR, 3, {"key": "any-group", "key_type": 0})
        assert (coordinator.host, coordinator.port) == (broker.host, broker.port)
        return broker.host, broker.port


def test_each_listener_advertises_its_own_address(tmp_path: Path, unique_topic: str) -> None:
    internal, external = free_port(), free_port()
    broker = Broker(
        tmp_path / "data",
        port=internal,
        overrides={
            "listeners": f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.2:{external}",
            "advertised.listeners": f"INTERNAL://localhost:{internal},"
            f"EXTERNAL://127.0.0.2:{external}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        },
    )
    try:
        broker.start()
        assert advertised(f"127.0.0.1:{internal}") == ("localhost", internal)
        assert advertised(f"127.0.0.2:{external}") == ("127.0.0.2", external)
        # a client bootstrapped on one listener is sent on to that listener's address
        producer = Producer({"bootstrap.servers": f"127.0.0.2:{external}"})
        for i in range(20):
            producer.produce(unique_topic, b"%d" % i)
        assert producer.flush(15) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": f"localhost:{internal}",
                "group.id": unique_topic,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.subscribe([unique_topic])
            got: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(got) < 20 and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    got.append(message.value())
            assert sorted(got, key=int) == [b"%d" % i for i in range(20)]
        finally:
            consumer.close()
    finally:
        broker.kill()


def test_a_compose_environment_written_for_apache_kafka(tmp_path: Path) -> None:
    port, controller = free_port(), free_port()
    broker = Broker(
        tmp_path / "data",
        port=port,
        extra_args=["--environment"],
        env={
            "KAFKA_NODE_ID": "1",
            "KAFKA_PROCESS_ROLES": "broker,controller",
            "KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
            "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@127.0.0.1:{controller}",
            "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
            "KAFKA_NUM_PARTITIONS": "3",
            "KAFKA_BACKGROUND_THREADS": "10",
            "KAFKA_HEAP_OPTS": "-Xmx1G",
            "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
        },
    )
    try:
        broker.start()
        with WireClient(broker.bootstrap) as client:
            wanted = {"topics": [{"name": "auto-created"}], "allow_auto_topic_creation": True}
            reply = client.call(METADATA, 9, wanted)
        assert reply.cluster_id == "4L6g3nShT-eMCtK--X86sw"
        assert [b.node_id for b in reply.brokers] == [1]
        assert len(reply.topics[0].partitions) == 3
        # the only voter serves its controller listener: more brokers may join it
        socket.create_connection(("127.0.0.1", controller), timeout=1).close()
        assert '"node_id": 1, "event": "broker unfenced"' in broker.log_text()
        notes = [line for line in broker.log_text().splitlines() if "not used by Odradek" in line]
        assert len(notes) == 1
        assert "background.threads" in notes[0]
        assert "replication.factor" not in notes[0]  # read: they shape a cluster
    finally:
        broker.kill()


def run_broker(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        (["--override", "num.partition=3"], "num.partition: not a Kafka broker setting"),
        (["--override", "num.partitions=many"], "num.partitions='many': expected a whole number"),
        (["--override", "listeners=SSL://127.0.0.1:0"], "uses SSL"),
        (
            ["--override", "advertised.listeners=PLAINTEXT://0.0.0.0:9092"],
            "advertised.listeners",
        ),
        (
            ["--port", "0", "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
            "--host/--port or the listeners",
        ),
        (["--override", "oops"], "KEY=VALUE"),
    ],
)
def test_settings_that_cannot_work_stop_the_broker_with_the_reason(
    tmp_path: Path, settings: list[str], words: str
) -> None:
    done = run_broker(tmp_path, "--data-dir", str(tmp_path / "d"), *settings)
    assert done.returncode != 0
    assert words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_port_in_use_and_a_data_dir_that_cannot_be_written(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_broker(tmp_path, "--data-dir", str(tmp_path / "d"), "--port", str(port))
    assert done.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port} (listener PLAINTEXT)" in done.stderr, done.stderr
    (tmp_path / "a-file").write_text("")
    done = run_broker(tmp_path, "--data-dir", str(tmp_path / "a-file" / "data"), "--port", "0")
    assert done.returncode != 0
    assert "data directory" in done.stderr and "cannot be written" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_health_command(shared_broker: Broker) -> None:
    healthy = run_broker(Path("."), "health", "--bootstrap", shared_broker.bootstrap)
    assert healthy.returncode == 0, healthy.stderr
    assert "healthy" in healthy.stdout
    started = time.monotonic()
    closed = run_broker(Path("."), "health", "--bootstrap", f"127.0.0.1:{free_port()}")
    assert closed.returncode == 1
    assert "unhealthy" in closed.stderr
    assert time.monotonic() - started < 10


async def test_two_aiokafka_members_settle_with_the_default_settings(
    tmp_path: Path, unique_topic: str
) -> None:
    """group.initial.rebalance.delay.ms is 0 as in Kafka's shipped server.properties. With
    Kafka's code default of 3000, a member whose max_poll_interval_ms is 3000 outlives
    its poll interval waiting for the first generation, leaves, and the rebalances that
    follow take several seconds more."""
    broker = Broker(tmp_path / "data", overrides={"num.partitions": "4"})
    broker.start()
    consumers = [
        AIOKafkaConsumer(
            unique_topic,
            bootstrap_servers=broker.bootstrap,
            group_id=unique_topic,
            max_poll_interval_ms=3000,
            heartbeat_interval_ms=100,
        ),
        AIOKafkaConsumer(unique_topic, bootstrap_servers=broker.bootstrap, group_id=unique_topic),
    ]
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    try:
        await producer.start()
        await producer.send_and_wait(unique_topic, b"x")  # creates the topic, 4 partitions
        for consumer in consumers:
            await consumer.start()

        async def poll(consumer: AIOKafkaConsumer) -> None:
            while True:
                await consumer.getmany(timeout_ms=100)

        polls = [asyncio.create_task(poll(c)) for c in consumers]
        deadline = time.monotonic() + 20
        owned: list[set[int]] = []
        while time.monotonic() < deadline:
            owned = [{tp.partition for tp in c.assignment()} for c in consumers]
            if all(owned) and owned[0] | owned[1] == {0, 1, 2, 3} and not owned[0] & owned[1]:
                break
            await asyncio.sleep(0.1)
        for task in polls:
            task.cancel()
        assert all(owned) and not owned[0] & owned[1], owned
        assert owned[0] | owned[1] == {0, 1, 2, 3}
    finally:
        for consumer in consumers:
            await consumer.stop()
        await producer.stop()
        broker.kill()
