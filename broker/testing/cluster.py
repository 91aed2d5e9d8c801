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

    with Cluster(brokers=3, controllers=3, proxied=True) as cluster:
        cluster.cut(leader)                      # from every other node, both ways
        cluster.cut(2, cluster.controller_ids)   # broker 2 from the quorum only
        cluster.heal()

Each node is a ``odradek.testing.Broker`` configured as Kafka's KRaft settings describe
it (``process.roles``, ``node.id``, ``controller.quorum.voters``, a CONTROLLER listener).
The controllers run on nodes of their own, so that any broker may be killed. With one
controller, while it is down the brokers keep serving what they lead, but nothing fails
over; with three, the others elect a new leader. Timings are set for tests: a broker
that stops heartbeating is fenced after ``session_timeout_ms``.

With ``proxied=True`` every node reaches every other one through a TCP proxy of its
own (a link, broker/testing/netsplit.py), so that a test can partition the network;
clients (and this object's own requests) still reach every node directly. How each
node is told the proxies' addresses, with nothing but settings, is in `_Wiring`.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from odradek.broker.cluster.node_client import NodeClient, NodeUnreachable
from odradek.broker.dataplane.log_dirs import kafka_uuid
from odradek.broker.testing.broker import START_TIMEOUT, Broker, free_port, normalize_overrides
from odradek.broker.testing.netsplit import Link, Mode, Netsplit

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
        proxied: bool = False,
        dynamic_voters: bool = False,
        initial_controllers: bool = False,
    ) -> None:
        """`dynamic_voters`: the controllers find each other through
        controller.quorum.bootstrap.servers (kraft.version 1); the first starts as the
        only voter and the others observe until added (kafka-metadata-quorum
        add-controller), or with `initial_controllers` all start as the voters."""
        if dynamic_voters and proxied:
            raise ValueError("dynamic voters are not wired through proxies")
        self._temporary: Path | None = None
        if base_dir is None:
            base_dir = self._temporary = Path(tempfile.mkdtemp(prefix="odradek-cluster-"))
        self.base_dir = Path(base_dir)
        self.host = host
        self.controller_ids = [CONTROLLER_ID] + [brokers + i for i in range(1, controllers)]
        ports = {node_id: free_port(host) for node_id in self.controller_ids}
        self.controller_port = ports[CONTROLLER_ID]
        broker_ids = list(range(1, brokers + 1))
        client_ports = {node_id: free_port(host) for node_id in broker_ids}
        self.net = Netsplit(host) if proxied else None
        wiring = _Wiring(self.net, host, ports, broker_ids)
        common = {
            "controller.listener.names": "CONTROLLER",
            **(
                {"controller.quorum.bootstrap.servers": wiring.bootstrap_servers()}
                if dynamic_voters
                else {"controller.quorum.voters": wiring.voters(CONTROLLER_ID)}
            ),
            "listener.security.protocol.map": wiring.protocol_map(),
            "broker.session.timeout.ms": str(session_timeout_ms),
            "broker.heartbeat.interval.ms": str(max(session_timeout_ms // 8, 50)),
            "replica.lag.time.max.ms": str(max(session_timeout_ms * 2, 1000)),
            "offsets.topic.replication.factor": str(min(brokers, 3)),
            "transaction.state.log.replication.factor": str(min(brokers, 3)),
            "transaction.state.log.min.isr": str(min(brokers, 2)),
            "default.replication.factor": str(min(brokers, 3)),
            **normalize_overrides(overrides),
        }
        directory_ids = {n: kafka_uuid(uuid.uuid4()) for n in self.controller_ids}
        listed = ",".join(f"{n}@{host}:{ports[n]}:{directory_ids[n]}" for n in self.controller_ids)

        def first_voters(node_id: int) -> list[str]:
            if not dynamic_voters:
                return []
            if initial_controllers:
                return ["--initial-controllers", listed]
            return ["--standalone"] if node_id == CONTROLLER_ID else []

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
                    **wiring.own_voters(node_id),
                },
                faults=faults,  # move_leader
                extra_args=first_voters(node_id),
            )
            for node_id, port in ports.items()
        }
        self.controller = self.controllers[CONTROLLER_ID]
        self.nodes: dict[int, Broker] = {}
        for node_id, port in client_ports.items():
            self.nodes[node_id] = Broker(
                self.base_dir / f"node{node_id}",
                host=host,
                port=port,
                overrides={
                    **common,
                    "node.id": node_id,
                    "process.roles": "broker",
                    "listeners": f"PLAINTEXT://{host}:{port}",
                    **wiring.own_voters(node_id),
                    **wiring.broker_listeners(node_id, port),
                },
                faults=faults,  # each node's own: node(i).faults
            )

    # -- lifecycle ---------------------------------------------------------------------

    def start(self, timeout: float = NODE_START_TIMEOUT) -> Cluster:
        """The controllers side by side, then the brokers side by side."""
        for group in (list(self.controllers.values()), list(self.nodes.values())):
            if not group:
                continue
            with ThreadPoolExecutor(len(group)) as pool:
                for started in [pool.submit(node.start, timeout) for node in group]:
                    started.result()  # the first failure is raised (close() stops the rest)
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
        if self.net is not None:
            self.net.close()
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

    def metadata(self, topics: list[str] | None = None, via: int | None = None) -> Any:
        """A Metadata answer from broker `via`, else from the first running broker that
        gives one, those whose links to the controllers are not cut first (the others
        may not know the news)."""
        request = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        asked = list(self.nodes) if via is None else [via]
        for node_id in sorted(asked, key=self._cut_from_controllers):
            broker = self.nodes[node_id]
            if not broker.is_running():
                continue
            try:
                return _call(broker.host, broker.port, METADATA, 12, request)
            except NodeUnreachable:
                continue
        raise RuntimeError("no broker of the cluster answers")

    def _cut_from_controllers(self, node_id: int) -> bool:
        if self.net is None:
            return False
        return any(self.net.link(node_id, c).is_cut for c in self.controllers)

    def partition(self, topic: str, partition: int, via: int | None = None) -> Any:
        for found in self.metadata([topic], via).topics:
            for p in found.partitions:
                if p.partition_index == partition:
                    return p
        raise KeyError(f"{topic}-{partition}")

    def leader_of(self, topic: str, partition: int, via: int | None = None) -> int:
        """The node id leading the partition now (-1: none), as broker `via` (else any)
        sees it."""
        return int(self.partition(topic, partition, via).leader_id)

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

    # -- the network between the nodes (proxied=True) ---------------------------------

    def link(self, source: int, target: int) -> Link:
        """The proxy that carries `source`'s connections to `target`."""
        return self._net().link(source, target)

    def cut(
        self,
        side: int | Iterable[int],
        other: int | Iterable[int] | None = None,
        mode: Mode = "blackhole",
    ) -> list[Link]:
        """Cut, both ways, every link between a node of `side` and a node of `other`
        (every other node when None); the clients still reach every node. The links
        cut, in case the test heals only some."""
        one = _ids(side)
        two = set(self.controllers) | set(self.nodes) if other is None else _ids(other)
        two -= one
        cut = [
            link
            for (source, target), link in self._net().links.items()
            if (source in one and target in two) or (source in two and target in one)
        ]
        for link in cut:
            link.cut(mode)
        return cut

    def heal(self) -> None:
        """Every link forwards again."""
        self._net().heal()

    def _net(self) -> Netsplit:
        if self.net is None:
            raise RuntimeError("the nodes talk directly: Cluster(proxied=True) has links to cut")
        return self.net

    def __repr__(self) -> str:
        running = [n for n, b in self.nodes.items() if b.is_running()]
        return f"<Cluster brokers={list(self.nodes)} running={running} at {self.base_dir}>"


class _Wiring:
    """Where each node reaches each other one: its listener, or with proxies (a
    Netsplit), the proxy of the link between them. Controllers are reached at the
    addresses of controller.quorum.voters, so each node has voters of its own. Brokers
    are reached at the address another broker registered for the inter-broker
    listener, which all see alike; so broker B opens a listener per broker A, FROM<A>,
    advertised at the proxy of the link from A to B, and A's inter.broker.listener.name
    is FROM<A> (its own FROM<A> is advertised as it is)."""

    def __init__(
        self,
        net: Netsplit | None,
        host: str,
        controller_ports: dict[int, int],
        broker_ids: list[int],
    ) -> None:
        self.net, self.host = net, host
        self.controller_ports = controller_ports
        self.broker_ids = broker_ids
        self.inter_ports: dict[tuple[int, int], int] = {}  # (from, to): FROM<from> of `to`
        if net is None:
            return
        self.inter_ports = {(a, b): free_port(host) for a in broker_ids for b in broker_ids}
        for source in [*controller_ports, *broker_ids]:
            for target, port in controller_ports.items():
                if source != target:
                    net.add(source, target, (host, port))
        for (source, target), port in self.inter_ports.items():
            if source != target:
                net.add(source, target, (host, port))

    def _port(self, source: int, target: int, port: int) -> int:
        if self.net is None or source == target:
            return port
        return self.net.link(source, target).port

    def voters(self, node_id: int) -> str:
        return ",".join(
            f"{voter}@{self.host}:{self._port(node_id, voter, port)}"
            for voter, port in self.controller_ports.items()
        )

    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host}:{port}" for port in self.controller_ports.values())

    def own_voters(self, node_id: int) -> dict[str, str]:
        return {"controller.quorum.voters": self.voters(node_id)} if self.net else {}

    def protocol_map(self) -> str:
        names = ["PLAINTEXT", "CONTROLLER"]
        if self.net is not None:
            names += [f"FROM{a}" for a in self.broker_ids]
        return ",".join(f"{name}:PLAINTEXT" for name in names)

    def broker_listeners(self, node_id: int, client_port: int) -> dict[str, str]:
        if self.net is None:
            return {}
        clients = f"PLAINTEXT://{self.host}:{client_port}"
        bound = {a: self.inter_ports[a, node_id] for a in self.broker_ids}
        return {
            "listeners": ",".join(
                [clients, *(f"FROM{a}://{self.host}:{port}" for a, port in bound.items())]
            ),
            "advertised.listeners": ",".join(
                [
                    clients,
                    *(
                        f"FROM{a}://{self.host}:{self._port(a, node_id, port)}"
                        for a, port in bound.items()
                    ),
                ]
            ),
            "inter.broker.listener.name": f"FROM{node_id}",
        }


def _ids(nodes: int | Iterable[int]) -> set[int]:
    return {nodes} if isinstance(nodes, int) else set(nodes)


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
