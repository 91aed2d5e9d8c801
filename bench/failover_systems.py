"""The two clusters bench/failover.py compares, behind one face: an Odradek cluster
(odradek.testing.Cluster) and an Apache Kafka 4.4 cluster (bench/reference_cluster.py),
each of three controllers (a quorum) and three brokers, with the same settings.

Also the few requests the benchmark sends itself, raw (DescribeQuorum v2, Metadata
v12, CreateTopics v7), with one connection per request: a node may be gone between
two of them; `first_true`, which repeats such a probe until one answers yes; and a
sampler of the machine's load.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.peers import process_cpu_times
from bench.reference_cluster import START_TIMEOUT, KafkaCluster
from odradek.broker.cluster.node_client import NodeClient, NodeUnreachable
from odradek.testing import Cluster

METADATA, CREATE_TOPICS, DESCRIBE_QUORUM = 3, 19, 55
METADATA_TOPIC = "__cluster_metadata"
TOPIC_ALREADY_EXISTS = 36
CASE_TIMEOUT_S = 120.0
Address = tuple[str, int]


class System:
    """A cluster of controllers and brokers, by node id."""

    name = ""
    label = ""

    def __init__(self) -> None:
        self.brokers: dict[int, Address] = {}
        self.controllers: dict[int, Address] = {}
        self.start_seconds = 0.0  # the first process spawned to every broker registered
        self.format_seconds = 0.0  # of which the storage format took

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{host}:{port}" for host, port in self.brokers.values())

    def start(self) -> None:
        raise NotImplementedError

    def kill(self, node_id: int) -> None:
        raise NotImplementedError

    def restart(self, node_id: int) -> None:
        raise NotImplementedError

    def pid(self, node_id: int) -> int | None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def log_paths(self) -> dict[int, Path]:
        raise NotImplementedError

    def running(self, node_ids: dict[int, Address]) -> dict[int, Address]:
        return {n: a for n, a in node_ids.items() if self.pid(n) is not None}

    def cpu_seconds(self) -> dict[int, float]:
        """User + system CPU seconds of each running node (from /proc)."""
        seconds: dict[int, float] = {}
        for node_id in [*self.controllers, *self.brokers]:
            pid = self.pid(node_id)
            if pid is not None:
                with contextlib.suppress(OSError):
                    seconds[node_id] = sum(process_cpu_times(pid))
        return seconds


class OdradekSystem(System):
    name, label = "odradek", "Odradek"

    def __init__(self, base: Path, settings: dict[str, str]) -> None:
        super().__init__()
        session = int(settings["broker.session.timeout.ms"])
        self.cluster = Cluster(
            3, base, controllers=3, overrides=settings, session_timeout_ms=session
        )
        self.brokers = {n: (b.host, b.port) for n, b in self.cluster.nodes.items()}
        self.controllers = {n: (b.host, b.port) for n, b in self.cluster.controllers.items()}

    def start(self) -> None:
        began = time.monotonic()
        self.cluster.start(START_TIMEOUT)
        wait_for_brokers(self)
        self.start_seconds = time.monotonic() - began

    def kill(self, node_id: int) -> None:
        self.cluster.kill(node_id)

    def restart(self, node_id: int) -> None:
        self.cluster.restart(node_id, START_TIMEOUT)

    def pid(self, node_id: int) -> int | None:
        broker = self.cluster.node(node_id)
        return broker.pid if broker.is_running() else None

    def stop(self) -> None:
        self.cluster.close()

    def log_paths(self) -> dict[int, Path]:
        nodes = {**self.cluster.controllers, **self.cluster.nodes}
        return {n: b.log_path for n, b in nodes.items()}


class KafkaSystem(System):
    name, label = "kafka", "Kafka 4.4"

    def __init__(self, base: Path, settings: dict[str, str]) -> None:
        super().__init__()
        self.cluster = KafkaCluster(base, 3, 3, settings)
        self.brokers = {n: ("127.0.0.1", k.port) for n, k in self.cluster.brokers.items()}
        self.controllers = {n: ("127.0.0.1", k.port) for n, k in self.cluster.controllers.items()}

    def start(self) -> None:
        began = time.monotonic()
        self.cluster.start()
        wait_for_brokers(self)
        self.start_seconds = time.monotonic() - began
        self.format_seconds = self.cluster.format_seconds

    def kill(self, node_id: int) -> None:
        self.cluster.kill(node_id)

    def restart(self, node_id: int) -> None:
        self.cluster.restart(node_id)

    def pid(self, node_id: int) -> int | None:
        return self.cluster.pid(node_id)

    def stop(self) -> None:
        self.cluster.stop()

    def log_paths(self) -> dict[int, Path]:
        return {n: k.log_file for n, k in self.cluster.nodes.items()}


# ---------------------------------------------------------------------- requests


async def ask(address: Address, api_key: int, version: int, request: dict[str, Any]) -> Any:
    """One request on a connection of its own; NodeUnreachable if it gets no answer."""
    client = NodeClient(address[0], address[1], 5.0)
    try:
        return await client.call(api_key, version, request, client_id="failover-bench")
    finally:
        client.close()


async def quorum_leader(address: Address) -> int:
    """The quorum's leader as a node (a broker forwards) answers it; -1: no answer, or
    the node does not lead (a controller answers only while it leads)."""
    request = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
    try:
        answer = await ask(address, DESCRIBE_QUORUM, 2, request)
    except NodeUnreachable:
        return -1
    if answer.error_code or not answer.topics or not answer.topics[0].partitions:
        return -1
    partition = answer.topics[0].partitions[0]
    return -1 if partition.error_code else int(partition.leader_id)


async def voters_caught_up(address: Address, since_ms: int) -> bool:
    """Every voter has been caught up with the leader since `since_ms` (wall clock)."""
    request = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
    try:
        answer = await ask(address, DESCRIBE_QUORUM, 2, request)
    except NodeUnreachable:
        return False
    if answer.error_code or not answer.topics or not answer.topics[0].partitions:
        return False
    partition = answer.topics[0].partitions[0]
    return not partition.error_code and all(
        voter.last_caught_up_timestamp >= since_ms for voter in partition.current_voters
    )


async def metadata(address: Address, topics: list[str] | None) -> Any:
    request = {
        "topics": None if topics is None else [{"name": t} for t in topics],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    return await ask(address, METADATA, 12, request)


async def partition_state(address: Address, topic: str, index: int) -> tuple[int, list[int]]:
    """(leader, ISR) of a partition as a broker sees it; (-1, []) if it cannot say."""
    try:
        answer = await metadata(address, [topic])
    except NodeUnreachable:
        return -1, []
    for found in answer.topics:
        for partition in found.partitions:
            if found.name == topic and partition.partition_index == index:
                if partition.error_code:
                    return -1, []
                return int(partition.leader_id), sorted(partition.isr_nodes)
    return -1, []


async def create_topic(address: Address, topic: str, partitions: int, factor: int) -> int:
    """CreateTopics through a broker: the topic's error code (0: created; -1: no answer)."""
    request = {
        "topics": [
            {
                "name": topic,
                "num_partitions": partitions,
                "replication_factor": factor,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout_ms": 4000,
        "validate_only": False,
    }
    try:
        answer = await ask(address, CREATE_TOPICS, 7, request)
    except NodeUnreachable:
        return -1
    return int(answer.topics[0].error_code)


def wait_for_brokers(system: System, timeout: float = 120.0) -> None:
    """Until a broker's Metadata lists every broker of the cluster."""

    async def listed() -> bool:
        for address in system.brokers.values():
            with contextlib.suppress(NodeUnreachable):
                answer = await metadata(address, [])
                if {b.node_id for b in answer.brokers} >= set(system.brokers):
                    return True
        return False

    deadline = time.monotonic() + timeout
    while not asyncio.run(listed()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{system.label}: the brokers did not all register")
        time.sleep(0.1)


def topic_name(label: str) -> str:
    return f"failover-{label}-{uuid.uuid4().hex[:6]}"


# ----------------------------------------------------------------------- probing


async def first_true(
    probe: Callable[[], Awaitable[bool]], period: float, timeout: float = CASE_TIMEOUT_S
) -> float:
    """Starts `probe` every `period` seconds (a slow one does not hold up the next) and
    returns the monotonic time the first one answered True."""
    done = asyncio.Event()
    found: list[float] = []

    async def one() -> None:
        if await probe() and not found:
            found.append(time.monotonic())
            done.set()

    tasks: set[asyncio.Task[None]] = set()
    deadline = time.monotonic() + timeout
    try:
        while not done.is_set():
            if time.monotonic() > deadline:
                raise TimeoutError(f"not within {timeout:.0f} s")
            task = asyncio.create_task(one())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), period)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return found[0]


async def any_of(addresses: list[tuple[str, int]], check: Callable[[Any], Awaitable[bool]]) -> bool:
    return any(await asyncio.gather(*(check(address) for address in addresses)))


def cpu_spent(before: dict[int, float], after: dict[int, float]) -> dict[int, float]:
    """CPU seconds each node spent in between (nodes running at both ends)."""
    return {n: round(after[n] - before[n], 2) for n in after if n in before}


class LoadSampler:
    """The machine's 1-minute load average every 2 s while the `with` block runs: the
    two clusters run at different times, and the machine is shared."""

    def __init__(self, into: list[float]) -> None:
        self.into = into
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.into.append(os.getloadavg()[0])
            self._stop.wait(2.0)

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
