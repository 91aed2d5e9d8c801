"""Data-plane benchmark: Odradek beside Apache Kafka 4.4 and librdkafka's mock cluster.

Run from the repository root:

    .venv/bin/python -m bench.data_plane [--quick] [--profile]

One run measures the three peers with the same client (confluent-kafka / librdkafka)
from this process, which hosts none of them:

- Odradek runs as `python -m odradek` in a child process (free port, temp data dir).
- Apache Kafka 4.4 runs as one KRaft node in a JVM, as the test rig starts it
  (bench/reference_kafka.py, same heap).
- The mock cluster runs in another child process (bench/peers.py).

Cases, each run against the three one after the other:

- produce throughput: 1 KB and 100 B records, acks=1 and acks=all, 1 and 8
  partitions (round-robin), linger.ms=5, other batching settings left at their
  defaults; time-boxed, then flushed; MB/s is 10^6 bytes of record values.
- produce latency: produce() to delivery callback, 1 KB records at a fixed rate
  (1000 msg/s) with linger.ms=0, so it measures the round trip, not queueing.
- consume throughput: assign() (no group) and read a topic filled with at most
  what the mock retains (about 5 MiB per partition), in repeated passes from the
  low watermark until the time box is used up. One extra row reads a large topic
  (left by a produce case) in a single pass, on Odradek and Kafka (the mock keeps
  only 5 MiB).
- the broker's CPU per MB of each produce and consume case (process CPU from /proc;
  for Kafka the whole JVM).
- start-up (spawn to accepted TCP connection, median of several runs; Kafka's after
  its storage format, which has a row of its own), RSS (VmRSS) idle after start, the
  highest at the end of a produce or consume case, and idle after the runs; the mock
  host's figures are shown beside them for scale.

Results: a Markdown table on stdout and JSON in bench/results/data_plane.json.
Every benchmark takes the peers from bench/peers.py, the run's skeleton and the report
from bench/report.py.
Every ratio is oriented so that >1 means Odradek is better: Odradek/other for
throughput, other/Odradek for latency, CPU, start-up time and RSS.

`--profile` attaches py-spy (`pip install py-spy`; skipped when absent) to Odradek
during the produce and the consume cases, prints the hottest functions and writes
collapsed stacks (for flamegraph.pl or speedscope) to
bench/results/profile_{produce,fetch}.collapsed; its numbers are perturbed, so it
writes bench/results/data_plane_profile.json instead of data_plane.json.
"""

from __future__ import annotations

import contextlib
import logging
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from confluent_kafka import KafkaException

from bench.clients import (
    KB,
    ConsumeResult,
    LatencyResult,
    ProduceResult,
    consume,
    produce,
    produce_latency,
)
from bench.peers import CpuMeter, KafkaPeer, MockPeer, OdradekPeer, Peer, log, rss_mib
from bench.profiling import Profiler, hottest, merge_collapsed
from bench.report import (
    RESULTS_DIR,
    Row,
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

# Records per partition for the consume cases, by record size: the mock drops its
# oldest batches beyond 5 MiB per partition, so stay under that.
CONSUME_FILL = {1000: 4_000, 100: 40_000}


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    quick: bool
    produce_seconds: float
    produce_repeats: int
    consume_seconds: float
    latency_seconds: float
    latency_rate: int
    startup_runs: int
    kafka_startup_runs: int  # besides the start of the Kafka the cases run against
    warmup_seconds: float
    profile: bool
    linger_ms: int = 5

    @classmethod
    def make(cls, quick: bool, profile: bool) -> Settings:
        if quick:
            return cls(quick, 0.7, 1, 0.7, 1.5, 1000, 3, 0, 2.0, profile)
        return cls(quick, 2.0, 3, 3.0, 5.0, 1000, 7, 2, 6.0, profile)


# --------------------------------------------------------------------------- data-plane cases


def throughput_text(result: ProduceResult | ConsumeResult) -> str:
    return (
        f"{result.mb_per_s:.1f} MB/s, {result.records_per_s / 1000:.0f}k rec/s, "
        f"CPU {result.broker_cpu_pct:.0f}%/{result.client_cpu_pct:.0f}%"
    )


def size_text(size: int) -> str:
    return f"{size // KB} KB" if size >= KB else f"{size} B"


def run_produce_cases(run: Run, peers: list[Peer]) -> None:
    """Each case `produce_repeats` times per peer (order alternating); the median counts."""
    s = run.settings
    cases = [
        (size, acks, partitions)
        for size in (1000, 100)
        for acks in ("1", "all")
        for partitions in (1, 8)
    ]
    turn = 0
    for index, (size, acks, partitions) in enumerate(cases):
        label = f"produce {size_text(size)}, {partitions} partition{'s' * (partitions > 1)}"
        label += f", acks={acks}"
        repeats: dict[str, list[ProduceResult]] = {}
        for repeat in range(s.produce_repeats):
            turn += 1
            for peer in peers_in_order(peers, turn):
                topic = topic_name(f"p{size}-{acks}-{partitions}")
                try:
                    peer.create_topic(topic, partitions)
                    profile = (
                        Profiler(peer.pid, run.workdir / f"produce-{index}-{repeat}.raw")
                        if s.profile and peer.name == "odradek"
                        else contextlib.nullcontext()
                    )
                    with profile, CpuMeter(peer.pid) as cpu:
                        result = produce(
                            peer.bootstrap, topic, partitions, size, acks,
                            linger_ms=s.linger_ms, seconds=s.produce_seconds,
                        )  # fmt: skip
                    cpu.record(result)
                    note_loaded_rss(run, peer)
                    if isinstance(profile, Profiler):
                        run.profiles.setdefault("produce", []).append(profile.out)
                    repeats.setdefault(peer.name, []).append(result)
                    if result.errors or result.undelivered:
                        run.problems.append(
                            f"{peer.name} {label}: {result.errors} delivery errors, "
                            f"{result.undelivered} undelivered; first: {result.first_error}"
                        )
                    large = (size, acks, partitions, repeat) == (1000, "1", 1, 0)
                    if large and peer.name in ("odradek", "kafka"):
                        run_large_consume(run, peer, topic, partitions)
                    else:
                        peer.delete_topic(topic)
                    check_peer(run, peer, label)
                except (KafkaException, RuntimeError) as exc:
                    run.problems.append(f"{peer.name} {label}: {exc}")
        results = {name: median_result(runs) for name, runs in repeats.items()}
        row = add_throughput_row(run, label, results)
        row.details = {
            name: {"median": asdict(results[name]), "runs": [asdict(r) for r in runs]}
            for name, runs in repeats.items()
        }
        log.info("%s: %s", label, row.details)


def median_result(results: list[ProduceResult]) -> ProduceResult:
    return sorted(results, key=lambda r: r.mb_per_s)[len(results) // 2]


LARGE_CONSUME = "consume 1 KB, 1 partition, single pass over the produce case's topic"


def run_large_consume(run: Run, peer: Peer, topic: str, partitions: int) -> None:
    """Odradek and Kafka: one pass over everything a produce case wrote (the mock keeps
    5 MiB). The results wait in run.extra until the consume step makes their row."""
    try:
        with CpuMeter(peer.pid) as cpu:
            result = consume(
                peer.bootstrap, topic, partitions, run.settings.consume_seconds, single_pass=True
            )
        cpu.record(result)
        note_loaded_rss(run, peer)
        run.extra.setdefault("large_consume", {})[peer.name] = result
        if result.errors:
            run.problems.append(
                f"{peer.name} {LARGE_CONSUME}: {result.errors} errors: {result.first_error}"
            )
    finally:
        peer.delete_topic(topic)


def add_large_consume_rows(run: Run) -> None:
    results: dict[str, ConsumeResult] = run.extra.pop("large_consume", {})
    if not results:
        return

    def text(name: str) -> str:
        result = results.get(name)
        if result is None:
            return "n/a (keeps 5 MiB)" if name == "mock" else "failed"
        records = f" ({result.records / 1000:.0f}k of {result.available_records / 1000:.0f}k rec)"
        return throughput_text(result) + records

    details = {name: asdict(result) for name, result in results.items()}
    values = {name: result.mb_per_s for name, result in results.items()}
    run.rows.append(peer_row(LARGE_CONSUME, "MB/s", "higher", values.get, text, details))
    run.rows.append(cpu_per_mb_row(results))


def cpu_per_mb_row(results: dict[str, ProduceResult] | dict[str, ConsumeResult]) -> Row:
    """The broker's CPU seconds over the case per MB of record values, in ms."""
    cpu = {
        name: (result.broker_cpu_s, result.value_bytes / 1e6)
        for name, result in results.items()
        if result.value_bytes
    }
    case = "  broker CPU per MB (same case)"
    return cpu_per_op_row(case, cpu, "ms/MB", 1e3, "{:.2f} ms", missing="n/a")


def note_loaded_rss(run: Run, peer: Peer) -> None:
    """Keep the highest VmRSS seen at the end of a produce or consume case."""
    try:
        rss = rss_mib(peer.pid)["VmRSS"]
    except (OSError, KeyError):
        return
    loaded: dict[str, float] = run.extra.setdefault("loaded_rss_mib", {})
    loaded[peer.name] = max(rss, loaded.get(peer.name, 0.0))


def add_throughput_row(run: Run, label: str, results: dict[str, Any]) -> Row:
    def value(name: str) -> float | None:
        result = results.get(name)
        return result.mb_per_s if result is not None and result.records else None

    def text(name: str) -> str:
        result = results.get(name)
        if result is None or not result.records:
            return "failed"
        return throughput_text(result)

    details = {name: asdict(result) for name, result in results.items()}
    row = peer_row(label, "MB/s", "higher", value, text, details)
    run.rows.append(row)
    run.rows.append(cpu_per_mb_row(results))
    return row


def run_latency_cases(run: Run, peers: list[Peer]) -> None:
    s = run.settings
    size = 1000
    for index, acks in enumerate(("1", "all")):
        results: dict[str, LatencyResult] = {}
        for peer in peers_in_order(peers, index):
            topic = topic_name(f"lat-{acks}")
            try:
                peer.create_topic(topic, 1)
                with CpuMeter(peer.pid) as cpu:
                    result = produce_latency(
                        peer.bootstrap, topic, size, acks, s.latency_rate, s.latency_seconds
                    )
                cpu.record(result)
                results[peer.name] = result
                peer.delete_topic(topic)
                check_peer(run, peer, f"latency acks={acks}")
            except (KafkaException, RuntimeError) as exc:
                run.problems.append(f"{peer.name} latency acks={acks}: {exc}")
        for result_name, result in results.items():
            if result.errors or result.undelivered:
                run.problems.append(
                    f"{result_name} latency acks={acks}: {result.errors} errors, "
                    f"{result.undelivered} undelivered"
                )
        base = f"produce latency {size_text(size)}, acks={acks}, {s.latency_rate} msg/s, linger 0"
        details = {name: asdict(result) for name, result in results.items()}
        for quantile in ("p50", "p99"):
            values = {
                name: getattr(result, f"{quantile}_ms")
                for name, result in results.items()
                if result.samples
            }
            case = f"{base}: {quantile}"
            run.rows.append(value_row(case, "ms", "lower", values, "{:.2f} ms", details=details))


def run_consume_cases(run: Run, peers: list[Peer]) -> None:
    s = run.settings
    cases = [(size, partitions) for size in (1000, 100) for partitions in (1, 8)]
    for index, (size, partitions) in enumerate(cases):
        per_partition = CONSUME_FILL[size]
        label = (
            f"consume {size_text(size)}, {partitions} partition{'s' * (partitions > 1)}, "
            f"{per_partition // 1000}k rec/partition, repeated passes"
        )
        results: dict[str, ConsumeResult] = {}
        for peer in peers_in_order(peers, index):
            topic = topic_name(f"c{size}-{partitions}")
            try:
                peer.create_topic(topic, partitions)
                filled = produce(
                    peer.bootstrap, topic, partitions, size, "1",
                    linger_ms=s.linger_ms, per_partition=per_partition,
                )  # fmt: skip
                if filled.records != per_partition * partitions:
                    run.problems.append(
                        f"{peer.name} {label}: fill delivered {filled.records} of "
                        f"{per_partition * partitions} ({filled.first_error})"
                    )
                profile = (
                    Profiler(peer.pid, run.workdir / f"fetch-{index}.raw")
                    if s.profile and peer.name == "odradek"
                    else contextlib.nullcontext()
                )
                with profile, CpuMeter(peer.pid) as cpu:
                    result = consume(peer.bootstrap, topic, partitions, s.consume_seconds)
                cpu.record(result)
                note_loaded_rss(run, peer)
                if isinstance(profile, Profiler):
                    run.profiles.setdefault("fetch", []).append(profile.out)
                results[peer.name] = result
                if result.errors:
                    run.problems.append(
                        f"{peer.name} {label}: {result.errors} consume errors: {result.first_error}"
                    )
                if result.available_records != per_partition * partitions:
                    run.problems.append(
                        f"{peer.name} {label}: only {result.available_records} of "
                        f"{per_partition * partitions} records available"
                    )
                peer.delete_topic(topic)
                check_peer(run, peer, label)
            except (KafkaException, RuntimeError) as exc:
                run.problems.append(f"{peer.name} {label}: {exc}")
            log.info("%s: %s", label, {k: asdict(v) for k, v in results.items()})
        add_throughput_row(run, label, results)
    add_large_consume_rows(run)


def measure_startup(run: Run) -> None:
    """Spawn to first accepted connection, fresh data dir each time; median of several.

    Kafka: `kafka_startup_runs` starts here, and the one the cases run against (added
    by `start`); each formats its storage first, timed apart."""
    odradek: list[float] = []
    mock: list[float] = []
    kafka: list[float] = []
    kafka_format: list[float] = []
    for i in range(run.settings.kafka_startup_runs):
        try:
            reference = KafkaPeer(run.workdir, label=f"startup-{i}")
            kafka.append(reference.startup_s)
            kafka_format.append(reference.format_s)
            reference.stop()
        except (RuntimeError, OSError) as exc:
            run.problems.append(f"kafka start-up run {i}: {exc}")
    run.extra["startup_runs_s"] = {"odradek": odradek, "mock": mock, "kafka": kafka}
    run.extra["kafka_format_runs_s"] = kafka_format
    for i in range(run.settings.startup_runs):
        try:
            broker = OdradekPeer(run.python, run.workdir, label=f"startup-{i}")
            odradek.append(broker.startup_s)
            broker.stop()
        except (RuntimeError, ValueError, OSError) as exc:
            run.problems.append(f"odradek start-up run {i}: {exc}")
        try:
            host = MockPeer(run.python, run.workdir)
            mock.append(host.startup_s)
            host.stop()
        except (RuntimeError, ValueError, OSError) as exc:
            run.problems.append(f"mock host start-up run {i}: {exc}")


def startup_rows(run: Run, peers: list[Peer]) -> None:
    """The start-up row (with the start of the Kafka the cases use) and Kafka's format."""
    runs: dict[str, list[float]] = run.extra["startup_runs_s"]
    kafka_format: list[float] = run.extra["kafka_format_runs_s"]
    for peer in peers:
        if isinstance(peer, KafkaPeer):
            runs["kafka"].append(peer.startup_s)
            kafka_format.append(peer.format_s)
    medians = {name: statistics.median(times) * 1000 for name, times in runs.items() if times}
    case = (
        f"start-up, spawn to accepting TCP (median of {len(runs['odradek'])}, Kafka "
        f"{len(runs['kafka'])}; Kafka after its storage format; mock = Python process "
        "hosting it)"
    )
    run.rows.append(value_row(case, "ms", "lower", medians, "{:.0f} ms", details=runs))
    if run.with_kafka:
        formats = {"kafka": statistics.median(kafka_format) * 1000} if kafka_format else {}
        case = "  Kafka's storage format before it (StorageTool, a JVM of its own)"
        run.rows.append(
            value_row(
                case, "ms", "lower", formats, "{:.0f} ms", "n/a", details={"kafka": kafka_format}
            )
        )


def rss_row(run: Run, label: str, peers: list[Peer]) -> None:
    values: dict[str, dict[str, float]] = {}
    for peer in peers:
        try:
            values[peer.name] = rss_mib(peer.pid)
        except OSError as exc:
            run.problems.append(f"{peer.name}: cannot read RSS: {exc}")
    rss = {name: value["VmRSS"] for name, value in values.items() if "VmRSS" in value}
    run.rows.append(value_row(label, "MiB", "lower", rss, "{:.1f} MiB", "n/a", details=values))


def warm_up(run: Run, peers: list[Peer]) -> None:
    """Produce both record sizes and read them back on every peer before measuring: the
    JVM compiles Kafka's hot paths in its first seconds of load."""
    seconds = run.settings.warmup_seconds
    for peer in peers:
        topic = topic_name("warmup")
        try:
            peer.create_topic(topic, 8)
            for size, acks in ((1000, "1"), (100, "all")):
                produce(peer.bootstrap, topic, 8, size, acks, linger_ms=5, seconds=seconds / 2)
                consume(peer.bootstrap, topic, 8, seconds / 4, single_pass=True)
            peer.delete_topic(topic)
        except (KafkaException, RuntimeError) as exc:
            run.problems.append(f"{peer.name} warm-up: {exc}")


def notes(settings: Settings) -> list[str]:
    s = settings
    return [
        "ratio > 1 means Odradek is better: Odradek/other for throughput, "
        "other/Odradek for latency, CPU, start-up and RSS. MB = 10^6 bytes of record values. "
        f"CPU b%/c%: broker process / client process, % of one core ({os.cpu_count()} cores here).",
        f"produce: median of {s.produce_repeats} run(s) of {s.produce_seconds:g} s (then flush) "
        f"per peer, round-robin partitions, linger.ms={s.linger_ms}, no compression; "
        f"consume: {s.consume_seconds:g} s of passes from the low to the high watermark "
        f"after one untimed pass; latency: {s.latency_rate} msg/s for {s.latency_seconds:g} s.",
    ]


def profile_lines(summary: dict[str, dict[str, list[tuple[str, float]]]]) -> list[str]:
    lines: list[str] = []
    for kind, hot in summary.items():
        lines.append(f"\npy-spy, Odradek during {kind} cases, self time (% of samples):")
        lines += [f"  {share:5.1f}%  {name}" for name, share in hot["self"]]
        lines.append(f"py-spy, Odradek during {kind} cases, inclusive time:")
        lines += [f"  {share:5.1f}%  {name}" for name, share in hot["inclusive"]]
    return lines


def start(run: Run, peers: list[Peer]) -> None:
    """Start-up times first (nothing else running), then the peers and their idle RSS."""
    measure_startup(run)
    start_peers(run, peers)
    start_kafka(run, peers)
    startup_rows(run, peers)
    time.sleep(1.0)
    rss_row(run, "idle RSS after start (VmRSS)", peers)


def end(run: Run, peers: list[Peer]) -> None:
    loaded: dict[str, float] = run.extra.pop("loaded_rss_mib", {})
    case = "RSS under load (VmRSS, highest at the end of a produce or consume case)"
    run.rows.append(value_row(case, "MiB", "lower", loaded, "{:.1f} MiB", "n/a"))
    time.sleep(2.0)
    rss_row(run, "idle RSS after the runs (VmRSS, topics deleted)", peers)


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--profile", action="store_true", help="attach py-spy to Odradek")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    run = start_run(Settings.make(args.quick, args.profile), "data-plane", "odradek-bench-")
    steps: list[tuple[str, Step]] = [
        ("warm-up", warm_up),
        ("produce throughput", run_produce_cases),
        ("produce latency", run_latency_cases),
        ("consume throughput", run_consume_cases),
    ]
    findings = run_steps(run, start, steps, end)
    profile_summary = {kind: hottest(files) for kind, files in run.profiles.items()}
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    for kind, files in run.profiles.items():
        merge_collapsed(files, RESULTS_DIR / f"profile_{kind}.collapsed")
    report(
        run,
        name="data_plane_profile" if args.profile else "data_plane",
        notes=notes(run.settings),
        findings=findings,
        ratio_meaning=">1 means Odradek is better (throughput Odradek/other; "
        "latency, CPU, start-up, RSS other/Odradek); ratio: against the mock, "
        "kafka_ratio: against Apache Kafka 4.4",
        extra={"profile": profile_summary},
        notes_in_table=True,
        appendix=profile_lines(profile_summary),
    )
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
