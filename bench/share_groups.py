"""Share-group benchmark: share consumers beside classic consumer groups on one Odradek.

Run from the repository root:

    .venv/bin/python -m bench.share_groups [--quick]

librdkafka's mock serves no share groups, so the yardstick is a classic consumer group
reading the same topic from the same broker in the same run. Every client is
confluent-kafka (librdkafka) in this process, each member polled from its own thread.

- Records: 1 KB values, produced before the cases run; one topic of 1 partition and
  one of 4.
- Share members: `ShareConsumer` with implicit acknowledgement (each poll accepts the
  previous poll's records), the group set to `share.auto.offset.reset=earliest`.
- Classic members: `Consumer` subscribed with `auto.offset.reset=earliest`, auto
  commit on (its default).
- A case is timed from the first record any member receives to the moment every
  record has arrived (joins are left out on both sides); records/s counts distinct
  records. Broker CPU per record comes from the broker process's CPU time (/proc) over
  the whole case, joins included.

Columns: share group and classic group; ratio = share / classic (>1: share is faster).
The row "4 share members / 1 share member" compares share rates on the 4-partition
topic (target >= 1.5); "1 share member / 1 classic consumer" on 1 partition has a
target of >= 0.5.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable
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

from bench.data_plane import (
    ErrorSink,
    OdradekPeer,
    Peer,
    Row,
    Run,
    Step,
    arg_parser,
    check_peer,
    client_config,
    process_cpu_seconds,
    remove_workdir,
    report,
    run_steps,
    start_run,
    topic_name,
)

VALUE_SIZE = 1024
CASE_TIMEOUT = 120.0


@dataclass(frozen=True)
class Settings:
    quick: bool
    records: int
    repeats: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        return cls(quick, 20_000, 1) if quick else cls(quick, 200_000, 3)


@dataclass
class ReadResult:
    kind: str
    members: int
    partitions: int
    records: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    broker_cpu_s: float = 0.0
    per_member: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    @property
    def cpu_us_per_record(self) -> float:
        return 1e6 * self.broker_cpu_s / self.records if self.records else 0.0


class Tally:
    """Distinct records seen by all members, and when the first and last arrived."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.seen: set[tuple[int, int]] = set()
        self.duplicates = 0
        self.first = 0.0
        self.last = 0.0
        self.lock = threading.Lock()
        self.done = threading.Event()

    def add(self, keys: list[tuple[int, int]]) -> None:
        now = time.perf_counter()
        with self.lock:
            if not self.first:
                self.first = now
            before = len(self.seen)
            self.seen.update(keys)
            self.duplicates += len(keys) - (len(self.seen) - before)
            if len(self.seen) >= self.expected and not self.done.is_set():
                self.last = now
                self.done.set()


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


def share_member(bootstrap: str, group: str, topic: str, sink: ErrorSink) -> Any:
    consumer = ShareConsumer(client_config(bootstrap, sink, **{"group.id": group}))
    consumer.subscribe([topic])
    return consumer


def classic_member(bootstrap: str, group: str, topic: str, sink: ErrorSink) -> Any:
    settings = {"group.id": group, "auto.offset.reset": "earliest"}
    consumer = Consumer(client_config(bootstrap, sink, **settings))
    consumer.subscribe([topic])
    return consumer


def poll_share(consumer: Any) -> list[Any]:
    return list(consumer.poll(0.5))


def poll_classic(consumer: Any) -> list[Any]:
    return list(consumer.consume(num_messages=10_000, timeout=0.5))


def read_all(
    peer: Peer, kind: str, topic: str, partitions: int, members: int, records: int
) -> ReadResult:
    """`members` of a new group read `topic` until every record has arrived."""
    sink = ErrorSink()
    group = f"bench-{kind}-{uuid.uuid4().hex[:8]}"
    make: Callable[[str, str, str, ErrorSink], Any]
    if kind == "share":
        earliest_share_group(peer.bootstrap, group)
        make, poll = share_member, poll_share
    else:
        make, poll = classic_member, poll_classic
    result = ReadResult(kind, members, partitions, per_member=[0] * members)
    tally = Tally(records)
    cpu_before = process_cpu_seconds(peer.pid)
    consumers = [make(peer.bootstrap, group, topic, sink) for _ in range(members)]

    def work(index: int) -> None:
        consumer = consumers[index]
        deadline = time.monotonic() + CASE_TIMEOUT
        while not tally.done.is_set() and time.monotonic() < deadline:
            try:
                batch = poll(consumer)
            except KafkaException as exc:
                result.errors.append(str(exc))
                continue
            keys = []
            for message in batch:
                if message.error() is not None:
                    result.errors.append(str(message.error()))
                    continue
                keys.append((message.partition(), message.offset()))
            if keys:
                result.per_member[index] += len(keys)
                tally.add(keys)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(members)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(CASE_TIMEOUT + 30)
    result.broker_cpu_s = process_cpu_seconds(peer.pid) - cpu_before
    for consumer in consumers:
        consumer.close()
    if not tally.done.is_set():
        raise RuntimeError(f"{kind} x{members}: {len(tally.seen)} of {records} records arrived")
    result.records = len(tally.seen)
    result.duplicates = tally.duplicates
    result.seconds = tally.last - tally.first
    result.errors += sink.errors
    return result


CASES = (
    ("1 partition, 1 member", 1, 1),
    ("4 partitions, 1 member", 4, 1),
    ("4 partitions, 4 members", 4, 4),
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
    measured: dict[tuple[str, str], ReadResult] = {}
    for label, partitions, members in CASES:
        runs: dict[str, list[ReadResult]] = {"share": [], "classic": []}
        for repeat in range(s.repeats):
            order = ("share", "classic") if repeat % 2 == 0 else ("classic", "share")
            for kind in order:
                got = read_all(peer, kind, topics[partitions], partitions, members, s.records)
                runs[kind].append(got)
                if got.errors:
                    run.problems.append(f"{kind} {label}: {got.errors[:3]}")
                if got.duplicates:
                    run.problems.append(f"{kind} {label}: {got.duplicates} records twice")
                print(
                    f"    {label} {kind}: {got.per_second:,.0f} rec/s, "
                    f"{got.cpu_us_per_record:.1f} µs broker CPU/record",
                    flush=True,
                )
                check_peer(run, peer, label)
        share, classic = median_of(runs["share"]), median_of(runs["classic"])
        measured[(label, "share")], measured[(label, "classic")] = share, classic
        run.rows.append(
            Row(
                case=f"1 KB records/s, {label}",
                unit="records/s",
                better="higher",
                odradek=share.per_second,
                mock=classic.per_second,
                odradek_text=rate_text(share),
                mock_text=rate_text(classic),
                details={
                    "share": [asdict(r) for r in runs["share"]],
                    "classic": [asdict(r) for r in runs["classic"]],
                },
            )
        )
    one = measured[("4 partitions, 1 member", "share")]
    four = measured[("4 partitions, 4 members", "share")]
    one_c = measured[("4 partitions, 1 member", "classic")]
    four_c = measured[("4 partitions, 4 members", "classic")]
    run.rows.append(
        Row(
            case="4 members / 1 member on 4 partitions (rate ratio)",
            unit="x",
            better="higher",
            odradek=four.per_second / one.per_second,
            mock=four_c.per_second / one_c.per_second,
            odradek_text=f"{four.per_second / one.per_second:.2f}x",
            mock_text=f"{four_c.per_second / one_c.per_second:.2f}x",
        )
    )


def rate_text(result: ReadResult) -> str:
    return (
        f"{result.per_second:,.0f}/s ({result.per_second * VALUE_SIZE / 1e6:.0f} MB/s; "
        f"broker {result.cpu_us_per_record:.1f} µs CPU/record)"
    )


def start(run: Run, peers: list[Peer]) -> None:
    peers.append(OdradekPeer(run.python, run.workdir))


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
