"""Share-group benchmark: share consumers beside classic consumer groups on one Odradek.

Run from the repository root:

    .venv/bin/python -m bench.share_groups [--quick]

librdkafka's mock serves no share groups, so the yardstick is a classic consumer group
reading the same topic from the same broker in the same run. Every member is a
confluent-kafka (librdkafka) consumer in a process of its own, started together.

- Records: 1 KB values, produced before the cases run (1,000,000; 200,000 with
  --quick) to one topic of 1 partition and one of 4.
- Share members: `ShareConsumer` with implicit acknowledgement (each poll accepts the
  previous poll's records), the group set to `share.auto.offset.reset=earliest`; the
  broker runs with `group.share.heartbeat.interval.ms=200` so that members learn their
  assignment quickly.
- Classic members: `Consumer` subscribed with `auto.offset.reset=earliest`, auto
  commit on (its default), `fetch.queue.backoff.ms=10`.
- Steady state is measured: from the moment every member has received records to the
  moment every record has arrived (joins are left out). CPU (the broker process from
  /proc, the member processes, the rest of the machine) over the same window; broker
  CPU per record from it. Every record must arrive, and arrive once.

Columns: share group and classic group; ratio = share / classic (>1: share is faster),
target >= 0.5 with one member. The last row compares 4 share members with 1 on the
4-partition topic (target >= 1.5).
"""

from __future__ import annotations

import array
import contextlib
import multiprocessing
import queue
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from bench.peers import (
    ErrorSink,
    OdradekPeer,
    Peer,
    client_config,
    machine_busy_seconds,
    process_cpu_seconds,
)
from bench.report import (
    Row,
    Run,
    Step,
    arg_parser,
    check_peer,
    remove_workdir,
    report,
    run_steps,
    start_run,
    topic_name,
)

VALUE_SIZE = 1024
# Share members learn of a new assignment at their next heartbeat (5 s by default): the
# members of a case join within a few hundred ms of each other and should all be
# reading well before the records run out.
ODRADEK_OVERRIDES = {
    "group.share.heartbeat.interval.ms": "200",
    "group.share.min.heartbeat.interval.ms": "100",
}
CASE_TIMEOUT = 120.0


@dataclass(frozen=True)
class Settings:
    quick: bool
    records: int
    repeats: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        return cls(quick, 200_000, 1) if quick else cls(quick, 1_000_000, 3)


@dataclass
class ReadResult:
    kind: str
    members: int
    partitions: int
    records: int = 0
    measured_records: int = 0  # those received once every member was reading
    duplicates: int = 0
    seconds: float = 0.0
    broker_cpu_s: float = 0.0
    broker_cpu_pct: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0
    per_member: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.measured_records / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_record(self) -> float:
        return 1e6 * self.broker_cpu_s / self.measured_records if self.measured_records else 0.0


@dataclass(frozen=True)
class Snapshot:
    """Wall clock and CPU seconds (the broker, the member processes, the whole machine)."""

    wall: float
    broker: float
    clients: float
    machine: float

    @classmethod
    def take(cls, broker_pid: int, member_pids: list[int]) -> Snapshot:
        return cls(
            time.monotonic(),
            process_cpu_seconds(broker_pid),
            sum(process_cpu_seconds(pid) for pid in member_pids),
            machine_busy_seconds(),
        )


def produce_records(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    producer = Producer(
        client_config(bootstrap, ErrorSink(), **{"linger.ms": 20, "batch.size": 1_000_000})
    )
    value = b"v" * VALUE_SIZE
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60) != 0:
        raise RuntimeError(f"records of {topic} not delivered")


def earliest_share_group(bootstrap: str, group: str) -> None:
    admin = AdminClient(client_config(bootstrap, ErrorSink()))
    entry = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)


def make_member(kind: str, bootstrap: str, group: str, topic: str, sink: ErrorSink) -> Any:
    if kind == "share":
        consumer: Any = ShareConsumer(client_config(bootstrap, sink, **{"group.id": group}))
    else:
        settings = {
            "group.id": group,
            "auto.offset.reset": "earliest",
            # past queued.min.messages librdkafka pauses fetching for this long (1000 ms
            # by default): a pause in a run of a second
            "fetch.queue.backoff.ms": 10,
        }
        consumer = Consumer(client_config(bootstrap, sink, **settings))
    consumer.subscribe([topic])
    return consumer


@dataclass
class Shared:
    """What the member processes and this one share: the records received so far, how
    many members have received any, a start signal and a stop signal."""

    received: Any
    members_reading: Any
    go: Any
    stop: Any
    results: Any

    @classmethod
    def make(cls, context: Any) -> Shared:
        return cls(
            context.Value("q", 0),
            context.Value("q", 0),
            context.Event(),
            context.Event(),
            context.Queue(),
        )


def member_main(kind: str, bootstrap: str, group: str, topic: str, shared: Shared) -> None:
    """One member in a process of its own (so that members do not share one GIL):
    counts what it receives, until told to stop; then reports its offsets."""
    sink = ErrorSink()
    shared.go.wait(60)
    consumer = make_member(kind, bootstrap, group, topic, sink)
    offsets: dict[int, array.array[int]] = {}
    errors: list[str] = []
    reading = False
    deadline = time.monotonic() + CASE_TIMEOUT
    while not shared.stop.is_set() and time.monotonic() < deadline:
        try:
            batch = (
                consumer.poll(0.2)
                if kind == "share"
                else consumer.consume(num_messages=10_000, timeout=0.2)
            )
        except KafkaException as exc:
            errors.append(str(exc))
            continue
        count = 0
        for message in batch:
            if message.error() is not None:
                errors.append(str(message.error()))
                continue
            partition = message.partition()
            if partition not in offsets:
                offsets[partition] = array.array("q")
            offsets[partition].append(message.offset())
            count += 1
        if count:
            with shared.received.get_lock():
                shared.received.value += count
                if not reading:
                    shared.members_reading.value += 1
            reading = True
    consumer.close()
    shared.results.put(({p: a.tobytes() for p, a in offsets.items()}, errors[:5] + sink.errors[:5]))


def read_all(
    peer: Peer, kind: str, topic: str, partitions: int, members: int, records: int
) -> ReadResult:
    """`members` of a new group, each in its own process, read `topic` until every
    record has arrived. The rate is that of steady state: from the moment every member
    has received records to the last record."""
    group = f"bench-{kind}-{uuid.uuid4().hex[:8]}"
    if kind == "share":
        earliest_share_group(peer.bootstrap, group)
    context = multiprocessing.get_context("spawn")
    shared = Shared.make(context)
    processes = [
        context.Process(
            target=member_main, args=(kind, peer.bootstrap, group, topic, shared), daemon=True
        )
        for _ in range(members)
    ]
    for process in processes:
        process.start()
    pids = [p.pid for p in processes if p.pid is not None]
    first = last = None
    first_count = 0
    shared.go.set()
    deadline = time.monotonic() + CASE_TIMEOUT
    while time.monotonic() < deadline:
        if first is None and shared.members_reading.value == members:
            first = Snapshot.take(peer.pid, pids)
            first_count = shared.received.value
        if shared.received.value >= records:
            last = Snapshot.take(peer.pid, pids)
            break
        if not all(process.is_alive() for process in processes):
            break
        time.sleep(0.001)
    shared.stop.set()
    reports = []
    for process in processes:
        with contextlib.suppress(queue.Empty):
            reports.append(shared.results.get(timeout=60 if process.is_alive() else 1))
    for process in processes:
        process.join(30)
    result = ReadResult(kind, members, partitions)
    seen: set[tuple[int, int]] = set()
    for offsets, errors in reports:
        result.errors += errors
        got = 0
        for partition, raw in offsets.items():
            values = array.array("q")
            values.frombytes(raw)
            seen.update((partition, offset) for offset in values)
            got += len(values)
        result.per_member.append(got)
    if first is None or last is None or len(seen) < records:
        raise RuntimeError(f"{kind} x{members}: {len(seen)} of {records} records arrived")
    result.records = len(seen)
    result.duplicates = sum(result.per_member) - len(seen)
    result.measured_records = records - first_count
    result.seconds = last.wall - first.wall
    result.broker_cpu_s = last.broker - first.broker
    if result.seconds > 0:
        result.broker_cpu_pct = 100 * result.broker_cpu_s / result.seconds
        result.client_cpu_pct = 100 * (last.clients - first.clients) / result.seconds
        machine = 100 * (last.machine - first.machine) / result.seconds
        result.other_cpu_pct = max(0.0, machine - result.broker_cpu_pct - result.client_cpu_pct)
    return result


# (label, partitions, members, kinds): a classic group of 4 members rebalances while the
# first ones read, and may be done before the last one has a partition, so it has no
# steady state to measure; its row is the share group's alone.
CASES = (
    ("1 partition, 1 member", 1, 1, ("share", "classic")),
    ("4 partitions, 1 member", 4, 1, ("share", "classic")),
    ("4 partitions, 4 members", 4, 4, ("share",)),
)


def median_of(results: list[ReadResult]) -> ReadResult:
    return sorted(results, key=lambda r: r.per_second)[len(results) // 2]


def run_cases(run: Run, peers: list[Peer]) -> None:
    s: Settings = run.settings
    peer = peers[0]
    topics = {}
    for partitions in (1, 4):
        topic = topic_name(f"share-{partitions}p")
        peer.create_topic(topic, partitions)
        produce_records(peer.bootstrap, topic, partitions, s.records)
        topics[partitions] = topic
    share_rates: dict[str, ReadResult] = {}
    for label, partitions, members, kinds in CASES:
        runs: dict[str, list[ReadResult]] = {kind: [] for kind in kinds}
        for repeat in range(s.repeats):
            for kind in kinds if repeat % 2 == 0 else tuple(reversed(kinds)):
                got = read_all(peer, kind, topics[partitions], partitions, members, s.records)
                runs[kind].append(got)
                if got.errors:
                    run.problems.append(f"{kind} {label}: {got.errors[:3]}")
                if got.duplicates:
                    run.problems.append(f"{kind} {label}: {got.duplicates} records twice")
                print(f"    {label} {kind}: {rate_text(got)}", flush=True)
                check_peer(run, peer, label)
        share = share_rates[label] = median_of(runs["share"])
        classic = median_of(runs["classic"]) if "classic" in runs else None
        run.rows.append(
            Row(
                case=f"1 KB records/s, {label}",
                unit="records/s",
                better="higher",
                odradek=share.per_second,
                mock=classic.per_second if classic else None,
                odradek_text=rate_text(share),
                mock_text=rate_text(classic) if classic else "",
                details={kind: [asdict(r) for r in results] for kind, results in runs.items()},
            )
        )
    one, four = share_rates["4 partitions, 1 member"], share_rates["4 partitions, 4 members"]
    scaling = four.per_second / one.per_second
    run.rows.append(
        Row(
            case="share group, 4 partitions: 4 members / 1 member (target >= 1.5)",
            unit="x",
            better="higher",
            odradek=scaling,
            mock=None,
            odradek_text=f"{scaling:.2f}x",
        )
    )


def rate_text(result: ReadResult) -> str:
    return (
        f"{result.per_second:,.0f}/s ({result.per_second * VALUE_SIZE / 1e6:.0f} MB/s; "
        f"broker {result.cpu_us_per_record:.1f} µs CPU/record; CPU % broker "
        f"{result.broker_cpu_pct:.0f}, clients {result.client_cpu_pct:.0f})"
    )


def start(run: Run, peers: list[Peer]) -> None:
    peers.append(OdradekPeer(run.python, run.workdir, overrides=ODRADEK_OVERRIDES))


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__).parse_args(argv)
    run = start_run(Settings.make(args.quick), "share-group", "odradek-bench-share-")
    steps: list[tuple[str, Step]] = [("share and classic consumption", run_cases)]
    findings = run_steps(run, start, steps)
    notes = [
        "Both columns are Odradek: a share group (implicit acknowledgement) and a classic "
        "consumer group reading the same topic in the same run; ratio = share / classic. "
        f"Median of {run.settings.repeats} runs per case, share and classic alternating "
        "which goes first. The last row compares 4 members with 1 on the 4-partition "
        "topic within each kind.",
    ]
    report(
        run,
        name="share_groups",
        notes=notes,
        findings=findings,
        ratio_meaning="share / classic for rates (>1: the share group is faster)",
        columns=("share group", "classic group"),
    )
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
