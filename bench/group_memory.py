"""Memory per consumer group and group creations/s (bench/groups.py's first case).

N groups get one committed offset each through the admin client
(AdminClient.alter_consumer_group_offsets, i.e. OffsetCommit with generation -1, 200
in flight); the broker's RSS before and after, divided by N, and its CPU per group.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.peers import CpuMeter, ErrorSink, Peer, client_config, rss_mib
from bench.report import Run, check_peer, cpu_per_op_row, peer_row, topic_name, value_row


@dataclass
class MemoryResult:
    groups: int
    committed: int = 0
    errors: int = 0
    first_error: str | None = None
    seconds: float = 0.0
    rss_before_mib: float = 0.0
    rss_after_mib: float = 0.0
    broker_cpu_pct: float = 0.0
    broker_cpu_s: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0

    @property
    def kib_per_group(self) -> float:
        return (self.rss_after_mib - self.rss_before_mib) * 1024 / self.groups


def settled_rss(pid: int, wait: float = 1.5) -> float:
    time.sleep(wait)
    return rss_mib(pid)["VmRSS"]


def create_groups(peer: Peer, groups: int) -> MemoryResult:
    """`groups` groups with one committed offset each, through AdminClient."""
    result = MemoryResult(groups=groups)
    sink = ErrorSink()
    admin = AdminClient(client_config(peer.bootstrap, sink))
    topic = topic_name("mem")
    peer.create_topic(topic, 1)
    prefix = f"bench-mem-{uuid.uuid4().hex[:6]}"

    def commit_batch(names: list[str]) -> None:
        futures = [
            admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(name, [TopicPartition(topic, 0, 1)])],
                request_timeout=30,
            )[name]
            for name in names
        ]
        for future in futures:
            try:
                future.result(timeout=60)
                result.committed += 1
            except KafkaException as exc:
                result.errors += 1
                result.first_error = result.first_error or str(exc)

    # warm-up: the first commits create the offsets partitions' state
    commit_batch([f"{prefix}-warm-{i}" for i in range(20)])
    result.committed = 0
    result.rss_before_mib = settled_rss(peer.pid)
    started = time.perf_counter()
    names = [f"{prefix}-{i}" for i in range(groups)]
    with CpuMeter(peer.pid) as cpu:
        for at in range(0, groups, 200):  # at most 200 admin requests in flight
            commit_batch(names[at : at + 200])
    cpu.record(result)
    result.seconds = time.perf_counter() - started
    result.rss_after_mib = settled_rss(peer.pid)
    peer.delete_topic(topic)
    return result


def run_memory_case(run: Run, peers: list[Peer]) -> None:
    s = run.settings
    label = (
        f"memory per group: broker RSS delta / {s.memory_groups} groups, one offset commit each "
        "(AdminClient alter_consumer_group_offsets)"
    )
    results: dict[str, MemoryResult] = {}
    for peer in peers:
        try:
            result = create_groups(peer, s.memory_groups)
            results[peer.name] = result
            if result.errors:
                run.problems.append(
                    f"{peer.name} memory case: {result.errors} failed commits; "
                    f"first: {result.first_error}"
                )
            check_peer(run, peer, label)
        except (KafkaException, RuntimeError, OSError) as exc:
            run.problems.append(f"{peer.name} memory case: {exc}")
        done = results.get(peer.name)
        if done is not None:
            print(
                f"    {peer.name}: {done.kib_per_group:.2f} KiB/group "
                f"({done.rss_before_mib:.1f} -> {done.rss_after_mib:.1f} MiB, "
                f"{done.committed} groups in {done.seconds:.1f}s)",
                flush=True,
            )

    def value(name: str) -> float | None:
        result = results.get(name)
        if result is None or result.committed < result.groups:
            return None
        # a zero or negative delta (allocator reuse) cannot be compared
        return result.kib_per_group if result.kib_per_group > 0 else None

    def text(name: str) -> str:
        result = results.get(name)
        if result is None:
            return "failed"
        return (
            f"{result.kib_per_group:.2f} KiB/group ({result.rss_before_mib:.1f} -> "
            f"{result.rss_after_mib:.1f} MiB; {result.committed} groups in {result.seconds:.1f} s)"
        )

    details = {name: asdict(r) for name, r in results.items()}
    run.rows.append(peer_row(label, "KiB/group", "lower", value, text, details))
    rates = {
        name: r.committed / r.seconds for name, r in results.items() if r.seconds and r.committed
    }
    case = "  (same case) group creations/s through the admin client, 200 in flight"
    run.rows.append(value_row(case, "groups/s", "higher", rates, "{:.0f}/s"))
    cpu = {name: (r.broker_cpu_s, r.committed) for name, r in results.items() if r.committed}
    run.rows.append(cpu_per_op_row("  (same case) broker CPU per group creation", cpu))
