"""Spark connector benchmark: the ``odradek`` source and sink beside the same Kafka
client (confluent-kafka) used directly, without Spark, against one Odradek broker.

Run from the repository root:

    .venv/bin/python -m bench.spark [--quick]

Odradek runs as `python -m odradek` in a child process (bench/peers.py starts it);
Spark is a local[2] session from `odradek.spark.local_session()` in this process
(started, then warmed up with a read and a write job of each format, before anything
is timed).

- source: a Spark batch read of a 2-partition topic, forced with the `noop` sink
  (`spark.read.format("odradek")...load().write.format("noop").save()`), against the
  ceiling: one confluent_kafka.Consumer with the reader's settings, assigned to both
  partitions, reading them to the end with consume() in batches and touching each
  record's value.
- sink: a Spark batch write (`df.write.format("odradek").mode("append")`) of a data
  frame of values prepared and cached beforehand (2 partitions, so two tasks, each one
  transaction), against the ceiling: one confluent_kafka.Producer with the sink's
  settings (transactional, partitioner murmur2_random, linger.ms=5) writing the same
  number of records of the same size in one transaction.
- floor: the same Spark jobs on a Python data source without Kafka (bench-local,
  `odradek-bench-floor`): a reader that yields prepared Arrow batches of the source's
  schema and size, a writer that drops the batches it is given. floor / direct is the
  best any Python data source could reach here: the gap between floor and `odradek` is
  the connector's own cost, the gap between direct and floor is Spark's (Arrow between
  the JVM and its Python workers, job and task set-up), on a machine whose two cores
  the JVM, the workers and the broker share.

Each side's time is the job alone: the Spark action, or the client from its creation
to its close (reader) or its committed transaction (writer). Every case runs
`repeats` times per side, the order alternating; the median counts. MB = 10^6 bytes of
record values, KB = 1000 bytes. The ratio is Spark / direct; the target is >= 0.5 on
1 KB records. CPU columns: broker process / client side (this process and its
children but the broker: Spark's JVM and Python workers), % of one core.

Results: a Markdown table on stdout and JSON in bench/results/spark.json.
As in the other benchmarks (CpuMeter, bench/peers.py), the CPU used by other processes
is reported (noise).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException

from bench.clients import (
    MB,
    produce,
)
from bench.data_plane import (
    size_text,
)
from bench.peers import (
    CLIENT_LOG,
    OTHER_CPU,
    ErrorSink,
    JobMeter,
    OdradekPeer,
    Peer,
)
from bench.report import (
    Run,
    Step,
    arg_parser,
    check_peer,
    command_line,
    environment,
    noise_note,
    print_problems,
    remove_workdir,
    run_steps,
    start_run,
    topic_name,
    write_results,
)
from bench.spark_direct import committed_records, direct_read, direct_write
from bench.spark_floor import floor_data_source, floor_read_job, floor_write_job

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PARTITIONS = 2
WARMUP_RECORDS = 20_000
WARMUP_SIZE = 100
# room to cache the sink cases' input frame (a GB of values) in memory
DRIVER_MEMORY = "4g"


@dataclass(frozen=True)
class Settings:
    quick: bool
    cases: tuple[tuple[int, int], ...]  # (record bytes, records)
    repeats: int
    partitions: int = PARTITIONS

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(quick, ((1000, 20_000), (100, 50_000)), 1)
        return cls(quick, ((1000, 1_000_000), (100, 3_000_000)), 3)


# --------------------------------------------------------------------------- results


@dataclass
class Measure:
    """One timed job."""

    records: int
    value_bytes: int
    seconds: float
    broker_cpu_pct: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / MB / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, Any]:
        return {**asdict(self), "records_per_s": self.records_per_s, "mb_per_s": self.mb_per_s}

    def text(self) -> str:
        return (
            f"{self.mb_per_s:.1f} MB/s, {self.records_per_s / 1000:.0f}k rec/s "
            f"({self.seconds:.2f} s; CPU {self.broker_cpu_pct:.0f}%/{self.client_cpu_pct:.0f}%)"
        )


def measured(meter: JobMeter, records: int, value_bytes: int) -> Measure:
    return Measure(
        records=records,
        value_bytes=value_bytes,
        seconds=meter.seconds,
        broker_cpu_pct=meter.broker_pct,
        client_cpu_pct=meter.client_pct,
        other_cpu_pct=meter.other_pct,
    )


SIDES = ("direct", "spark", "floor")


@dataclass
class Case:
    kind: str  # "source" or "sink"
    label: str
    size: int
    records: int
    runs: dict[str, list[Measure]] = field(default_factory=lambda: {side: [] for side in SIDES})

    def median(self, side: str) -> Measure | None:
        runs = self.runs[side]
        return sorted(runs, key=lambda m: m.seconds)[len(runs) // 2] if runs else None

    def ratio(self, side: str = "spark") -> float | None:
        """``side``'s records/s over the direct client's."""
        measure, direct = self.median(side), self.median("direct")
        if measure is None or direct is None or not direct.records_per_s:
            return None
        return measure.records_per_s / direct.records_per_s

    def as_json(self) -> dict[str, Any]:
        def side(name: str) -> dict[str, Any] | None:
            median = self.median(name)
            if median is None:
                return None
            return {"median": median.summary(), "runs": [m.summary() for m in self.runs[name]]}

        return {
            "case": self.label,
            "kind": self.kind,
            "record_bytes": self.size,
            "records": self.records,
            **{name: side(name) for name in SIDES},
            "ratio": self.ratio("spark"),
            "floor_ratio": self.ratio("floor"),
        }


def sides_in_order(repeat: int) -> tuple[str, ...]:
    """Alternate the order, so that no side always gets the warmer (or busier) machine."""
    return SIDES if repeat % 2 == 0 else SIDES[::-1]


def count_text(count: int) -> str:
    return f"{count // 1_000_000}M" if count % 1_000_000 == 0 else f"{count // 1000}k"


# --------------------------------------------------------------------------- Spark jobs


def spark_read(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    return (
        spark.read.format("odradek")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )


def spark_read_job(spark: SparkSession, bootstrap: str, topic: str) -> None:
    spark_read(spark, bootstrap, topic).write.format("noop").mode("overwrite").save()


def spark_write_job(frame: DataFrame, bootstrap: str, topic: str) -> None:
    (
        frame.write.format("odradek")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )


def value_frame(spark: SparkSession, count: int, size: int, partitions: int) -> DataFrame:
    """``count`` binary values of ``size`` bytes (differing from row to row), cached."""
    hashes = -(-size // 32)  # sha2-256 gives 32 bytes
    frame = (
        spark.range(0, count, 1, partitions)
        .selectExpr(
            f"substring(unhex(repeat(sha2(CAST(id AS STRING), 256), {hashes})), 1, {size}) AS value"
        )
        .cache()
    )
    if frame.count() != count:
        raise RuntimeError("the cached data frame has the wrong number of rows")
    lengths = frame.selectExpr("min(length(value)) AS low", "max(length(value)) AS high").first()
    if lengths is None or (lengths["low"], lengths["high"]) != (size, size):
        raise RuntimeError(f"values are not {size} bytes: {lengths}")
    return frame


# --------------------------------------------------------------------------- the bench


class SparkBench:
    """The Spark session and the broker, and the steps run_steps() runs."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.settings: Settings = run.settings
        self.spark: SparkSession | None = None
        self.broker: Peer | None = None
        self.cases: list[Case] = []
        self.sink = ErrorSink()

    # steps

    def start(self, run: Run, peers: list[Peer]) -> None:
        import odradek.spark as odradek_spark

        self.broker = OdradekPeer(run.python, run.workdir)
        peers.append(self.broker)
        started = time.perf_counter()
        self.spark = odradek_spark.local_session(
            "odradek-bench", config={"spark.driver.memory": DRIVER_MEMORY}
        )
        self.spark.sparkContext.setLogLevel("ERROR")
        self.spark.dataSource.register(floor_data_source())
        run.extra["spark_session_start_s"] = round(time.perf_counter() - started, 2)
        run.extra["spark"] = {
            "version": self.spark.version,
            "master": self.spark.sparkContext.master,
            "arrow_max_records_per_batch": self.spark.conf.get(
                "spark.sql.execution.arrow.maxRecordsPerBatch"
            ),
        }

    def warm_up(self, run: Run, peers: list[Peer]) -> None:
        """A read and a write job of each format, untimed: JVM code paths, Python workers."""
        spark, broker = self._ready()
        partitions = self.settings.partitions
        source = topic_name("spark-warm")
        broker.create_topic(source, partitions)
        self._fill(source, WARMUP_RECORDS, WARMUP_SIZE)
        spark_read_job(spark, broker.bootstrap, source)
        frame = value_frame(spark, WARMUP_RECORDS, WARMUP_SIZE, partitions)
        target = topic_name("spark-warm-out")
        broker.create_topic(target, partitions)
        spark_write_job(frame, broker.bootstrap, target)
        floor_read_job(spark, WARMUP_RECORDS, WARMUP_SIZE, partitions)
        floor_write_job(frame)
        direct_read(broker.bootstrap, source, partitions, self.sink)
        frame.unpersist()
        broker.delete_topic(source)
        broker.delete_topic(target)

    def cases_step(self, run: Run, peers: list[Peer]) -> None:
        for size, count in self.settings.cases:
            for kind in ("source", "sink"):
                case = Case(kind, self._label(kind, size, count), size, count)
                self.cases.append(case)
                print(f"    {case.label}", flush=True)
                try:
                    if kind == "source":
                        self._source_case(case)
                    else:
                        self._sink_case(case)
                except (KafkaException, RuntimeError) as exc:
                    run.problems.append(f"{case.label}: {exc}")
                    print(f"      failed: {exc}", flush=True)
                check_peer(run, self._ready()[1], case.label)
                ratio, floor = case.ratio("spark"), case.ratio("floor")
                if ratio is not None and floor is not None:
                    print(f"      Spark/direct {ratio:.2f}, floor/direct {floor:.2f}", flush=True)

    def stop(self) -> None:
        if self.spark is not None:
            with contextlib.suppress(Exception):
                self.spark.stop()
            self.spark = None

    # cases

    def _label(self, kind: str, size: int, count: int) -> str:
        what = (
            "batch read (noop sink) vs Consumer"
            if kind == "source"
            else "batch write vs transactional Producer"
        )
        return (
            f"{kind}: {what}, {count_text(count)} x {size_text(size)}, "
            f"{self.settings.partitions} partitions"
        )

    def _ready(self) -> tuple[SparkSession, Peer]:
        if self.spark is None or self.broker is None:
            raise RuntimeError("the Spark session or the broker is not running")
        return self.spark, self.broker

    def _fill(self, topic: str, count: int, size: int) -> None:
        broker = self._ready()[1]
        partitions = self.settings.partitions
        filled = produce(
            broker.bootstrap, topic, partitions, size, "all",
            linger_ms=5, per_partition=count // partitions,
        )  # fmt: skip
        if filled.records != count:
            raise RuntimeError(
                f"filling {topic}: {filled.records} of {count} delivered ({filled.first_error})"
            )

    def _source_case(self, case: Case) -> None:
        spark, broker = self._ready()
        partitions = self.settings.partitions
        topic = topic_name(f"spark-source-{case.size}")
        broker.create_topic(topic, partitions)
        self._fill(topic, case.records, case.size)
        expected_bytes = case.records * case.size
        for repeat in range(self.settings.repeats):
            for side in sides_in_order(repeat):
                records, value_bytes = case.records, expected_bytes
                with JobMeter(broker.pid) as meter:
                    if side == "spark":
                        spark_read_job(spark, broker.bootstrap, topic)
                    elif side == "floor":
                        floor_read_job(spark, case.records, case.size, partitions)
                    else:
                        records, value_bytes = direct_read(
                            broker.bootstrap, topic, partitions, self.sink
                        )
                if (records, value_bytes) != (case.records, expected_bytes):
                    raise RuntimeError(
                        f"direct read got {records} records, {value_bytes} bytes; "
                        f"expected {case.records}, {expected_bytes}"
                    )
                self._record(case, side, measured(meter, records, value_bytes))
        # the noop sink counts nothing: check once, untimed, what Spark reads
        totals = (
            spark_read(spark, broker.bootstrap, topic)
            .selectExpr("count(*) AS n", "sum(length(value)) AS bytes")
            .first()
        )
        if totals is None or (totals["n"], totals["bytes"]) != (case.records, expected_bytes):
            raise RuntimeError(f"Spark read {totals}; expected {case.records}, {expected_bytes}")
        broker.delete_topic(topic)

    def _sink_case(self, case: Case) -> None:
        spark, broker = self._ready()
        partitions = self.settings.partitions
        frame = value_frame(spark, case.records, case.size, partitions)
        expected_bytes = case.records * case.size
        try:
            for repeat in range(self.settings.repeats):
                for side in sides_in_order(repeat):
                    if side == "floor":
                        with JobMeter(broker.pid) as meter:
                            floor_write_job(frame)
                        self._record(case, side, measured(meter, case.records, expected_bytes))
                        continue
                    topic = topic_name(f"spark-sink-{side}-{case.size}")
                    broker.create_topic(topic, partitions)
                    with JobMeter(broker.pid) as meter:
                        if side == "spark":
                            spark_write_job(frame, broker.bootstrap, topic)
                        else:
                            direct_write(
                                broker.bootstrap, topic, case.records, case.size, self.sink
                            )
                    seen = committed_records(broker.bootstrap, topic, partitions)
                    if seen != case.records:
                        raise RuntimeError(
                            f"{side} write: a read_committed consumer sees {seen} records "
                            f"of {case.records}"
                        )
                    self._record(case, side, measured(meter, case.records, expected_bytes))
                    broker.delete_topic(topic)
        finally:
            frame.unpersist()

    @staticmethod
    def _record(case: Case, side: str, result: Measure) -> None:
        case.runs[side].append(result)
        print(f"      {side:>6}: {result.text()}", flush=True)


# --------------------------------------------------------------------------- report


def render_table(cases: list[Case]) -> str:
    lines = [
        "| case | Spark | direct | ratio | Spark floor (no Kafka) | floor ratio |",
        "|---|---|---|---|---|---|",
    ]

    def text(measure: Measure | None) -> str:
        return measure.text() if measure is not None else "failed"

    def ratio_text(ratio: float | None) -> str:
        return "n/a" if ratio is None else f"{ratio:.2f}"

    for case in cases:
        lines.append(
            f"| {case.label} | {text(case.median('spark'))} | {text(case.median('direct'))} | "
            f"{ratio_text(case.ratio('spark'))} | {text(case.median('floor'))} | "
            f"{ratio_text(case.ratio('floor'))} |"
        )
    return "\n".join(lines)


def notes(settings: Settings) -> list[str]:
    return [
        "ratio = Spark records/s / direct records/s (target: >= 0.5 on 1 KB records). "
        "MB = 10^6 bytes of record values. CPU b%/c%: broker process / client side (this "
        "process and its children but the broker, so Spark's JVM and Python workers), "
        f"% of one core ({os.cpu_count()} cores here).",
        f"median of {settings.repeats} run(s) per side, order alternating; Spark: local[2], "
        "the job alone (session started and warmed up before); direct: from the client's "
        "creation to its close (read) or its committed transaction (write). Source: Spark "
        "reads with one task per partition, the direct Consumer reads both partitions; "
        "sink: Spark writes a cached frame of 2 partitions (two tasks, one transaction "
        "each), the direct Producer one transaction. Floor: the same Spark jobs on a "
        "Python data source without Kafka (prepared batches in, batches dropped out), the "
        "best any Python data source reaches here. A GB of values per 1 KB case (driver "
        f"memory {DRIVER_MEMORY} to cache the sink's input), so Spark's fixed cost per job "
        "does not decide the result.",
    ]


def report(run: Run, bench: SparkBench, findings: list[str]) -> None:
    """Print the table, notes and problems; write bench/results/spark.json."""
    import pyarrow
    import pyspark

    elapsed = time.perf_counter() - run.began
    command = command_line()
    table = render_table(bench.cases)
    text_notes = [note for note in [*notes(run.settings), noise_note()] if note]
    print()
    print("\n".join([table, "", *text_notes, "", f"command: `{command}`"]))
    if bench.sink.errors:
        run.problems.append(f"client errors: {bench.sink.errors[:5]}")
    print_problems(run, findings)
    print(f"\ntook {elapsed:.0f}s")
    document = {
        "command": command,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(elapsed, 1),
        "settings": asdict(run.settings),
        "environment": environment(pyspark=pyspark.__version__, pyarrow=pyarrow.__version__),
        "ratio_meaning": "Spark records/s / direct records/s (same records, same client)",
        "rows": [case.as_json() for case in bench.cases],
        "notes": text_notes,
        "problems": run.problems,
        "other_cpu_pct_per_case": [round(v, 1) for v in OTHER_CPU],
        "loadavg_at_end": os.getloadavg(),
        "odradek_log_findings": findings,
        "librdkafka_warnings": CLIENT_LOG.lines,
        **run.extra,
        "table_markdown": table,
    }
    write_results("spark", document)


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__).parse_args(argv)
    run = start_run(Settings.make(args.quick), "Spark connector", "odradek-bench-spark-")
    bench = SparkBench(run)
    steps: list[tuple[str, Step]] = [
        ("Spark warm-up", bench.warm_up),
        ("source and sink cases", bench.cases_step),
    ]
    try:
        findings = run_steps(run, bench.start, steps)
    finally:
        bench.stop()
    report(run, bench, findings)
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
