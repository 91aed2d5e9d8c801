"""A quorum of three controllers keeps the cluster's metadata: one leads, the others
follow its log, and when the leader is killed the others elect a new one while the
brokers keep serving and follow it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Producer
from helpers.kafka_tools import TOOLS, run_tool

from cluster.conftest import SESSION_MS, create_topic, read_all
from odradek.testing import Cluster

if TYPE_CHECKING:
    from helpers.reference_kafka import ReferenceKafka

pytestmark = pytest.mark.timeout(240)

DESCRIBE_QUORUM = 55


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(
        brokers=3, controllers=3, base_dir=tmp_path, session_timeout_ms=SESSION_MS
    ) as made:
        yield made


def describe(cluster: Cluster) -> object:
    from odradek.broker.testing.cluster import _call

    active = cluster.wait_for_active_controller()
    node = cluster.node(active)
    request = {
        "topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    }
    return _call(node.host, node.port, DESCRIBE_QUORUM, 2, request)


def produce(cluster: Cluster, topic: str, values: list[bytes]) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True}
    )
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def test_three_voters_elect_one_leader_and_follow_it(quorum: Cluster) -> None:
    answer = describe(quorum)
    partition = answer.topics[0].partitions[0]  # type: ignore[attr-defined]
    assert sorted(v.replica_id for v in partition.current_voters) == sorted(quorum.controller_ids)
    assert partition.leader_id in quorum.controller_ids
    assert partition.leader_epoch >= 1
    assert sorted(o.replica_id for o in partition.observers) == [1, 2, 3]
    # every voter holds the log up to the high watermark
    deadline = time.monotonic() + 10
    while True:
        partition = describe(quorum).topics[0].partitions[0]  # type: ignore[attr-defined]
        ends = [v.log_end_offset for v in partition.current_voters]
        if min(ends) >= partition.high_watermark > 0:
            break
        assert time.monotonic() < deadline, f"voters behind: {ends} {partition.high_watermark}"
        time.sleep(0.1)
    create_topic(quorum, "replicated", partitions=1, factor=3)
    assert sorted(quorum.partition("replicated", 0).replica_nodes) == [1, 2, 3]
    produce(quorum, "replicated", [b"a", b"b", b"c"])
    assert read_all(quorum, "replicated", 0, 3) == [b"a", b"b", b"c"]


def test_the_leading_controller_killed_another_leads_and_nothing_is_lost(quorum: Cluster) -> None:
    create_topic(quorum, "before", partitions=1, factor=3)
    produce(quorum, "before", [b"x%d" % i for i in range(50)])
    old = quorum.wait_for_active_controller()
    quorum.kill(old)
    started = time.monotonic()
    new = quorum.wait_for_active_controller(other_than=old, timeout=20)
    took = time.monotonic() - started
    print(f"controller {new} leads {took:.2f} s after controller {old} was killed")
    assert new != old and took < 15, took
    # topic changes resume through the new leader; what the old one committed is there
    create_topic(quorum, "after", partitions=1, factor=3)
    produce(quorum, "after", [b"y%d" % i for i in range(10)])
    assert read_all(quorum, "after", 0, 10) == [b"y%d" % i for i in range(10)]
    assert read_all(quorum, "before", 0, 50) == [b"x%d" % i for i in range(50)]
    names = {t.name for t in quorum.metadata().topics}
    assert {"before", "after"} <= names
    # the killed controller comes back as a follower and catches up
    quorum.restart(old)
    deadline = time.monotonic() + 20
    while True:
        partition = describe(quorum).topics[0].partitions[0]  # type: ignore[attr-defined]
        ends = {v.replica_id: v.log_end_offset for v in partition.current_voters}
        if ends[old] >= partition.high_watermark:
            break
        assert time.monotonic() < deadline, f"{old} behind: {ends}"
        time.sleep(0.1)


def test_kafka_metadata_quorum_describes_it_through_controllers_and_brokers(
    quorum: Cluster,
) -> None:
    active = quorum.wait_for_active_controller()
    controllers = ",".join(quorum.node(n).bootstrap for n in quorum.controller_ids)
    tool = TOOLS["kafka-metadata-quorum"]
    for bootstrap in (
        ["--bootstrap-controller", controllers],
        ["--bootstrap-server", quorum.bootstrap_servers],
    ):
        status = run_tool(tool, *bootstrap, "describe", "--status")
        assert status.returncode == 0, status.stderr
        fields = dict(line.split(":", 1) for line in status.lines())
        assert int(fields["LeaderId"]) == active
        assert int(fields["LeaderEpoch"]) >= 1
        assert int(fields["HighWatermark"]) > 0
        for node_id in quorum.controller_ids:
            assert f'"id": {node_id}, "endpoints": ["CONTROLLER://' in fields["CurrentVoters"]
        assert all(f'"id": {n}' in fields["CurrentObservers"] for n in (1, 2, 3))
    replication = run_tool(tool, "--bootstrap-controller", controllers, "describe", "--replication")
    assert replication.returncode == 0, replication.stderr
    rows = [line.split() for line in replication.lines()[1:]]
    statuses = {int(row[0]): row[-1] for row in rows}
    assert statuses[active] == "Leader"
    assert sorted(n for n, s in statuses.items() if s == "Follower") == sorted(
        set(quorum.controller_ids) - {active}
    )
    assert sorted(n for n, s in statuses.items() if s == "Observer") == [1, 2, 3]


def test_voter_changes_are_refused_as_kafka_refuses_them_on_static_voters(
    quorum: Cluster, kafka44: ReferenceKafka
) -> None:
    """Static voters (controller.quorum.voters): kraft.version 0, on both."""
    tool = TOOLS["kafka-metadata-quorum"]
    controllers = ",".join(quorum.node(n).bootstrap for n in quorum.controller_ids)
    removed = sorted(set(quorum.controller_ids) - {quorum.wait_for_active_controller()})[0]
    outputs = {}
    for name, bootstrap, voter in (
        ("odradek", controllers, removed),
        ("kafka", f"127.0.0.1:{kafka44.controller_port}", 1),
    ):
        ran = run_tool(
            tool,
            "--bootstrap-controller",
            bootstrap,
            "remove-controller",
            "--controller-id",
            str(voter),
            "--controller-directory-id",
            "x2s0hhXrQ2KQ8PEqbJtx3w",
        )
        assert ran.returncode != 0
        outputs[name] = ran.stderr
    expected = (
        "UnsupportedVersionException: Cluster doesn't support removing voter because the "
        "kraft.version feature is 0"
    )
    assert expected in outputs["kafka"], outputs["kafka"]
    assert expected in outputs["odradek"], outputs["odradek"]
