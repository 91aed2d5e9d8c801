"""Apache Kafka 4.4 as a cluster of its own processes: controllers and brokers, each a
`kafka.Kafka` JVM (bench/reference_kafka.py's ReferenceKafka, one role each).

    cluster = KafkaCluster(Path("/tmp/k"), settings={"min.insync.replicas": "2"})
    cluster.start()                      # controllers 0, 4, 5; brokers 1, 2, 3
    cluster.kill(4)                      # SIGKILL, as a crash
    cluster.restart(4)                   # same data, same ports
    cluster.stop()

Every node's storage is formatted with the same cluster id; the controllers form a
static quorum (`controller.quorum.voters`). Node ids follow odradek.testing.Cluster's:
brokers 1..N, the first controller 0, the others N+1, N+2, ... `settings` go to every
node; the controllers run with a smaller heap than the brokers (they hold only the
metadata log).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.reference_kafka import HEAP, ReferenceKafka, new_cluster_id

CONTROLLER_HEAP = "-Xmx256m"
# Six JVMs starting side by side on a small machine: a broker opens its port only once
# the quorum has a leader and it has caught up with the metadata log
START_TIMEOUT = 300.0


@dataclass
class KafkaNode(ReferenceKafka):
    """One node of a cluster: a broker (its PLAINTEXT listener on `port`) or a
    controller (its CONTROLLER listener on `port`; `controller_port` is not used)."""

    node_id: int = 1
    controller: bool = False
    voters: str = ""

    def _properties(self) -> str:
        listener = "CONTROLLER" if self.controller else "PLAINTEXT"
        settings = {
            "process.roles": "controller" if self.controller else "broker",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters,
            "listeners": f"{listener}://127.0.0.1:{self.port}",
            "advertised.listeners": f"{listener}://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.base / "data"),
            "group.initial.rebalance.delay.ms": "0",
            **({} if self.controller else {"inter.broker.listener.name": "PLAINTEXT"}),
            **self.extra,
        }
        return "".join(f"{key}={value}\n" for key, value in settings.items())


class KafkaCluster:
    def __init__(
        self,
        base: Path,
        brokers: int = 3,
        controllers: int = 3,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.base = base
        self.cluster_id = new_cluster_id()
        self.controller_ids = [0] + [brokers + i for i in range(1, controllers)]
        extra = dict(settings or {})
        self.controllers = {
            node_id: KafkaNode(
                base / f"controller{node_id}",
                extra=extra,
                cluster_id=self.cluster_id,
                heap=CONTROLLER_HEAP,
                node_id=node_id,
                controller=True,
            )
            for node_id in self.controller_ids
        }
        voters = ",".join(
            f"{node_id}@127.0.0.1:{node.port}" for node_id, node in self.controllers.items()
        )
        for node in self.controllers.values():
            node.voters = voters
        self.brokers = {
            node_id: KafkaNode(
                base / f"broker{node_id}",
                extra=extra,
                cluster_id=self.cluster_id,
                heap=HEAP,
                node_id=node_id,
                voters=voters,
            )
            for node_id in range(1, brokers + 1)
        }
        self.format_seconds = 0.0  # the slowest node's storage format
        self.start_seconds = 0.0  # the first format to every node accepting

    @property
    def nodes(self) -> dict[int, KafkaNode]:
        return {**self.controllers, **self.brokers}

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.bootstrap for node in self.brokers.values())

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id]

    def start(self, timeout: float = START_TIMEOUT) -> KafkaCluster:
        """Format and start every node side by side; returns once each accepts
        connections (the brokers may not have registered yet)."""
        began = time.monotonic()
        try:
            with ThreadPoolExecutor(len(self.nodes)) as pool:
                for started in [pool.submit(node.start, timeout) for node in self.nodes.values()]:
                    started.result()
        except Exception:
            self.stop()
            raise
        figures = [node.figures for node in self.nodes.values() if node.figures]
        self.format_seconds = max(f.format_seconds for f in figures)
        self.start_seconds = time.monotonic() - began
        return self

    def kill(self, node_id: int) -> None:
        self.node(node_id).kill()

    def restart(self, node_id: int, timeout: float = START_TIMEOUT) -> None:
        """Start a killed node again on its data and ports (no new format)."""
        self.node(node_id).start(timeout)

    def pid(self, node_id: int) -> int | None:
        proc = self.node(node_id).proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def stop(self) -> None:
        """Brokers first, so that they do not wait on controllers for a clean stop."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(KafkaNode.stop, self.brokers.values()))
            list(pool.map(KafkaNode.stop, self.controllers.values()))
