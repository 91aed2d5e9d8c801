"""Several Odradek processes forming one cluster, for tests that kill a leader.

    from odradek.testing import Cluster

    with Cluster(brokers=3) as cluster:          # node 0 the controller, 1-3 brokers
        use(cluster.bootstrap_servers)
        leader = cluster.leader_of("orders", 0)
        cluster.kill(leader)                     # SIGKILL, as a crash
        cluster.wait_for_new_leader("orders", 0, old=leader)
        cluster.restart(leader)                  # same data, same port: it catches up

    with Cluster(brokers=3, controllers=3) as cluster:   # controllers 0, 4 and 5
        active = cluster.active_controller()
        cluster.kill(active)
        cluster.wait_for_active_controller(other_than=active)

Each node is a ``odradek.testing.Broker`` configured as Kafka's KRaft settings describe
it (``process.roles``, ``node.id``, ``controller.quorum.voters``, a CONTROLLER listener).
The controllers run on nodes of their own, so that any broker may be killed. With one
controller, while it is down the brokers keep serving what they lead, but nothing fails
over; with three, the others elect a new leader. Timings are set for tests: a broker
that stops heartbeating is fenced after ``session_timeout_ms``.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from odradek.broker.cluster.node_client import NodeClient, NodeUnreachable
from odradek.broker.testing.broker import START_TIMEOUT, Broker, free_port, normalize_overrides

CONTROLLER_ID = 0
# a broker of a cluster is ready once a controller has admitted it: with a quorum, after
# the controllers' first election too, which a busy machine slows down
NODE_START_TIMEOUT = max(START_TIMEOUT, 30.0)
METADATA, DESCRIBE_QUORUM = 3, 55


class Cluster:
    def __init__(
        self,
        brokers: int = 3,
        base_dir: Path | None = None,
        *,
        controllers: int = 1,
        overrides: Mapping[str, object] | None = None,
        session_timeout_ms: int = 2000,
        host: str = "127.0.0.1",
        faults: bool = False,
    ) -> None:
        self._temporary: Path | None = None
        if base_dir is None:
            base_dir = self._temporary = Path(tempfile.mkdtemp(prefix="odradek-cluster-"))
        self.base_dir = Path(base_dir)
        self.host = host
        self.controller_ids = [CONTROLLER_ID] + [brokers + i for i in range(1, controllers)]
        ports = {node_id: free_port(host) for node_id in self.controller_ids}
        self.controller_port = ports[CONTROLLER_ID]
        voters = ",".join(f"{node_id}@{host}:{port}" for node_id, port in ports.items())
        common = {
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": voters,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "broker.session.timeout.ms": str(session_timeout_ms),
            "broker.heartbeat.interval.ms": str(max(session_timeout_ms // 8, 50)),
            "replica.lag.time.max.ms": str(max(session_timeout_ms * 2, 1000)),
            "offsets.topic.replication.factor": str(min(brokers, 3)),
            "transaction.state.log.replication.factor": str(min(brokers, 3)),
            "transaction.state.log.min.isr": str(min(brokers, 2)),
            "default.replication.factor": str(min(brokers, 3)),
            **normalize_overrides(overrides),
        }
        self.controllers: dict[int, Broker] = {
            node_id: Broker(
                self.base_dir
                / ("controller" if node_id == CONTROLLER_ID else f"controller{node_id}"),
                host=host,
                port=port,
                overrides={
                    **common,
                    "node.id": node_id,
                    "process.roles": "controller",
                    "listeners": f"CONTROLLER://{host}:{port}",
                },
                faults=faults,  # move_leader
            )
            for node_id, port in ports.items()
        }
        self.controller = self.controllers[CONTROLLER_ID]
        self.nodes: dict[int, Broker] = {}
        for node_id in range(1, brokers + 1):
            port = free_port(host)
            self.nodes[node_id] = Broker(
                self.base_dir / f"node{node_id}",
                host=host,
                port=port,
                overrides={
                    **common,
                    "node.id": node_id,
                    "process.roles": "broker",
                    "listeners": f"PLAINTEXT://{host}:{port}",
                },
                faults=faults,  # each node's own: node(i).faults
            )

    # -- lifecycle ---------------------------------------------------------------------

    def start(self, timeout: float = NODE_START_TIMEOUT) -> Cluster:
        for controller in self.controllers.values():
            controller.start(timeout)
        for broker in self.nodes.values():
            broker.start(timeout)
        return self

    def kill(self, node_id: int) -> None:
        """SIGKILL one node (a controller's id: that controller)."""
        self.node(node_id).kill()

    def stop(self, node_id: int) -> None:
        """A clean stop: its partitions move to other replicas at once."""
        self.node(node_id).stop()

    def restart(self, node_id: int, timeout: float = NODE_START_TIMEOUT) -> Broker:
        """Start a killed or stopped node again, on its data and port; it returns once
        the controller has admitted it."""
        broker = self.node(node_id)
        if broker.is_running():
            broker.stop()
        return broker.start(timeout)

    def node(self, node_id: int) -> Broker:
        return self.controllers[node_id] if node_id in self.controllers else self.nodes[node_id]

    def close(self) -> None:
        for broker in [*self.nodes.values(), *self.controllers.values()]:
            broker.close()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def __enter__(self) -> Cluster:
        try:
            return self.start()
        except BaseException:
            self.close()  # the nodes that did start do not outlive a failed start
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what clients see ----------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """Every broker, as a client's bootstrap.servers takes them."""
        return ",".join(broker.bootstrap for broker in self.nodes.values())

    def metadata(self, topics: list[str] | None = None) -> Any:
        """A Metadata answer from the first running broker that gives one."""
        request = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        for broker in self.nodes.values():
            if not broker.is_running():
                continue
            try:
                return _call(broker.host, broker.port, METADATA, 12, request)
            except NodeUnreachable:
                continue
        raise RuntimeError("no broker of the cluster answers")

    def partition(self, topic: str, partition: int) -> Any:
        for found in self.metadata([topic]).topics:
            for p in found.partitions:
                if p.partition_index == partition:
                    return p
        raise KeyError(f"{topic}-{partition}")

    def leader_of(self, topic: str, partition: int) -> int:
        """The node id leading the partition now (-1: none)."""
        return int(self.partition(topic, partition).leader_id)

    def isr_of(self, topic: str, partition: int) -> list[int]:
        return sorted(self.partition(topic, partition).isr_nodes)

    def wait_for_new_leader(self, topic: str, partition: int, old: int, timeout: float = 30) -> int:
        """Wait until a node other than `old` leads the partition; its node id."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(RuntimeError, KeyError):  # nodes come and go: again
                leader = self.leader_of(topic, partition)
                if leader not in (old, -1):
                    return leader
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}-{partition} still led by {old} after {timeout}s")
            time.sleep(0.1)

    def wait_for_isr(self, topic: str, partition: int, isr: list[int], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(RuntimeError, KeyError):  # nodes come and go: again
                if self.isr_of(topic, partition) == sorted(isr):
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"ISR of {topic}-{partition} is not {sorted(isr)}")
            time.sleep(0.1)

    def active_controller(self) -> int:
        """The node id of the controller leading the quorum (-1: none now)."""
        request = {
            "topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
        }
        for node_id, controller in self.controllers.items():
            if not controller.is_running():
                continue
            try:
                answer = _call(controller.host, controller.port, DESCRIBE_QUORUM, 2, request)
            except NodeUnreachable:
                continue
            partition = answer.topics[0].partitions[0] if answer.topics else None
            if answer.error_code == 0 and partition is not None and partition.error_code == 0:
                return node_id
        return -1

    def wait_for_active_controller(self, other_than: int | None = None, timeout: float = 30) -> int:
        """Wait until a controller (not `other_than`) leads the quorum; its node id."""
        deadline = time.monotonic() + timeout
        while True:
            active = self.active_controller()
            if active not in (-1, other_than):
                return active
            if time.monotonic() > deadline:
                raise TimeoutError(f"no controller leads the quorum after {timeout}s")
            time.sleep(0.05)

    def __repr__(self) -> str:
        running = [n for n, b in self.nodes.items() if b.is_running()]
        return f"<Cluster brokers={list(self.nodes)} running={running} at {self.base_dir}>"


def _call(host: str, port: int, api_key: int, version: int, request: dict[str, Any]) -> Any:
    """One request, answered, from synchronous code (a test may run inside an event loop:
    the request runs in a thread of its own)."""

    async def ask() -> Any:
        client = NodeClient(host, port, 5.0)
        try:
            return await client.call(api_key, version, request)
        finally:
            client.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, ask()).result()
