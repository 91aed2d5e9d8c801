"""A broker's log directory fails in a cluster: the controller knows which replicas lay
there (the broker told it, AssignReplicasToDirs, written as Kafka writes it), the
broker names the failed directory in its heartbeats, and those replicas' partitions
move to another broker while its other directory serves on. Producers with acks=all
lose nothing."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from helpers.kafka_tools import run_tool

from cluster.conftest import SESSION_MS, read_all
from odradek.testing import Cluster

pytestmark = pytest.mark.timeout(240)
TOPIC, PARTITIONS = "spread", 4


def directory_id(path: Path) -> str:
    meta = (path / "meta.properties").read_text()
    return next(
        line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("directory.id")
    )


def produce(cluster: Cluster, tag: str) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True}
    )
    for partition in range(PARTITIONS):
        for i in range(10):
            producer.produce(TOPIC, f"{tag}-{i}".encode(), partition=partition)
    assert producer.flush(60) == 0


def assigned_in_metadata_log(cluster: Cluster, wanted: str) -> bool:
    """Kafka's DumpLogSegments finds a PartitionChangeRecord naming the directory."""
    directory = cluster.controller.data_dir / "__cluster_metadata-0"
    dumped = run_tool(
        "org.apache.kafka.tools.DumpLogSegments",
        "--cluster-metadata-decoder",
        "--files",
        str(directory / "00000000000000000000.log"),
    )
    return any("PARTITION_CHANGE_RECORD" in line and wanted in line for line in dumped.lines())


def test_a_failed_directory_moves_only_its_replicas_leadership(tmp_path: Path) -> None:
    cluster = Cluster(2, tmp_path, session_timeout_ms=SESSION_MS)
    first_dir = cluster.nodes[1].data_dir
    second_dir = first_dir.parent / "node1-second"
    cluster.nodes[1].extra_args = ["--data-dir", f"{first_dir},{second_dir}"]
    with cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        # every partition on both brokers, broker 1 leading
        topic = NewTopic(TOPIC, PARTITIONS, replica_assignment=[[1, 2]] * PARTITIONS)
        admin.create_topics([topic])[TOPIC].result(30)
        produce(cluster, "before")

        # broker 1 spread its replicas over its two directories and told the controller
        second_id = directory_id(second_dir)
        deadline = time.monotonic() + 30
        while not assigned_in_metadata_log(cluster, second_id):
            assert time.monotonic() < deadline, "no assignment to the second directory"
            time.sleep(1)
        in_second = sorted(int(p.name.rsplit("-", 1)[1]) for p in second_dir.glob(f"{TOPIC}-*"))
        in_first = sorted(int(p.name.rsplit("-", 1)[1]) for p in first_dir.glob(f"{TOPIC}-*"))
        assert in_second and in_first, (in_first, in_second)

        # the second directory goes away; a file takes its place
        shutil.rmtree(second_dir)
        second_dir.write_text("not a directory")
        deadline = time.monotonic() + 30
        while any(cluster.leader_of(TOPIC, p) != 2 for p in in_second):
            assert time.monotonic() < deadline, "the failed directory's partitions kept broker 1"
            time.sleep(0.5)
        for partition in in_second:
            assert cluster.isr_of(TOPIC, partition) == [2]
        for partition in in_first:  # the other directory serves on
            assert cluster.leader_of(TOPIC, partition) == 1
            assert sorted(cluster.isr_of(TOPIC, partition)) == [1, 2]
        assert cluster.nodes[1].is_running()

        produce(cluster, "after")
        for partition in range(PARTITIONS):
            values = read_all(cluster, TOPIC, partition, 20)
            assert values == [
                f"{tag}-{i}".encode() for tag in ("before", "after") for i in range(10)
            ]
