"""Several Odradek processes forming one cluster, for tests that kill a leader.

    from odradek.testing import Cluster

    with Cluster(brokers=3) as cluster:          # node 0 the controller, 1-3 brokers
        use(cluster.bootstrap_servers)
        leader = cluster.leader_of("orders", 0)
        cluster.kill(leader)                     # SIGKILL, as a crash
        cluster.wait_for_new_leader("orders", 0, old=leader)
        cluster.restart(leader)                  # same data, same port: it catches up

Each node is a ``odradek.testing.Broker`` configured as Kafka's KRaft settings describe
it (``process.roles``, ``node.id``, ``controller.quorum.voters``, a CONTROLLER listener).
The controller runs on a node of its own, so that any broker may be killed; while it is
down the brokers keep serving what they lead, but nothing fails over. Timings are set
for tests: a broker that stops heartbeating is fenced after ``session_timeout_ms``.
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
METADATA = 3


class Cluster:
    def __init__(
        self,
        brokers: int = 3,
        base_dir: Path | None = None,
        *,
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
        self.controller_port = free_port(host)
        common = {
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": f"{CONTROLLER_ID}@{host}:{self.controller_port}",
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
        self.controller = Broker(
            self.base_dir / "controller",
            host=host,
            port=self.controller_port,
            overrides={
                **common,
                "node.id": CONTROLLER_ID,
                "process.roles": "controller",
                "listeners": f"CONTROLLER://{host}:{self.controller_port}",
            },
            faults=faults,  # move_leader
        )
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

    def start(self, timeout: float = START_TIMEOUT) -> Cluster:
        self.controller.start(timeout)
        for broker in self.nodes.values():
            broker.start(timeout)
        return self

    def kill(self, node_id: int) -> None:
        """SIGKILL one node (CONTROLLER_ID: the controller)."""
        self.node(node_id).kill()

    def stop(self, node_id: int) -> None:
        """A clean stop: its partitions move to other replicas at once."""
        self.node(node_id).stop()

    def restart(self, node_id: int, timeout: float = START_TIMEOUT) -> Broker:
        """Start a killed or stopped node again, on its data and port; it returns once
        the controller has admitted it."""
        broker = self.node(node_id)
        if broker.is_running():
            broker.stop()
        return broker.start(timeout)

    def node(self, node_id: int) -> Broker:
        return self.controller if node_id == CONTROLLER_ID else self.nodes[node_id]

    def close(self) -> None:
        for broker in [*self.nodes.values(), self.controller]:
            broker.close()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def __enter__(self) -> Cluster:
        return self.start()

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
