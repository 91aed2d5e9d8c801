"""Consumer-group benchmark: Odradek beside Apache Kafka 4.4 and librdkafka's mock cluster.

Run from the repository root:

    .venv/bin/python -m bench.groups [--quick]

The three peers run in child processes (see bench/peers.py; Kafka as the test rig
starts it, bench/reference_kafka.py); every client is confluent-kafka (librdkafka) in
this process.

- Odradek runs with `group.initial.rebalance.delay.ms=0` (Kafka has it from the test
  rig's settings); the mock's initial rebalance delay (librdkafka default for the
  mock: 3000 ms) is set to 0 as well.
- memory per group: broker RSS before and after N groups are created with one
  offset commit each (AdminClient.alter_consumer_group_offsets, i.e. OffsetCommit
  with generation -1), divided by N (bench/group_memory.py). Run first, on a fresh
  broker.
- one-member join: N groups in a row, each a new consumer that subscribes, waits for
  its assignment (timed) and closes (leaves); the broker's CPU over all of them / N.
- join: a group of 10 and 100 consumers (subscribe to a topic with as many
  partitions as members, default eager assignor "range,roundrobin", client
  defaults otherwise: heartbeat.interval.ms=3000, session.timeout.ms=45000). All
  consumers are created first, then subscribed one after the other and polled
  round-robin from one thread; the time is from the first subscribe() to the moment
  every member holds a non-empty assignment (on_assign / on_revoke bookkeeping).
- offset commits/s: 10 members of one (already balanced) group, one thread each,
  commit their partition's offset synchronously in a loop; total commits/s and
  per-commit latency p50/p99.

The broker's CPU (process CPU from /proc; Kafka's whole JVM) is divided by the
operations: per offset commit, per group creation, per one-member join and leave.

Ratios are oriented so that >1 means Odradek is better: other/Odradek for times, CPU
and memory, Odradek/other for rates.
"""

from __future__ import annotations

import gc
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import KafkaException, TopicPartition

from bench.group_memory import run_memory_case
from bench.peers import (
    CpuMeter,
    ErrorSink,
    MockPeer,
    OdradekPeer,
    Peer,
    client_config,
    percentile,
)
from bench.report import (
    Run,
    Step,
    arg_parser,
    check_peer,
    cpu_per_op_row,
    peer_row,
    peers_in_order,
    remove_workdir,
    report,
    run_steps,
    start_kafka,
    start_run,
    topic_name,
    value_row,
)

# Consumer-protocol members learn of a new target assignment at their next heartbeat,
# so a join of many members takes a few heartbeat intervals on any broker; every peer
# gives them this one.
CONSUMER_HEARTBEAT_MS = 250
ODRADEK_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": str(CONSUMER_HEARTBEAT_MS),
}
# Kafka 4.4 refuses a heartbeat interval under group.consumer.min.heartbeat.interval.ms
KAFKA_SETTINGS = {
    "group.consumer.heartbeat.interval.ms": str(CONSUMER_HEARTBEAT_MS),
    "group.consumer.min.heartbeat.interval.ms": str(CONSUMER_HEARTBEAT_MS),
}
JOIN_TIMEOUT = 60.0
# Both peers: the mock completes a rebalance of a group that already has members only
# when a timer of session.timeout.ms - 1 s fires (44 s with the default 45 s), so
# the group members use the smallest session timeout Odradek accepts by default
# (group.min.session.timeout.ms=6000) and a heartbeat interval of a third of it.
MEMBER_CONFIG = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 2000}
# consumer-protocol members: the broker sets the session and heartbeat interval
PROTOCOL_CONFIG: dict[str, dict[str, Any]] = {
    "classic": MEMBER_CONFIG,
    "consumer": {"group.protocol": "consumer"},
}


@dataclass(frozen=True)
class Settings:
    quick: bool
    join_sizes: tuple[int, ...]
    join_repeats: dict[int, int]
    single_joins: int
    commit_members: int
    commit_seconds: float
    memory_groups: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(quick, (10, 100), {10: 1, 100: 1}, 10, 10, 2.0, 1000)
        return cls(quick, (10, 100), {10: 7, 100: 5}, 30, 10, 5.0, 2000)


# --------------------------------------------------------------------------- join


@dataclass
class JoinResult:
    members: int
    seconds: float | None = None
    create_seconds: float = 0.0
    rebalances_seen: int = 0  # on_assign calls over all members
    close_seconds: float = 0.0
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    broker_cpu_s: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0


class Member:
    """One consumer and its current assignment as seen by the rebalance callbacks."""

    def __init__(self, bootstrap: str, group: str, sink: ErrorSink, **extra: Any) -> None:
        self.assigned = 0
        self.owned: set[tuple[str, int]] = set()
        self.assign_calls = 0
        config = client_config(
            bootstrap,
            sink,
            **{
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **extra,
            },
        )
        self.consumer = KafkaConsumer(config)

    # Eager (classic) callbacks hand over and take back everything; incremental ones
    # (the consumer protocol) only what changes: a set follows both.
    def on_assign(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        self.owned |= {(p.topic, p.partition) for p in partitions}
        self.assigned = len(self.owned)
        self.assign_calls += 1

    def on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        self.owned -= {(p.topic, p.partition) for p in partitions}
        self.assigned = len(self.owned)

    def subscribe(self, topic: str) -> None:
        self.consumer.subscribe(
            [topic], on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_revoke
        )


def close_members(members: list[Member]) -> float:
    """Close all consumers in parallel (each close() leaves the group and waits).

    A Member and its consumer hold each other (the rebalance callbacks), so they are
    freed by the cycle collector only; confluent-kafka keeps a thread-local-storage key
    per live client, and past about 1000 of them a new client fails ("Failed to
    initialize thread local storage"): collect now."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(len(members), 50)) as pool:
        list(pool.map(lambda m: m.consumer.close(), members))
    elapsed = time.perf_counter() - started
    members.clear()
    gc.collect()
    return elapsed


def join_group(
    bootstrap: str, topic: str, count: int, sink: ErrorSink, result: JoinResult, protocol: str
) -> list[Member]:
    """Create `count` consumers, subscribe them all, poll until all are assigned."""
    group = f"bench-join-{count}-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    config = PROTOCOL_CONFIG[protocol]
    members = [Member(bootstrap, group, sink, **config) for _ in range(count)]
    # Let every client learn the cluster before timing (not part of the join).
    for member in members:
        member.consumer.list_topics(topic, timeout=10)
    result.create_seconds = time.perf_counter() - started
    began = time.perf_counter()
    for member in members:
        member.subscribe(topic)
    deadline = time.monotonic() + JOIN_TIMEOUT
    while True:
        for member in members:
            member.consumer.poll(0)
        if all(m.assigned > 0 for m in members):
            result.seconds = time.perf_counter() - began
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.002)
    result.rebalances_seen = sum(m.assign_calls for m in members)
    return members


def run_join_cases(run: Run, peers: list[Peer]) -> None:
    for protocol in PROTOCOL_CONFIG:
        run_protocol_join_cases(run, peers, protocol)


def run_protocol_join_cases(run: Run, peers: list[Peer], protocol: str) -> None:
    s = run.settings
    for index, size in enumerate(s.join_sizes):
        label = (
            f"join ({protocol} protocol): {size} member{'s' * (size > 1)}, "
            "first subscribe to all assigned"
        )
        runs: dict[str, list[JoinResult]] = {}
        for repeat in range(s.join_repeats[size]):
            for peer in peers_in_order(peers, index + repeat):
                topic = topic_name(f"join{size}")
                sink = ErrorSink()
                result = JoinResult(members=size)
                try:
                    peer.create_topic(topic, size)
                    members: list[Member] = []
                    with CpuMeter(peer.pid) as cpu:
                        members = join_group(peer.bootstrap, topic, size, sink, result, protocol)
                    cpu.record(result)
                    if result.seconds is None:
                        assigned = sum(1 for m in members if m.assigned)
                        run.problems.append(
                            f"{peer.name} {label}: only {assigned}/{size} members assigned "
                            f"after {JOIN_TIMEOUT:.0f}s"
                        )
                    result.close_seconds = close_members(members)
                    result.client_errors = sink.errors
                    runs.setdefault(peer.name, []).append(result)
                    peer.delete_topic(topic)
                    check_peer(run, peer, label)
                except (KafkaException, RuntimeError) as exc:
                    run.problems.append(f"{peer.name} {label}: {exc}")
                print(
                    f"    {peer.name} {size} members: "
                    + ("failed" if result.seconds is None else f"{result.seconds * 1000:.0f} ms")
                    + f" ({result.rebalances_seen} assignments; close {result.close_seconds:.1f}s)",
                    flush=True,
                )
        medians: dict[str, float] = {}
        for name, results in runs.items():
            times = [r.seconds for r in results if r.seconds is not None]
            if times and len(times) == len(results):
                medians[name] = statistics.median(times) * 1000

        if s.join_repeats[size] > 1:
            label += f", median of {s.join_repeats[size]}"

        def text(name: str, runs: Any = runs, medians: Any = medians) -> str:
            return join_text(runs.get(name), medians.get(name))

        details = {name: [asdict(r) for r in results] for name, results in runs.items()}
        run.rows.append(peer_row(label, "ms", "lower", medians.get, text, details))


def run_single_joins(run: Run, peers: list[Peer]) -> None:
    """Per protocol and peer: `single_joins` one-member groups in a row, each joined by a
    new consumer and left again; the median join and the broker's CPU per join."""
    count = run.settings.single_joins
    for index, protocol in enumerate(PROTOCOL_CONFIG):
        times: dict[str, list[float]] = {}
        per_join: dict[str, tuple[float, float]] = {}
        for peer in peers_in_order(peers, index):
            topic = topic_name("join1")
            sink = ErrorSink()
            try:
                peer.create_topic(topic, 1)
                with CpuMeter(peer.pid) as cpu:
                    for _ in range(count):
                        result = JoinResult(members=1)
                        close_members(join_group(peer.bootstrap, topic, 1, sink, result, protocol))
                        if result.seconds is None:
                            raise RuntimeError(f"not assigned within {JOIN_TIMEOUT:.0f}s")
                        times.setdefault(peer.name, []).append(result.seconds * 1000)
                per_join[peer.name] = (cpu.broker_seconds, count)
                peer.delete_topic(topic)
                check_peer(run, peer, f"one-member joins ({protocol})")
            except (KafkaException, RuntimeError) as exc:
                times.pop(peer.name, None)
                run.problems.append(f"{peer.name} one-member joins ({protocol}): {exc}")
            done = times.get(peer.name)
            median = f"median {statistics.median(done):.1f} ms" if done else "failed"
            print(f"    {peer.name} {protocol}: {median}", flush=True)
        medians = {name: statistics.median(runs) for name, runs in times.items()}
        case = (
            f"join ({protocol} protocol): 1 member, subscribe to assigned, median of {count} "
            "new groups in a row"
        )
        run.rows.append(value_row(case, "ms", "lower", medians, "{:.1f} ms", details=times))
        case = "  broker CPU per one-member group: consumer connects, joins, is assigned, leaves"
        run.rows.append(cpu_per_op_row(case, per_join))


def join_text(results: list[JoinResult] | None, median_ms: float | None) -> str:
    if results is None:
        return "n/a"
    if median_ms is None:
        return "failed"
    spread = ", ".join(f"{r.seconds * 1000:.0f}" for r in results if r.seconds is not None)
    assigns = statistics.median(r.rebalances_seen for r in results)
    cpu = statistics.median(r.broker_cpu_pct for r in results)
    return f"{median_ms:.0f} ms (runs: {spread}; {assigns:.0f} on_assign; broker CPU {cpu:.0f}%)"


# --------------------------------------------------------------------------- commits


@dataclass
class CommitResult:
    members: int
    commits: int = 0
    errors: int = 0
    first_error: str | None = None
    seconds: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    join_seconds: float | None = None
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    broker_cpu_s: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0

    @property
    def per_second(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0


def commit_loop(peer: Peer, topic: str, count: int, seconds: float) -> CommitResult:
    sink = ErrorSink()
    result = CommitResult(members=count)
    join = JoinResult(members=count)
    members = join_group(peer.bootstrap, topic, count, sink, join, "classic")
    result.join_seconds = join.seconds
    if join.seconds is None:
        close_members(members)
        raise RuntimeError(f"{count} members not assigned within {JOIN_TIMEOUT:.0f}s")
    latencies: list[list[float]] = [[] for _ in members]
    errors = [0] * count
    first_errors: list[str | None] = [None] * count
    start = threading.Barrier(count + 1)
    deadline = 0.0

    def work(i: int) -> None:
        consumer = members[i].consumer
        partitions = [TopicPartition(topic, tp.partition) for tp in consumer.assignment()]
        offset = 0
        own = latencies[i]
        start.wait()
        while time.perf_counter() < deadline:
            offset += 1
            for tp in partitions:
                tp.offset = offset
            sent = time.perf_counter()
            try:
                consumer.commit(offsets=partitions, asynchronous=False)
            except KafkaException as exc:
                errors[i] += 1
                first_errors[i] = first_errors[i] or str(exc)
                time.sleep(0.01)
                continue
            own.append((time.perf_counter() - sent) * 1000)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    with CpuMeter(peer.pid) as cpu:
        began = time.perf_counter()
        deadline = began + seconds
        start.wait()
        for thread in threads:
            thread.join(seconds + 30)
        result.seconds = time.perf_counter() - began
    cpu.record(result)
    close_members(members)
    every = [v for own in latencies for v in own]
    result.commits = len(every)
    result.p50_ms = percentile(every, 50)
    result.p99_ms = percentile(every, 99)
    result.errors = sum(errors)
    result.first_error = next((e for e in first_errors if e), None)
    result.client_errors = sink.errors
    return result


def run_commit_cases(run: Run, peers: list[Peer]) -> None:
    s = run.settings
    count = s.commit_members
    label = (
        f"offset commits/s: {count} members of one group, sync commit loop, {s.commit_seconds:g} s"
    )
    results: dict[str, CommitResult] = {}
    for peer in peers:
        topic = topic_name("commit")
        try:
            peer.create_topic(topic, count)
            result = commit_loop(peer, topic, count, s.commit_seconds)
            results[peer.name] = result
            if result.errors:
                run.problems.append(
                    f"{peer.name} {label}: {result.errors} commit errors; "
                    f"first: {result.first_error}"
                )
            peer.delete_topic(topic)
            check_peer(run, peer, label)
        except (KafkaException, RuntimeError) as exc:
            run.problems.append(f"{peer.name} {label}: {exc}")
        done = results.get(peer.name)
        print(
            f"    {peer.name}: "
            + ("failed" if done is None else f"{done.per_second:.0f} commits/s"),
            flush=True,
        )

    def value(name: str) -> float | None:
        result = results.get(name)
        return result.per_second if result is not None and result.commits else None

    def text(name: str) -> str:
        result = results.get(name)
        if result is None or not result.commits:
            return "failed"
        return (
            f"{result.per_second:.0f}/s (p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms; "
            f"CPU {result.broker_cpu_pct:.0f}%/{result.client_cpu_pct:.0f}%)"
        )

    details = {name: asdict(r) for name, r in results.items()}
    run.rows.append(peer_row(label, "commits/s", "higher", value, text, details))
    for quantile in ("p50", "p99"):
        values = {
            name: float(getattr(r, f"{quantile}_ms")) for name, r in results.items() if r.commits
        }
        case = f"offset commit latency (same loop): {quantile}"
        run.rows.append(value_row(case, "ms", "lower", values, "{:.2f} ms"))
    cpu = {name: (r.broker_cpu_s, r.commits) for name, r in results.items() if r.commits}
    run.rows.append(cpu_per_op_row("broker CPU per offset commit (same loop)", cpu))


# --------------------------------------------------------------------------- main


def start(run: Run, peers: list[Peer]) -> None:
    """Odradek with ODRADEK_OVERRIDES, the mock with an initial rebalance delay of 0,
    Kafka with KAFKA_SETTINGS."""
    peers.append(OdradekPeer(run.python, run.workdir, overrides=ODRADEK_OVERRIDES))
    mock = MockPeer(run.python, run.workdir)
    peers.append(mock)
    mock.set_rebalance_delay(0)
    mock.set_consumer_heartbeat_interval(CONSUMER_HEARTBEAT_MS)
    start_kafka(run, peers, KAFKA_SETTINGS)


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__).parse_args(argv)
    run = start_run(Settings.make(args.quick), "group", "odradek-bench-groups-")
    steps: list[tuple[str, Step]] = [
        ("memory per group", run_memory_case),
        ("one-member joins", run_single_joins),
        ("join", run_join_cases),
        ("offset commits", run_commit_cases),
    ]
    findings = run_steps(run, start, steps)
    notes = [
        "ratio > 1 means Odradek is better: other/Odradek for times, latencies, CPU and "
        "memory, Odradek/other for rates. CPU: broker process / client process, % of one core.",
        "Odradek: --override group.initial.rebalance.delay.ms=0 (Kafka: the same setting); "
        "mock: rd_kafka_mock_group_initial_rebalance_delay_ms(0) (its default is 3000 ms).",
        "Consumers: confluent-kafka with session.timeout.ms=6000, heartbeat.interval.ms=2000, "
        "other settings default (eager range,roundrobin assignor), all in this process, "
        "polled round-robin from one thread. Members that joined earlier learn of a new "
        "rebalance from a heartbeat, so a join that takes more than one generation includes "
        "heartbeat waits on every peer: with delay 0 the first member may get a generation of "
        "its own, and the others then wait for its next heartbeat (2 s), so Odradek's runs are "
        "either a few ms or about 2 s (see 'runs'); the median is of an odd number. "
        "The mock elects a leader for a group that already has "
        "members only when its timer of session.timeout.ms - 1000 ms (5 s here) fires, not when "
        "all members have rejoined, so its multi-member join times mostly measure that timer.",
        "Consumer protocol (KIP-848): confluent-kafka with group.protocol=consumer, the "
        "broker's uniform assignor; every peer gives members a heartbeat interval of "
        f"{CONSUMER_HEARTBEAT_MS} ms (Odradek and Kafka: group.consumer.heartbeat.interval.ms; "
        "mock: rd_kafka_mock_set_group_consumer_heartbeat_interval_ms), since members learn "
        "of a new target assignment only at their next heartbeat.",
    ]
    report(
        run,
        name="groups",
        notes=notes,
        findings=findings,
        settings=asdict(run.settings)
        | {"odradek_overrides": ODRADEK_OVERRIDES, "kafka_settings": KAFKA_SETTINGS},
    )
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
