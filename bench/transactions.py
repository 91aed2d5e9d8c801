"""Transactions benchmark: Odradek beside Apache Kafka 4.4 and librdkafka's mock cluster.

Run from the repository root: `.venv/bin/python -m bench.transactions [--quick]`.
The three peers run in child processes (bench/peers.py hosts them; Kafka as the test
rig starts it, bench/reference_kafka.py); every client is confluent-kafka (librdkafka)
in this process, one transactional producer at a time, but for the Java client rows
(transactions version 2, bench/transactions_java.py).

- transactions/s, 1 partition: begin, 10 records of 100 B, commit_transaction(),
  in a loop for a fixed time after a few untimed warm-up transactions.
- transactions/s, 8 partitions + offsets: the same with the 10 records spread
  round-robin over 8 partitions and send_offsets_to_transaction() (8 partitions of
  an input topic, consumer group metadata of a non-subscribed consumer) in each
  transaction.
- commit latency p50/p99: the time commit_transaction() takes in those loops.
- consume: a 4-partition topic filled by transactions (100 records of 1 KB each,
  committed) read with isolation.level=read_committed, beside one filled without
  transactions (same records) read with read_uncommitted; assign() from the low
  watermark up to the last record, repeated passes for a fixed time after one
  untimed pass (the mock keeps about 5 MiB per partition, so the fill stays below).

The broker's CPU (process CPU from /proc; Kafka's whole JVM) is divided by the
transactions, and by the MB read in the consume cases. Ratios: >1 means Odradek is better.
"""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from bench.clients import Rates, read_pass
from bench.peers import (
    CpuMeter,
    ErrorSink,
    Peer,
    client_config,
    payloads,
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
    start_peers,
    start_run,
    topic_name,
    value_row,
)
from bench.transaction_cases import Case, run_cases
from bench.transactions_java import JAVA_NOTE, Loop, run_java_txn_cases

RECORDS_PER_TXN = 10
TXN_VALUE_SIZE = 100
CONSUME_PARTITIONS = 4
CONSUME_VALUE_SIZE = 1000
CONSUME_PER_PARTITION = 4000  # 4 MB per partition: under the mock's ~5 MiB retention
CONSUME_TXN_RECORDS = 100
WARMUP_TXNS = 5


@dataclass(frozen=True)
class Settings:
    quick: bool
    txn_seconds: float
    consume_seconds: float
    warmup_seconds: float

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(quick, 3.0, 1.5, 1.5)
        return cls(quick, 12.0, 5.0, 10.0)


# --------------------------------------------------------------------------- transactions


@dataclass
class TxnResult:
    transactions: int = 0
    records: int = 0
    seconds: float = 0.0
    init_ms: float = 0.0
    commit_p50_ms: float = 0.0
    commit_p99_ms: float = 0.0
    commit_max_ms: float = 0.0
    txn_p50_ms: float = 0.0
    failed_transactions: int = 0
    delivery_errors: int = 0
    first_error: str | None = None
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    broker_cpu_s: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0

    @property
    def per_second(self) -> float:
        return self.transactions / self.seconds if self.seconds else 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


class DeliveryLog:
    """Delivery callback: counts errors, keeps the last delivered offset per partition."""

    def __init__(self) -> None:
        self.errors = 0
        self.first_error: str | None = None
        self.last_offset: dict[int, int] = {}
        self.delivered = 0

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors += 1
            self.first_error = self.first_error or str(error)
            return
        self.delivered += 1
        partition, offset = message.partition(), message.offset()
        if partition is not None and offset is not None:
            self.last_offset[partition] = max(self.last_offset.get(partition, -1), offset)


def transactional_producer(bootstrap: str, sink: ErrorSink, deliveries: DeliveryLog) -> Producer:
    return Producer(
        client_config(
            bootstrap,
            sink,
            **{
                "transactional.id": f"bench-txn-{uuid.uuid4().hex[:10]}",
                "on_delivery": deliveries,
                "message.timeout.ms": 30000,
            },
        )
    )


def run_transactions(
    bootstrap: str,
    topic: str,
    partitions: int,
    seconds: float,
    offsets_topic: str | None,
) -> TxnResult:
    """begin / 10 x produce / [send_offsets] / commit, in a loop for `seconds`."""
    sink = ErrorSink()
    deliveries = DeliveryLog()
    result = TxnResult()
    producer = transactional_producer(bootstrap, sink, deliveries)
    consumer: Consumer | None = None
    group_metadata: Any = None
    if offsets_topic is not None:
        consumer = Consumer(
            client_config(
                bootstrap,
                sink,
                **{
                    "group.id": f"bench-txn-group-{uuid.uuid4().hex[:8]}",
                    "enable.auto.commit": False,
                },
            )
        )
        group_metadata = consumer.consumer_group_metadata()
    values = payloads(TXN_VALUE_SIZE)
    commit_ms: list[float] = []
    txn_ms: list[float] = []
    sequence = 0
    try:
        started = time.perf_counter()
        producer.init_transactions(30)
        result.init_ms = (time.perf_counter() - started) * 1000

        def one_transaction(timed: bool) -> None:
            nonlocal sequence
            began = time.perf_counter()
            producer.begin_transaction()
            for i in range(RECORDS_PER_TXN):
                producer.produce(topic, values[i & 15], partition=(sequence + i) % partitions)
            sequence += RECORDS_PER_TXN
            if offsets_topic is not None:
                offsets = [TopicPartition(offsets_topic, p, sequence) for p in range(8)]
                producer.send_offsets_to_transaction(offsets, group_metadata, 30)
            committing = time.perf_counter()
            producer.commit_transaction(30)
            done = time.perf_counter()
            if timed:
                commit_ms.append((done - committing) * 1000)
                txn_ms.append((done - began) * 1000)

        for _ in range(WARMUP_TXNS):
            one_transaction(False)
        started = time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline:
            try:
                one_transaction(True)
            except KafkaException as exc:
                result.failed_transactions += 1
                error = exc.args[0] if exc.args else None
                result.first_error = result.first_error or str(exc)
                if isinstance(error, KafkaError) and error.fatal():
                    break
                if isinstance(error, KafkaError) and error.txn_requires_abort():
                    producer.abort_transaction(30)
                elif not (isinstance(error, KafkaError) and error.retriable()):
                    break
        result.seconds = time.perf_counter() - started
    finally:
        if consumer is not None:
            consumer.close()
        producer.flush(10)
    result.transactions = len(commit_ms)
    result.records = result.transactions * RECORDS_PER_TXN
    result.commit_p50_ms = percentile(commit_ms, 50)
    result.commit_p99_ms = percentile(commit_ms, 99)
    result.commit_max_ms = max(commit_ms, default=float("nan"))
    result.txn_p50_ms = percentile(txn_ms, 50)
    result.delivery_errors = deliveries.errors
    if deliveries.first_error:
        result.first_error = result.first_error or deliveries.first_error
    result.client_errors = sink.errors
    return result


def warm_up(run: Run, peers: list[Peer]) -> None:
    """Untimed transactions with offsets on every peer: Kafka creates its transaction
    and offsets topics at their first use, and the JVM compiles its hot paths."""
    for peer in peers:
        topic, source = topic_name("warm"), topic_name("warm-in")
        try:
            peer.create_topic(topic, 8)
            peer.create_topic(source, 8)
            result = run_transactions(peer.bootstrap, topic, 8, run.settings.warmup_seconds, source)
            if not result.transactions:
                run.problems.append(f"{peer.name} warm-up: {result.first_error}")
            peer.delete_topic(topic)
            peer.delete_topic(source)
        except (KafkaException, RuntimeError) as exc:
            run.problems.append(f"{peer.name} warm-up: {exc}")


def run_txn_cases(run: Run, peers: list[Peer]) -> None:
    cases: list[Case] = [
        (1, False, f"transactions/s: 1 partition, {RECORDS_PER_TXN} x {TXN_VALUE_SIZE} B per txn"),
        (
            8,
            True,
            f"transactions/s: 8 partitions, {RECORDS_PER_TXN} x {TXN_VALUE_SIZE} B "
            "+ send_offsets_to_transaction (8 partitions) per txn",
        ),
    ]
    run_cases(
        run, peers, cases, run_transactions, "txn", add_txn_rows, (KafkaException, RuntimeError)
    )


def add_txn_rows(
    run: Run, label: str, results: dict[str, TxnResult], failures: dict[str, str]
) -> None:
    """The transactions/s row and its commit latency rows."""

    def text(name: str, value: str) -> str:
        if name in failures:
            return f"n/a ({failures[name][:120]})"
        return value if name in results else "n/a"

    def rate_text(name: str) -> str:
        return text(name, txn_text(results.get(name)))

    rates = {name: r.per_second for name, r in results.items()}
    details = {name: asdict(r) for name, r in results.items()} | {"failures": failures}
    run.rows.append(peer_row(label, "txn/s", "higher", rates.get, rate_text, details))
    for quantile in ("p50", "p99"):
        values = {n: float(getattr(r, f"commit_{quantile}_ms")) for n, r in results.items()}

        def latency_text(name: str, values: dict[str, float] = values) -> str:
            return text(name, f"{values.get(name, 0):.2f} ms")

        case = f"  commit_transaction() latency {quantile} (same loop)"
        run.rows.append(peer_row(case, "ms", "lower", values.get, latency_text))
    cpu = {n: (r.broker_cpu_s, r.transactions) for n, r in results.items() if r.transactions}
    run.rows.append(cpu_per_op_row("  broker CPU per transaction (warm-up included)", cpu))


def txn_text(result: TxnResult | None) -> str:
    if result is None:
        return "n/a"
    return (
        f"{result.per_second:.0f} txn/s ({result.records_per_s:.0f} rec/s; whole txn p50 "
        f"{result.txn_p50_ms:.1f} ms; CPU {result.broker_cpu_pct:.0f}%/"
        f"{result.client_cpu_pct:.0f}%)"
    )


# --------------------------------------------------------------------------- consume


@dataclass
class FillResult:
    records: int = 0
    transactions: int = 0
    seconds: float = 0.0
    errors: int = 0
    first_error: str | None = None
    last_offset: dict[int, int] = field(default_factory=dict)


def fill(bootstrap: str, topic: str, transactional: bool) -> FillResult:
    """CONSUME_PER_PARTITION records of 1 KB per partition, round-robin; in transactions
    of CONSUME_TXN_RECORDS records, or with a plain idempotent producer."""
    sink = ErrorSink()
    deliveries = DeliveryLog()
    result = FillResult()
    values = payloads(CONSUME_VALUE_SIZE)
    total = CONSUME_PER_PARTITION * CONSUME_PARTITIONS
    started = time.perf_counter()
    if transactional:
        producer = transactional_producer(bootstrap, sink, deliveries)
        producer.init_transactions(30)
        for first in range(0, total, CONSUME_TXN_RECORDS):
            producer.begin_transaction()
            for i in range(first, min(total, first + CONSUME_TXN_RECORDS)):
                producer.produce(topic, values[i & 15], partition=i % CONSUME_PARTITIONS)
            producer.commit_transaction(60)
            result.transactions += 1
    else:
        producer = Producer(
            client_config(
                bootstrap,
                sink,
                **{"enable.idempotence": True, "linger.ms": 5, "on_delivery": deliveries},
            )
        )
        for i in range(total):
            while True:
                try:
                    producer.produce(topic, values[i & 15], partition=i % CONSUME_PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.01)
            if i & 1023 == 0:
                producer.poll(0)
    producer.flush(60)
    result.seconds = time.perf_counter() - started
    result.records = deliveries.delivered
    result.errors = deliveries.errors
    result.first_error = deliveries.first_error
    result.last_offset = dict(deliveries.last_offset)
    return result


@dataclass
class ConsumeResult(Rates):
    isolation: str
    records: int = 0
    value_bytes: int = 0
    seconds: float = 0.0
    passes: int = 0
    available_records: int = 0
    errors: int = 0
    first_error: str | None = None
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    broker_cpu_s: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0


def consume(
    bootstrap: str, topic: str, last_offset: dict[int, int], isolation: str, seconds: float
) -> ConsumeResult:
    """assign() from the low watermark, read to each partition's last record, in passes.

    The end of a pass is the last record's offset (from the fill's delivery reports),
    not the high watermark: a transactional partition ends with a commit marker that
    a consumer never sees.
    """
    sink = ErrorSink()
    result = ConsumeResult(isolation=isolation)
    consumer = Consumer(
        client_config(
            bootstrap,
            sink,
            **{
                "group.id": f"bench-read-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "isolation.level": isolation,
                "fetch.wait.max.ms": 10,
                "fetch.queue.backoff.ms": 10,
            },
        )
    )
    try:
        partitions = sorted(last_offset)
        lows = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[0]
            for p in partitions
        }
        wanted_total = 0

        ends = {p: last_offset[p] + 1 for p in partitions}

        def one_pass() -> tuple[int, int]:
            return read_pass(consumer, topic, lows, ends, result, wanted_total)

        result.available_records, _ = one_pass()  # untimed: warms up both sides
        wanted_total = result.available_records
        started = time.perf_counter()
        while result.passes == 0 or time.perf_counter() - started < seconds:
            records, value_bytes = one_pass()
            result.records += records
            result.value_bytes += value_bytes
            result.passes += 1
        result.seconds = time.perf_counter() - started
    finally:
        consumer.close()
        result.client_errors = sink.errors
    return result


def run_consume_cases(run: Run, peers: list[Peer]) -> None:
    s = run.settings
    cases = [
        (True, "read_committed", "transactions of 100"),
        (False, "read_uncommitted", "no transactions"),
    ]
    per_peer: dict[str, dict[str, ConsumeResult]] = {}
    for index, (transactional, isolation, how) in enumerate(cases):
        label = (
            f"consume {isolation}: {CONSUME_PARTITIONS} partitions x "
            f"{CONSUME_PER_PARTITION // 1000}k records of 1 KB, filled by {how}"
        )
        results: dict[str, ConsumeResult] = {}
        failures: dict[str, str] = {}
        for peer in peers_in_order(peers, index):
            topic = topic_name("txn-read" if transactional else "plain-read")
            try:
                peer.create_topic(topic, CONSUME_PARTITIONS)
                filled = fill(peer.bootstrap, topic, transactional)
                expected = CONSUME_PER_PARTITION * CONSUME_PARTITIONS
                if filled.records != expected or filled.errors:
                    run.problems.append(
                        f"{peer.name} {label}: fill delivered {filled.records} of {expected} "
                        f"({filled.errors} errors; {filled.first_error})"
                    )
                with CpuMeter(peer.pid) as cpu:
                    result = consume(
                        peer.bootstrap, topic, filled.last_offset, isolation, s.consume_seconds
                    )
                cpu.record(result)
                if result.errors:
                    run.problems.append(
                        f"{peer.name} {label}: {result.errors} consume errors: {result.first_error}"
                    )
                if result.available_records != filled.records:
                    run.problems.append(
                        f"{peer.name} {label}: a pass read {result.available_records} records, "
                        f"{filled.records} were written"
                    )
                results[peer.name] = result
                per_peer.setdefault(peer.name, {})[isolation] = result
                peer.delete_topic(topic)
                check_peer(run, peer, label)
            except (KafkaException, RuntimeError) as exc:
                failures[peer.name] = str(exc)
                run.problems.append(f"{peer.name} {label}: {exc}")
            done = results.get(peer.name)
            print(
                f"    {peer.name} {isolation}: "
                + (f"{done.mb_per_s:.1f} MB/s" if done else f"failed ({failures[peer.name]})"),
                flush=True,
            )

        def text(name: str, results: Any = results, failures: Any = failures) -> str:
            result = results.get(name)
            if result is None:
                return f"n/a ({failures[name][:120]})" if name in failures else "n/a"
            return (
                f"{result.mb_per_s:.1f} MB/s, {result.records_per_s / 1000:.0f}k rec/s "
                f"({result.passes} passes; CPU {result.broker_cpu_pct:.0f}%/"
                f"{result.client_cpu_pct:.0f}%)"
            )

        rates = {name: r.mb_per_s for name, r in results.items()}
        details = {name: asdict(r) for name, r in results.items()} | {"failures": failures}
        run.rows.append(peer_row(label, "MB/s", "higher", rates.get, text, details))
        per_mb = {n: (r.broker_cpu_s, r.value_bytes / 1e6) for n, r in results.items() if r.records}
        case = "  broker CPU per MB (same case)"
        run.rows.append(cpu_per_op_row(case, per_mb, "ms/MB", 1e3, "{:.2f} ms"))
    shares: dict[str, float] = {}
    for name, by_isolation in per_peer.items():
        committed = by_isolation.get("read_committed")
        plain = by_isolation.get("read_uncommitted")
        if committed and plain and plain.mb_per_s:
            shares[name] = committed.mb_per_s / plain.mb_per_s
    case = "  read_committed (txn data) / read_uncommitted (plain data) throughput"
    run.rows.append(value_row(case, "fraction", "higher", shares, "{:.2f}", "n/a"))


# --------------------------------------------------------------------------- main


JAVA_LOOP = Loop(RECORDS_PER_TXN, TXN_VALUE_SIZE, WARMUP_TXNS, TxnResult, add_txn_rows)


def start(run: Run, peers: list[Peer]) -> None:
    start_peers(run, peers)
    start_kafka(run, peers)


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--only", help="after the warm-up, only the steps whose name has this")
    args = parser.parse_args(argv)
    settings = Settings.make(args.quick)
    run = start_run(settings, "transactions", "odradek-bench-txn-")
    steps: list[tuple[str, Step]] = [
        ("warm-up", warm_up),
        ("transactions", run_txn_cases),
        ("transactions, Java client (v2)", partial(run_java_txn_cases, loop=JAVA_LOOP)),
        ("consume", run_consume_cases),
    ]
    if args.only:
        steps = [steps[0], *(step for step in steps[1:] if args.only in step[0])]
    findings = run_steps(run, start, steps)
    notes = [
        "ratio > 1 means Odradek is better: Odradek/other for rates and throughput, "
        "other/Odradek for latency and CPU. CPU: broker process / client process, % of one core. "
        "MB = 10^6 bytes of record values.",
        f"transactions: one confluent-kafka transactional producer (librdkafka defaults, "
        f"linger.ms=5; commit_transaction flushes), after {settings.warmup_seconds:g} s of "
        f"untimed transactions on every peer; {WARMUP_TXNS} untimed warm-up "
        f"transactions, then {settings.txn_seconds:g} s; consume: {settings.consume_seconds:g} s "
        "of passes after one untimed pass.",
        JAVA_NOTE,
        "consume rows: the single consumer (client CPU column) is the bottleneck, not the "
        "broker, so they show that read_committed costs no throughput here rather than "
        "which broker serves fetches faster.",
    ]
    report(run, name="transactions", notes=notes, findings=findings)
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
