"""SPEC §6 vectors through librdkafka (confluent-kafka), kafka-python and aiokafka
consumers, several members in one test process, each polled in turn."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from helpers.broker import Broker
from helpers.env import require_module
from helpers.topics import create_topic

pytestmark = pytest.mark.timeout(120)

VECTORS: dict[str, tuple[list[int], dict[str, list[int]], dict[str, list[str]]]] = {
    "R1": (
        [4, 4],
        {"C0": [0, 1], "C1": [0, 1]},
        {"C0": ["t0p0", "t0p1", "t1p0", "t1p1"], "C1": ["t0p2", "t0p3", "t1p2", "t1p3"]},
    ),
    "R2": (
        [3, 3],
        {"C0": [0, 1], "C1": [0, 1]},
        {"C0": ["t0p0", "t0p1", "t1p0", "t1p1"], "C1": ["t0p2", "t1p2"]},
    ),
    "RR1": (
        [3, 3],
        {"C0": [0, 1], "C1": [0, 1]},
        {"C0": ["t0p0", "t0p2", "t1p1"], "C1": ["t0p1", "t1p0", "t1p2"]},
    ),
    "RR2": (
        [1, 2, 3],
        {"C0": [0], "C1": [0, 1], "C2": [0, 1, 2]},
        {"C0": ["t0p0"], "C1": ["t1p0"], "C2": ["t1p1", "t2p0", "t2p1", "t2p2"]},
    ),
    "RR4": (
        [2, 2, 2, 2],
        {c: [0, 1, 2, 3] for c in ("C0", "C1", "C2")},
        {"C0": ["t0p0", "t1p1", "t3p0"], "C1": ["t0p1", "t2p0", "t3p1"], "C2": ["t1p0", "t2p1"]},
    ),
}


def make_topics(b: Broker, name_factory: Callable[[str], str], sizes: list[int]) -> list[str]:
    base = name_factory("vec")
    names = [f"{base}-t{i}" for i in range(len(sizes))]
    for name, size in zip(names, sizes, strict=True):
        create_topic(b.bootstrap, name, size)
    return names


def short(parts: set[tuple[str, int]], names: list[str]) -> list[str]:
    index = {name: i for i, name in enumerate(names)}
    return [f"t{t}p{p}" for t, p in sorted((index[t], p) for t, p in parts)]


def settled(current: dict[str, set[tuple[str, int]]], total: int) -> bool:
    """Every member holds something, nothing twice, everything once."""
    if not all(current.values()):
        return False
    union = set().union(*current.values())
    return len(union) == total == sum(len(v) for v in current.values())


def wait_for_assignment(
    pump: Callable[[], dict[str, set[tuple[str, int]]]],
    total: int,
    timeout: float = 45.0,
    steady: float = 1.0,
) -> dict[str, set[tuple[str, int]]]:
    """Pump the members until they settle and stay settled for ``steady`` seconds."""
    deadline = time.monotonic() + timeout
    since: float | None = None
    last: dict[str, set[tuple[str, int]]] = {}
    while time.monotonic() < deadline:
        current = pump()
        if settled(current, total) and current == last:
            since = since if since is not None else time.monotonic()
            if time.monotonic() - since >= steady:
                return current
        else:
            since = None
        last = current
    raise AssertionError(f"no settled assignment within {timeout}s; last: {last}")


# --------------------------------------------------------------------------- librdkafka


def rdkafka_members(
    b: Broker, group: str, names: list[str], subs: dict[str, list[int]], strategy: str
) -> tuple[list[Any], Callable[[], dict[str, set[Any]]]]:
    require_module("confluent_kafka")
    from confluent_kafka import Consumer

    consumers = {}
    for client, topics in subs.items():
        c = Consumer(
            {
                "bootstrap.servers": b.bootstrap,
                "group.id": group,
                "client.id": client,
                "partition.assignment.strategy": strategy,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        c.subscribe([names[i] for i in topics])
        consumers[client] = c

    def pump() -> dict[str, set[tuple[str, int]]]:
        for c in consumers.values():
            c.poll(0.05)
        return {k: {(p.topic, p.partition) for p in c.assignment()} for k, c in consumers.items()}

    return list(consumers.values()), pump


@pytest.mark.parametrize(
    ("strategy", "case"),
    [
        ("range", "R1"),
        ("range", "R2"),
        ("roundrobin", "RR1"),
        ("roundrobin", "RR4"),
    ],
)
def test_librdkafka_vectors(
    shared_broker: Broker,
    name_factory: Callable[[str], str],
    unique_group: str,
    strategy: str,
    case: str,
) -> None:
    sizes, subs, expected = VECTORS[case]
    names = make_topics(shared_broker, name_factory, sizes)
    consumers, pump = rdkafka_members(shared_broker, unique_group, names, subs, strategy)
    try:
        got = wait_for_assignment(pump, sum(sizes))
    finally:
        for c in consumers:
            c.close()
    assert {k: short(v, names) for k, v in got.items()} == expected


def test_librdkafka_cooperative_sticky(
    shared_broker: Broker, name_factory: Callable[[str], str], unique_group: str
) -> None:
    """Two members settle 3/3; a third joins: the first two only lose partitions
    (incremental revokes), end 2/2/2 and keep what they kept."""
    require_module("confluent_kafka")
    from confluent_kafka import Consumer

    names = make_topics(shared_broker, name_factory, [6])
    revoked: dict[str, list[set[tuple[str, int]]]] = {"C0": [], "C1": [], "C2": []}
    consumers: dict[str, Any] = {}

    def add(client: str) -> None:
        c = Consumer(
            {
                "bootstrap.servers": shared_broker.bootstrap,
                "group.id": unique_group,
                "client.id": client,
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "enable.auto.commit": False,
            }
        )

        def on_revoke(consumer: Any, parts: Sequence[Any]) -> None:
            revoked[client].append({(p.topic, p.partition) for p in parts})

        c.subscribe(names, on_revoke=on_revoke)
        consumers[client] = c

    def pump() -> dict[str, set[tuple[str, int]]]:
        for c in consumers.values():
            c.poll(0.05)
        return {k: {(p.topic, p.partition) for p in c.assignment()} for k, c in consumers.items()}

    try:
        add("C0")
        add("C1")
        first = wait_for_assignment(pump, 6)
        assert sorted(len(v) for v in first.values()) == [3, 3]
        for events in revoked.values():
            events.clear()
        add("C2")
        second = wait_for_assignment(pump, 6)
        before_close = {k: list(v) for k, v in revoked.items()}  # close() revokes all
    finally:
        for c in consumers.values():
            c.close()
    assert sorted(len(v) for v in second.values()) == [2, 2, 2]
    for client in ("C0", "C1"):
        assert second[client] <= first[client]
        lost = set().union(*before_close[client]) if before_close[client] else set()
        assert lost == first[client] - second[client], (client, before_close, first, second)


# --------------------------------------------------------------------------- kafka-python


def kafka_python_run(
    b: Broker, group: str, names: list[str], subs: dict[str, list[int]], assignor: Any, total: int
) -> dict[str, set[tuple[str, int]]]:
    """Each member polls in its own thread, as an application would: kafka-python 3.0.12
    drops a JoinGroup answer that lands between two of its polls and joins again, so
    members polled in turn with short timeouts can rebalance for ever on a busy machine."""
    require_module("kafka")
    from kafka import KafkaConsumer

    consumers: dict[str, Any] = {}
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def poll_until_stopped(c: Any) -> None:
        while not stop.is_set():
            c.poll(timeout_ms=500)

    try:
        for client, topics in subs.items():
            c = KafkaConsumer(
                bootstrap_servers=b.bootstrap,
                group_id=group,
                client_id=client,
                partition_assignment_strategy=[assignor],
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            c.subscribe([names[i] for i in topics])
            consumers[client] = c
        for c in consumers.values():
            threads.append(threading.Thread(target=poll_until_stopped, args=(c,), daemon=True))
            threads[-1].start()

        def observe() -> dict[str, set[tuple[str, int]]]:
            time.sleep(0.05)
            return {
                k: {(p.topic, p.partition) for p in c.assignment()} for k, c in consumers.items()
            }

        return wait_for_assignment(observe, total)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
        for c in consumers.values():
            c.close()


@pytest.mark.parametrize("case", ["R2", "RR1"])
def test_kafka_python_vectors(
    shared_broker: Broker, name_factory: Callable[[str], str], unique_group: str, case: str
) -> None:
    require_module("kafka")
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignor = (
        RangePartitionAssignor
        if case.startswith("R") and not case.startswith("RR")
        else RoundRobinPartitionAssignor
    )
    sizes, subs, expected = VECTORS[case]
    names = make_topics(shared_broker, name_factory, sizes)
    got = kafka_python_run(shared_broker, unique_group, names, subs, assignor, sum(sizes))
    assert {k: short(v, names) for k, v in got.items()} == expected


def test_kafka_python_sticky_s3(
    shared_broker: Broker, name_factory: Callable[[str], str], unique_group: str
) -> None:
    require_module("kafka")
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    sizes, subs, _ = VECTORS["RR2"]
    names = make_topics(shared_broker, name_factory, sizes)
    got = kafka_python_run(
        shared_broker, unique_group, names, subs, StickyPartitionAssignor, sum(sizes)
    )
    assert {k: short(v, names) for k, v in got.items()} == {
        "C0": ["t0p0"],
        "C1": ["t1p0", "t1p1"],
        "C2": ["t2p0", "t2p1", "t2p2"],
    }


# --------------------------------------------------------------------------- aiokafka


@pytest.mark.parametrize("case", ["R1", "RR4"])
async def test_aiokafka_vectors(
    shared_broker: Broker, name_factory: Callable[[str], str], unique_group: str, case: str
) -> None:
    require_module("aiokafka")
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignor = RoundRobinPartitionAssignor if case.startswith("RR") else RangePartitionAssignor
    sizes, subs, expected = VECTORS[case]
    names = make_topics(shared_broker, name_factory, sizes)
    consumers = {
        client: AIOKafkaConsumer(
            *[names[i] for i in topics],
            bootstrap_servers=shared_broker.bootstrap,
            group_id=unique_group,
            client_id=client,
            partition_assignment_strategy=(assignor,),
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            enable_auto_commit=False,
        )
        for client, topics in subs.items()
    }
    try:
        for c in consumers.values():
            await c.start()
        deadline = time.monotonic() + 45
        since = None
        got: dict[str, set[tuple[str, int]]] = {}
        while time.monotonic() < deadline:
            await asyncio.gather(*(c.getmany(timeout_ms=50) for c in consumers.values()))
            now = {
                k: {(p.topic, p.partition) for p in c.assignment()} for k, c in consumers.items()
            }
            if settled(now, sum(sizes)) and now == got:
                since = since or time.monotonic()
                if time.monotonic() - since >= 1.0:
                    break
            else:
                since = None
            got = now
        else:
            raise AssertionError(f"no settled assignment; last {got}")
    finally:
        for c in consumers.values():
            await c.stop()
    assert {k: short(v, names) for k, v in got.items()} == expected
