"""Partition reassignment across broker processes, driven by Kafka 4.4's own
kafka-reassign-partitions: a partition's replicas move to other brokers while a
producer keeps writing, with nothing acknowledged lost and the removed replica's copy
deleted; a move that cannot finish is cancelled back to the original replicas; a
throttled move is held to its rate, and --verify lifts the throttle."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from helpers import kafka_tools

from cluster.conftest import read_all
from odradek.testing import Cluster

REASSIGN = kafka_tools.TOOLS["kafka-reassign-partitions"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("reassign")
    with Cluster(brokers=3, base_dir=base, session_timeout_ms=2000, faults=True) as made:
        yield made


def wait(condition: Callable[[], bool], timeout: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < timeout, f"not within {timeout} s: {what}"
        time.sleep(0.2)
    return time.monotonic() - started


def create_placed(cluster: Cluster, name: str, replicas: list[int], **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(name, 1, replica_assignment=[replicas], config=configs)
    for future in admin.create_topics([topic]).values():
        future.result(30)
    wait(lambda: cluster.isr_of(name, 0) == sorted(replicas), 30, "the ISR is full")


def reassign(
    cluster: Cluster, tmp_path: Path, action: str, topic: str, replicas: list[int], *extra: str
) -> kafka_tools.ToolRun:
    plan = tmp_path / f"{topic}.json"
    document = {
        "version": 1,
        "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}],
    }
    plan.write_text(json.dumps(document))
    return kafka_tools.run_tool(
        REASSIGN,
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--reassignment-json-file",
        str(plan),
        action,
        *extra,
    )


def verified(cluster: Cluster, tmp_path: Path, topic: str, replicas: list[int]) -> str:
    """--verify until it says the move is complete: its last output."""
    deadline = time.monotonic() + 60
    while True:
        done = reassign(cluster, tmp_path, "--verify", topic, replicas)
        assert done.returncode == 0, done.stdout + done.stderr
        if f"Reassignment of partition {topic}-0 is completed." in done.stdout:
            return done.stdout
        assert time.monotonic() < deadline, done.stdout
        time.sleep(0.5)


def hosts(cluster: Cluster, topic: str) -> set[int]:
    return {n for n, broker in cluster.nodes.items() if (broker.data_dir / f"{topic}-0").exists()}


def test_a_move_keeps_every_acknowledged_record_while_a_producer_writes(
    cluster: Cluster, tmp_path: Path
) -> None:
    create_placed(cluster, "moved", [1, 2])
    acked: list[int] = []
    stop = threading.Event()

    def produce() -> None:
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )
        i = 0
        while not stop.is_set():

            def delivered(err: object, msg: object, i: int = i) -> None:
                if err is None:
                    acked.append(i)

            producer.produce("moved", str(i).encode() * 50, partition=0, on_delivery=delivered)
            producer.poll(0)
            i += 1
            time.sleep(0.002)
        assert producer.flush(30) == 0

    writer = threading.Thread(target=produce)
    writer.start()
    wait(lambda: len(acked) > 500, 30, "records written before the move")
    started = reassign(cluster, tmp_path, "--execute", "moved", [3, 2])
    assert started.returncode == 0, started.stdout + started.stderr
    assert "Successfully started partition reassignment for moved-0" in started.stdout
    out = verified(cluster, tmp_path, "moved", [3, 2])
    assert "Clearing broker-level throttles" in out
    time.sleep(1)  # writes go on to the new leader
    stop.set()
    writer.join(60)
    partition = cluster.partition("moved", 0)
    assert list(partition.replica_nodes) == [3, 2]
    assert sorted(partition.isr_nodes) == [2, 3]
    assert partition.leader_id == 3  # the old leader left: the first in-sync target leads
    wait(lambda: hosts(cluster, "moved") == {2, 3}, 10, "node 1 deletes its copy")
    values = [int(v[: len(v) // 50]) for v in read_all(cluster, "moved", 0, len(acked))]
    assert len(values) == len(set(values)), "duplicates"
    assert set(acked) <= set(values), f"{len(set(acked) - set(values))} acknowledged lost"
    assert values == sorted(values), "out of order"
