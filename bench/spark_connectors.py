"""Spark's two Kafka connectors on two brokers: Spark's own ``format("kafka")``
(spark-sql-kafka 4.2, the Java client) and ``format("odradek")`` (confluent-kafka in
Spark's Python workers), each on Odradek and on Apache Kafka 4.4, in one run.

Run from the repository root (`make bench-spark-connectors`):

    .venv/bin/python -m bench.spark_connectors [--quick]

Both brokers run beside each other for the whole run (Odradek as `python -m odradek`,
Kafka 4.4 from the test rig's jars); Spark is one local[2] session in this process,
with the Kafka connector's jars (tests/spark/connector/lib, from `make install-test`)
on spark.jars, warmed up with a read and a copy of each connector on each broker.

- read: a streaming query with trigger(availableNow=True) over a 2-partition topic,
  from earliest to the end, into Spark's `noop` sink (a new checkpoint each time).
- copy: the same query writing every record to another 2-partition topic through
  the connector's sink (Spark's: at least once; odradek's: a transaction per task),
  checked afterwards with a read_committed count.

Each case runs `repeats` times per connector and broker, the connectors' order
alternating; the median counts. MB = 10^6 bytes of record values. Broker CPU per MB:
the broker process's CPU seconds (from /proc; all of the JVM's threads for Kafka) over
the MB the query moved. Results: a Markdown table on stdout and JSON in
bench/results/spark_connectors.json.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.clients import MB, produce
from bench.data_plane import size_text
from bench.peers import OTHER_CPU, REPO, JobMeter, OdradekPeer, Peer
from bench.report import (
    Run,
    Step,
    arg_parser,
    check_peer,
    command_line,
    environment,
    kafka_note,
    noise_note,
    print_problems,
    remove_workdir,
    run_steps,
    start_kafka,
    start_run,
    topic_name,
    write_results,
)
from bench.spark import Measure, measured
from bench.spark_direct import committed_records
from odradek.spark import KAFKA_CONNECTOR_PACKAGE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PARTITIONS = 2
CONNECTORS = ("kafka", "odradek")
BROKERS = ("odradek", "kafka")
KAFKA_CONNECTOR_LIB = REPO / "tests" / "spark" / "connector" / "lib"
QUERY_TIMEOUT = 900.0


@dataclass(frozen=True)
class Settings:
    quick: bool
    size: int  # record bytes
    records: int
    repeats: int

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(quick, 1000, 30_000, 1)
        return cls(quick, 1000, 400_000, 3)


@dataclass
class Case:
    kind: str  # "read" or "copy"
    runs: dict[tuple[str, str], list[Measure]] = field(default_factory=dict)

    def median(self, connector: str, broker: str) -> Measure | None:
        runs = sorted(self.runs.get((connector, broker), []), key=lambda m: m.seconds)
        return runs[len(runs) // 2] if runs else None


def broker_cpu_s_per_mb(measure: Measure) -> float:
    moved = measure.value_bytes / MB
    return measure.broker_cpu_pct / 100 * measure.seconds / moved if moved else 0.0


def session_config() -> dict[str, str]:
    jars = sorted(str(jar) for jar in KAFKA_CONNECTOR_LIB.glob("*.jar"))
    if jars:
        return {"spark.jars": ",".join(jars)}
    return {"spark.jars.packages": KAFKA_CONNECTOR_PACKAGE}


class ConnectorsBench:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.settings: Settings = run.settings
        self.spark: SparkSession | None = None
        self.brokers: dict[str, Peer] = {}
        self.sources: dict[str, str] = {}
        self.cases = [Case("read"), Case("copy")]
        self.scratch = Path(tempfile.mkdtemp(prefix="checkpoints-", dir=run.workdir))

    def start(self, run: Run, peers: list[Peer]) -> None:
        import odradek.spark as odradek_spark

        self.brokers["odradek"] = OdradekPeer(run.python, run.workdir)
        peers.append(self.brokers["odradek"])
        start_kafka(run, peers)
        for peer in peers:
            if peer.name == "kafka":
                self.brokers["kafka"] = peer
        config = {**session_config(), "spark.driver.memory": "2g"}
        run.extra["spark_jars"] = config.get("spark.jars", config.get("spark.jars.packages"))
        self.spark = odradek_spark.local_session("odradek-bench-connectors", config=config)
        self.spark.sparkContext.setLogLevel("ERROR")

    def fill(self, run: Run, peers: list[Peer]) -> None:
        for name, broker in self.brokers.items():
            topic = topic_name("spark-connectors-in")
            broker.create_topic(topic, PARTITIONS)
            filled = produce(
                broker.bootstrap, topic, PARTITIONS, self.settings.size, "all",
                linger_ms=5, per_partition=self.settings.records // PARTITIONS,
            )  # fmt: skip
            if filled.records != self.settings.records:
                raise RuntimeError(f"filling {name}: {filled.records} delivered")
            self.sources[name] = topic

    def warm_up(self, run: Run, peers: list[Peer]) -> None:
        for broker in self.brokers:
            for connector in CONNECTORS:
                self._read(connector, broker)
                self._copy(connector, broker)

    def cases_step(self, run: Run, peers: list[Peer]) -> None:
        for case in self.cases:
            print(f"    {case.kind}", flush=True)
            for repeat in range(self.settings.repeats):
                order = CONNECTORS if repeat % 2 == 0 else CONNECTORS[::-1]
                for broker in self.brokers:
                    for connector in order:
                        timed = self._read if case.kind == "read" else self._copy
                        measure = timed(connector, broker)
                        case.runs.setdefault((connector, broker), []).append(measure)
                        print(
                            f"      {connector:>7} on {broker:<7}: {measure.text()}, broker "
                            f"{broker_cpu_s_per_mb(measure) * 1000:.1f} ms CPU/MB",
                            flush=True,
                        )
                    check_peer(run, self.brokers[broker], f"{case.kind} on {broker}")

    def stop(self) -> None:
        if self.spark is not None:
            with contextlib.suppress(Exception):
                self.spark.stop()
            self.spark = None

    # the queries

    def _stream(self, connector: str, broker: str) -> Any:
        assert self.spark is not None
        return (
            self.spark.readStream.format(connector)
            .option("kafka.bootstrap.servers", self.brokers[broker].bootstrap)
            .option("subscribe", self.sources[broker])
            .option("startingOffsets", "earliest")
            .load()
        )

    def _run(self, writer: Any, broker: str) -> JobMeter:
        checkpoint = tempfile.mkdtemp(dir=self.scratch)
        writer = writer.option("checkpointLocation", checkpoint).trigger(availableNow=True)
        with JobMeter(self.brokers[broker].pid) as meter:
            query = writer.start()
            if not query.awaitTermination(QUERY_TIMEOUT):
                query.stop()
                raise RuntimeError(f"the query on {broker} did not finish")
        rows = sum(p["numInputRows"] for p in query.recentProgress)
        if rows != self.settings.records:
            raise RuntimeError(f"the query on {broker} read {rows} of {self.settings.records}")
        return meter

    def _read(self, connector: str, broker: str) -> Measure:
        meter = self._run(self._stream(connector, broker).writeStream.format("noop"), broker)
        return measured(meter, self.settings.records, self.settings.records * self.settings.size)

    def _copy(self, connector: str, broker: str) -> Measure:
        peer = self.brokers[broker]
        target = topic_name("spark-connectors-out")
        peer.create_topic(target, PARTITIONS)
        writer = (
            self._stream(connector, broker)
            .select("key", "value")
            .writeStream.format(connector)
            .option("kafka.bootstrap.servers", peer.bootstrap)
            .option("topic", target)
        )
        meter = self._run(writer, broker)
        seen = committed_records(peer.bootstrap, target, PARTITIONS)
        if seen < self.settings.records:  # Spark's own sink may write a retried row twice
            raise RuntimeError(f"copy on {broker}: {seen} of {self.settings.records} records")
        peer.delete_topic(target)
        return measured(meter, self.settings.records, self.settings.records * self.settings.size)


def render_table(bench: ConnectorsBench) -> str:
    combos = [(c, b) for c in CONNECTORS for b in BROKERS]
    header = " | ".join(
        f'format("{c}") on {"Kafka 4.4" if b == "kafka" else "Odradek"}' for c, b in combos
    )
    lines = [
        f"| case | {header} | Odradek / Kafka 4.4, kafka | Odradek / Kafka 4.4, odradek |",
        "|---" * (len(combos) + 3) + "|",
    ]
    for case in bench.cases:
        cells = []
        for connector, broker in combos:
            m = case.median(connector, broker)
            cells.append(
                "failed"
                if m is None
                else f"{m.records_per_s / 1000:.0f}k rec/s, {m.mb_per_s:.1f} MB/s, broker "
                f"{broker_cpu_s_per_mb(m) * 1000:.1f} ms CPU/MB"
            )
        ratios = []
        for connector in CONNECTORS:
            ours, theirs = case.median(connector, "odradek"), case.median(connector, "kafka")
            ratios.append(
                f"{ours.records_per_s / theirs.records_per_s:.2f}"
                if ours and theirs and theirs.records_per_s
                else "n/a"
            )
        label = (
            f"{case.kind}: availableNow, {bench.settings.records // 1000}k x "
            f"{size_text(bench.settings.size)}, {PARTITIONS} partitions"
        )
        lines.append(f"| {label} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return "\n".join(lines)


def report(run: Run, bench: ConnectorsBench, findings: list[str]) -> None:
    import pyspark

    elapsed = time.perf_counter() - run.began
    command = command_line()
    table = render_table(bench)
    text_notes = [
        f"median of {run.settings.repeats} run(s) per connector and broker; ratio = Odradek "
        "records/s / Kafka 4.4 records/s with the same connector. The query alone is timed "
        "(start() to its end); the session and its Python workers were warmed up before.",
        kafka_note(run),
        noise_note(),
    ]
    print()
    print("\n".join([table, "", *[n for n in text_notes if n], "", f"command: `{command}`"]))
    print_problems(run, findings)
    print(f"\ntook {elapsed:.0f}s")
    rows = {
        case.kind: {
            f"{c}@{b}": (m.summary() | {"broker_cpu_s_per_mb": broker_cpu_s_per_mb(m)})
            if (m := case.median(c, b))
            else None
            for c in CONNECTORS
            for b in BROKERS
        }
        for case in bench.cases
    }
    document = {
        "command": command,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(elapsed, 1),
        "settings": asdict(run.settings),
        "environment": environment(pyspark=pyspark.__version__),
        "rows": rows,
        "notes": [n for n in text_notes if n],
        "problems": run.problems,
        "other_cpu_pct_per_case": [round(v, 1) for v in OTHER_CPU],
        "odradek_log_findings": findings,
        **run.extra,
        "table_markdown": table,
    }
    write_results("spark_connectors", document)


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__).parse_args(argv)
    run = start_run(Settings.make(args.quick), "Spark connectors", "odradek-bench-connectors-")
    bench = ConnectorsBench(run)
    steps: list[tuple[str, Step]] = [
        ("fill the input topics", bench.fill),
        ("warm-up", bench.warm_up),
        ("read and copy cases", bench.cases_step),
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
