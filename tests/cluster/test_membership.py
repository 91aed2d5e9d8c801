"""Nodes started with Kafka's KRaft settings form one cluster: a controller keeps the
metadata log, brokers register, heartbeat and follow that log, a silent broker is
fenced and a returning one rejoins; configurations that cannot work stop a node with
the reason."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.broker.cluster.node_client import NodeClient
from tests.helpers.broker import Broker, free_port
from tests.helpers.wire import WireClient

SESSION_MS = 1500
METADATA = "__cluster_metadata"


class Cluster:
    """One node with both roles (the only voter) and brokers beside it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.controller_port = free_port()
        self.nodes: dict[int, Broker] = {}

    def settings(self, node_id: int, roles: str, **more: str) -> dict[str, str]:
        return {
            "node.id": str(node_id),
            "process.roles": roles,
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "broker.session.timeout.ms": str(SESSION_MS),
            "broker.heartbeat.interval.ms": "200",
            "initial.broker.registration.timeout.ms": "10000",
            **more,
        }

    def node(self, node_id: int, controller_only: bool = False, **more: str) -> Broker:
        port = free_port()
        listeners = f"PLAINTEXT://127.0.0.1:{port}"
        roles = "broker"
        if node_id == 1:
            roles = "broker,controller"
            listeners += f",CONTROLLER://127.0.0.1:{self.controller_port}"
        if controller_only:
            roles, port = "controller", self.controller_port
            listeners = f"CONTROLLER://127.0.0.1:{port}"
        settings = self.settings(node_id, roles, listeners=listeners, **more)
        return Broker(self.base / f"node{node_id}-{port}", port=port, overrides=settings)

    def start(self, node_id: int, **more: str) -> Broker:
        broker = self.nodes[node_id] = self.node(node_id, **more)
        broker.start()
        wait_for_log(broker, "joined the cluster")
        return broker

    def describe_quorum(self) -> Any:
        async def ask() -> Any:
            client = NodeClient("127.0.0.1", self.controller_port, 5)
            try:
                request = {
                    "topics": [{"topic_name": METADATA, "partitions": [{"partition_index": 0}]}]
                }
                return await client.call(55, 2, request)
            finally:
                client.close()

        return asyncio.run(ask())

    def close(self) -> None:
        for broker in self.nodes.values():
            broker.close()


def wait_for_log(broker: Broker, text: str, timeout: float = 15, count: int = 1) -> None:
    deadline = time.monotonic() + timeout
    while broker.log_text().count(text) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"no {text!r} in the log of {broker}:\n{broker.log_tail()}")
        if broker.proc is not None and broker.proc.poll() is not None:
            raise AssertionError(f"{broker} exited:\n{broker.log_tail()}")
        time.sleep(0.05)


def exits_with(broker: Broker, timeout: float = 20) -> str:
    """Start a node that must stop on its own; its log. The start may take the whole
    timeout: a node that refuses to join never opens its port, and a loaded machine
    can take seconds to start Python before the refusal is even asked for."""
    try:
        broker.start(timeout)
    except Exception:  # exited before its port opened: the log says why
        return broker.log_text()
    assert broker.proc is not None
    broker.proc.wait(timeout)
    return broker.log_text()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    made = Cluster(tmp_path)
    try:
        yield made
    finally:
        made.close()


def test_three_nodes_join_and_follow_the_metadata_log(cluster: Cluster) -> None:
    for node_id in (1, 2, 3):
        cluster.start(node_id)
    deadline = time.monotonic() + 10
    while True:
        partition = cluster.describe_quorum().topics[0].partitions[0]
        observers = {o.replica_id: o.log_end_offset for o in partition.observers}
        if set(observers) == {2, 3} and all(
            end >= partition.high_watermark - 1 for end in observers.values()
        ):
            break
        assert time.monotonic() < deadline, (partition, observers)
        time.sleep(0.1)
    assert partition.leader_id == 1
    assert [v.replica_id for v in partition.current_voters] == [1]
    controller_log = cluster.nodes[1].log_text()
    for node_id in (1, 2, 3):
        assert f'"node_id": {node_id}, "broker_epoch"' in controller_log


def described_brokers(
    broker: Broker, include_fenced: bool, until: dict[int, bool] | None = None
) -> dict[int, bool]:
    """node id -> fenced, of the brokers DescribeCluster v2 lists (once `until` is among
    them, if given: a broker's view follows the controller's)."""
    body = {
        "include_cluster_authorized_operations": False,
        "endpoint_type": 1,
        "include_fenced_brokers": include_fenced,
    }
    deadline = time.monotonic() + 10
    with WireClient(broker.bootstrap) as client:
        while True:
            answer = client.call(60, 2, body)
            found = {b.broker_id: b.is_fenced for b in answer.brokers}
            if until is None or until.items() <= found.items() or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


def test_a_silent_broker_is_fenced_and_rejoins_when_it_returns(cluster: Cluster) -> None:
    for node_id in (1, 2, 3):
        cluster.start(node_id)
    killed_at = time.monotonic()
    cluster.nodes[3].kill()
    wait_for_log(cluster.nodes[1], "no heartbeat within broker.session.timeout.ms")
    assert time.monotonic() - killed_at < SESSION_MS / 1000 + 3
    # DescribeCluster v2 lists a fenced broker only when asked, marked fenced
    fenced_too = described_brokers(cluster.nodes[2], include_fenced=True, until={3: True})
    assert fenced_too == {1: False, 2: False, 3: True}
    assert described_brokers(cluster.nodes[2], include_fenced=False) == {1: False, 2: False}
    cluster.nodes[3].start()  # same node id and data, a new incarnation
    wait_for_log(cluster.nodes[3], "joined the cluster", count=2)
    wait_for_log(cluster.nodes[1], '"node_id": 3, "event": "broker unfenced"', count=2)
    # a clean stop hands over at once: fenced without waiting out the session
    cluster.nodes[2].stop()
    wait_for_log(cluster.nodes[1], '"node_id": 2, "partitions_changed"', timeout=3)


def test_a_node_id_held_by_a_live_node_stops_the_second(cluster: Cluster) -> None:
    cluster.start(1)
    cluster.start(2)
    twin = cluster.node(2)
    cluster.nodes[-2] = twin
    log = exits_with(twin)
    assert twin.proc is not None and twin.proc.returncode not in (0, None)
    assert "another live node is registered with this node id" in log, log
    assert "Traceback" not in log


def test_no_controller_reachable_stops_a_broker(cluster: Cluster) -> None:
    lonely = cluster.node(2, **{"initial.broker.registration.timeout.ms": "1000"})
    cluster.nodes[2] = lonely
    started = time.monotonic()
    log = exits_with(lonely)
    assert "no controller reachable at 127.0.0.1:" in log, log
    assert "initial.broker.registration.timeout.ms (1000 ms)" in log
    assert time.monotonic() - started < 15
    assert "Traceback" not in log


def test_a_voter_set_that_disagrees_or_another_cluster_stops_a_broker(cluster: Cluster) -> None:
    cluster.start(1)
    other = cluster.node(
        4, **{"controller.quorum.voters": f"5@127.0.0.1:{cluster.controller_port}"}
    )
    cluster.nodes[4] = other
    log = exits_with(other)
    assert "disagrees with the controller" in log and "whose voters are [1]" in log, log
    stranger = cluster.node(6, **{"cluster.id": "another-cluster"})
    cluster.nodes[6] = stranger
    log = exits_with(stranger)
    assert "the controller belongs to another cluster" in log, log


def test_brokers_keep_serving_while_the_controller_is_down(cluster: Cluster) -> None:
    for node_id in (1, 2):
        cluster.start(node_id)
    controller, broker = cluster.nodes[1], cluster.nodes[2]
    controller.kill()
    wait_for_log(broker, "controller unreachable")
    from tests.helpers.wire import WireClient

    with WireClient(broker.bootstrap) as client:  # still answers its clients
        reply = client.call(3, 9, {"topics": None, "allow_auto_topic_creation": False})
    # its view is the last the controller wrote: nobody fenced node 1 (Kafka's too)
    assert [b.node_id for b in reply.brokers] == [1, 2]
    controller.start()
    wait_for_log(controller, "joined the cluster", count=2)
    # the broker's session and epoch were kept: its heartbeats are answered again,
    # and the controller did not fence it
    before = broker.log_text().count("controller unreachable")
    time.sleep(SESSION_MS / 1000 + 0.5)
    assert broker.log_text().count("controller unreachable") == before
    assert "registering again" not in broker.log_text()
    restarted = controller.log_text().split("==== start #2")[1]
    assert '"node_id": 2, "event": "broker fenced"' not in restarted
    assert broker.is_running()


def test_a_broker_restarted_at_once_after_a_crash_waits_out_its_old_session(
    cluster: Cluster,
) -> None:
    session = {"broker.session.timeout.ms": "7000"}  # longer than a restart on a busy machine
    cluster.start(1, **session)
    broker = cluster.start(2, **session)
    broker.kill()
    started = time.monotonic()
    broker.start()
    wait_for_log(broker, "joined the cluster", count=2)
    took = time.monotonic() - started
    assert "waiting for the old session to end" in broker.log_text()  # refused at first
    assert took < 7 + 3


def test_a_controller_only_node_serves_no_clients_and_admits_brokers(cluster: Cluster) -> None:
    controller = cluster.nodes[1] = cluster.node(1, controller_only=True)
    controller.start()
    cluster.start(2)
    cluster.start(3)
    partition = cluster.describe_quorum().topics[0].partitions[0]
    assert partition.leader_id == 1 and {o.replica_id for o in partition.observers} == {2, 3}
    assert "joined the cluster" not in controller.log_text()  # no broker role
    assert '"listeners": ["CONTROLLER://' in controller.log_text()
