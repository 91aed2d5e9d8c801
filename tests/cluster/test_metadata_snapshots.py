"""Snapshots of the metadata log, with the thresholds turned down so that a few topics
reach them: the leading controller writes a snapshot Kafka 4.4's DumpLogSegments
reads, lets go of the log before it (and so does a controller that follows, from its
own view), and whoever needs what went takes the snapshot
(FetchSnapshot): a controller that was down, a broker that restarts, and a controller
that then leads."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from helpers.kafka_tools import run_tool

from cluster.conftest import SESSION_MS
from odradek.broker.cluster.quorum import snapshots
from odradek.coordinator.cluster import kafka_format as kf
from odradek.storage.checkpoint import read_offset
from odradek.storage.log_files import LOG_START_CHECKPOINT
from odradek.testing import Cluster

TINY = {
    "metadata.log.max.record.bytes.between.snapshots": "2000",
    "metadata.max.retention.bytes": "1000",
    "metadata.log.max.snapshot.interval.ms": "1000",
}


def metadata_dir(cluster: Cluster, controller: int) -> Path:
    return cluster.controllers[controller].data_dir / "__cluster_metadata-0"


def wait_for(check: object, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def topics_in_snapshot(directory: Path) -> set[str]:
    latest = snapshots.latest(directory)
    if latest is None:
        return set()
    try:
        records = [kf.decode(value) for _, value in snapshots.read(directory, latest) if value]
    except FileNotFoundError:  # replaced by a newer one meanwhile
        return set()
    return {r["name"] for r in records if r.api_key == kf.TOPIC.api_key}


def copy_latest_snapshot(directory: Path, into: Path) -> tuple[snapshots.SnapshotId, Path]:
    into.mkdir(exist_ok=True)
    for _ in range(50):
        latest = snapshots.latest(directory)
        assert latest is not None
        try:
            copy = into / latest.file_name
            shutil.copyfile(directory / latest.file_name, copy)
            return latest, copy
        except FileNotFoundError:  # replaced by a newer one meanwhile
            time.sleep(0.05)
    raise AssertionError("no snapshot stayed long enough to be copied")


def create(admin: AdminClient, names: list[str], factor: int = 2) -> None:
    for future in admin.create_topics([NewTopic(n, 2, factor) for n in names]).values():
        future.result(30)


def test_snapshots_replace_the_log_and_reach_whoever_needs_them(tmp_path: Path) -> None:
    with Cluster(
        3, tmp_path, controllers=3, overrides=TINY, session_timeout_ms=SESSION_MS
    ) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.node(1).bootstrap})
        leader = cluster.wait_for_active_controller()
        absent = next(n for n in cluster.controllers if n != leader)
        cluster.controllers[absent].kill()
        cluster.nodes[3].kill()
        create(admin, [f"early-{i}" for i in range(10)])

        # the leader snapshots and its log starts after the snapshot
        leading = metadata_dir(cluster, leader)
        wait_for(
            lambda: {f"early-{i}" for i in range(10)} <= topics_in_snapshot(leading),
            "no snapshot holds every topic",
        )
        snapshot = snapshots.latest(leading)
        assert snapshot is not None and snapshot.end_offset > 0
        wait_for(
            lambda: read_offset(leading / LOG_START_CHECKPOINT) >= snapshot.end_offset,
            "the log does not start where the snapshot ends",
        )
        # the controller that follows snapshots its own view, and lets go of its log too
        follower = next(n for n in cluster.controllers if n not in (leader, absent))
        following = metadata_dir(cluster, follower)
        wait_for(
            lambda: {f"early-{i}" for i in range(10)} <= topics_in_snapshot(following),
            "the follower wrote no snapshot of its own",
        )
        wait_for(
            lambda: (read_offset(following / LOG_START_CHECKPOINT) or 0) > 0,
            "the follower's log does not start after its snapshot",
        )
        # a copy, as the leader goes on snapshotting and removes the older ones
        snapshot, copy = copy_latest_snapshot(leading, tmp_path / "copy")
        dumped = run_tool(
            "org.apache.kafka.tools.DumpLogSegments",
            "--cluster-metadata-decoder",
            "--files",
            str(copy),
        )
        assert dumped.returncode == 0, dumped.stderr
        assert (
            f"Snapshot end offset: {snapshot.end_offset}, epoch: {snapshot.epoch}" in dumped.stdout
        )
        assert "SnapshotHeader" in dumped.stdout and "SnapshotFooter" in dumped.stdout
        for i in range(10):
            assert f'"name":"early-{i}"' in dumped.stdout

        # a controller that was down, and a broker that restarts, take the snapshot
        cluster.controllers[absent].start()
        cluster.nodes[3].start()
        taken = metadata_dir(cluster, absent)
        wait_for(lambda: snapshots.latest(taken) is not None, "the follower took no snapshot")
        restarted = AdminClient({"bootstrap.servers": cluster.node(3).bootstrap})
        wait_for(
            lambda: (
                {f"early-{i}" for i in range(10)} <= set(restarted.list_topics(timeout=10).topics)
            ),
            "the restarted broker does not know the topics",
        )

        # the leader goes: the others lead from snapshot and log, nothing lost
        cluster.controllers[leader].kill()
        cluster.wait_for_active_controller(other_than=leader)
        create(admin, ["after-failover"], factor=3)
        for node in (1, 2, 3):
            client = AdminClient({"bootstrap.servers": cluster.node(node).bootstrap})
            wait_for(
                lambda c=client: (
                    {"after-failover", "early-0", "early-9"}  # type: ignore[misc]
                    <= set(c.list_topics(timeout=10).topics)
                ),
                f"broker {node} misses topics after the failover",
            )
        cluster.controllers[leader].start()
        create(admin, ["after-return"], factor=3)
        assert "after-return" in admin.list_topics(timeout=10).topics
