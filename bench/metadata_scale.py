"""A full Metadata answer at 10,000 partitions, Odradek beside Apache Kafka 4.4 in one run.

Run from the repository root (`make bench-metadata`):

    .venv/bin/python -m bench.metadata_scale [--quick] [--cluster] [--topics T] [--partitions P]

With --cluster, Odradek runs as a controller and a broker (two processes), and the
broker, which follows the controller's metadata, is measured.

- set-up: on each broker, `topics` topics of `partitions` partitions each (100 x 100;
  --quick: 20 x 100), created with the admin client one CreateTopics each, then
  Metadata until every partition has a leader; the probe below runs meanwhile too.
- the case: full Metadata requests (v12, every topic) one after the other on a raw
  connection, `rounds` of them, each answer read whole as bytes. Meanwhile a child
  process sends ApiVersions v0 one at a time, a few ms apart, on a connection of its
  own (bench/coordinator_wire.py's probe) and times each answer: the slowest of them
  is how long the broker kept every other client waiting.

Reported per broker: the full Metadata answer (median and slowest), its size, the
broker's CPU per answer (from /proc), and the slowest and p99 ApiVersions answers
while the Metadata requests ran. Ratios are Odradek / Kafka (below 1: Odradek took
less). Results: a Markdown table on stdout and JSON in bench/results/metadata_scale.json.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.metadata.v12.response import MetadataResponse
from kio.serial import entity_reader

from bench.coordinator_load import Line, render_table
from bench.coordinator_wire import PROBE_GAP_S, Connection, Probe
from bench.peers import OTHER_CPU, AdminPeer, CpuMeter, OdradekPeer, Peer, percentile
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
    write_results,
)
from odradek.testing import Cluster

READY_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Settings:
    quick: bool
    topics: int
    partitions: int
    rounds: int
    cluster: bool = False

    @classmethod
    def make(
        cls, quick: bool, topics: int | None, partitions: int | None, cluster: bool = False
    ) -> Settings:
        topics, partitions = topics or (20 if quick else 100), partitions or 100
        return cls(quick, topics, partitions, 10 if quick else 30, cluster)


@dataclass
class Figures:
    create_s: float = 0.0
    slowest_probe_creating_ms: float = 0.0
    answers_ms: list[float] = field(default_factory=list)
    answer_bytes: int = 0
    broker_cpu_s: float = 0.0
    probes: int = 0
    slowest_probe_ms: float = 0.0
    p99_probe_ms: float = 0.0
    probe_failures: list[str] = field(default_factory=list)
    other_cpu_pct: float = 0.0


def full_metadata() -> MetadataRequest:
    return MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def ask(connection: Connection) -> bytes:
    """One full Metadata answer, as the bytes of its frame (not decoded: the client's
    decoding is not the broker's time)."""
    connection.send([full_metadata()])
    return connection.receive_frame()


def led_partitions(frame: bytes) -> int:
    """How many partitions of the answer have a leader (frame: response header v1)."""
    position = 4 + 1  # correlation id, then the header's empty tagged fields
    answer, _ = entity_reader(MetadataResponse)(frame, position)
    return sum(1 for t in answer.topics for p in t.partitions if p.leader_id >= 0)


def create_topics(settings: Settings, peer: Peer) -> None:
    for index in range(settings.topics):
        peer.create_topic(f"wide-{index:03d}", settings.partitions)
    wanted = settings.topics * settings.partitions
    connection = Connection(peer.bootstrap)
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while (led := led_partitions(ask(connection))) < wanted:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{peer.name}: {led} of {wanted} partitions have a leader")
            time.sleep(0.5)
    finally:
        connection.close()


def probe_answers_ms(result: dict[str, Any], began: float, ended: float) -> list[float]:
    """The probe's answers (ms) to requests sent between `began` and `ended`."""
    return [seconds * 1000 for sent, seconds in result["samples"] if began <= sent < ended]


def create_watched(run: Run, settings: Settings, peer: Peer, figures: Figures) -> None:
    """The topics created while the probe asks ApiVersions."""
    probe = Probe(run.python, int(peer.bootstrap.rsplit(":", 1)[1]))
    try:
        time.sleep(0.5)
        began = time.monotonic()
        create_topics(settings, peer)
        ended = time.monotonic()
    finally:
        result = probe.finish()
    figures.create_s = ended - began
    figures.slowest_probe_creating_ms = max(probe_answers_ms(result, began, ended), default=0.0)


def measure(run: Run, settings: Settings, peer: Peer, figures: Figures) -> None:
    probe = Probe(run.python, int(peer.bootstrap.rsplit(":", 1)[1]))
    connection = Connection(peer.bootstrap)
    try:
        time.sleep(0.5)  # the probe connects and answers a few first
        began = time.monotonic()
        with CpuMeter(peer.pid) as meter:
            for _ in range(settings.rounds):
                sent = time.perf_counter()
                frame = ask(connection)
                figures.answers_ms.append((time.perf_counter() - sent) * 1000)
                figures.answer_bytes = len(frame)
        ended = time.monotonic()
    finally:
        connection.close()
        result = probe.finish()
    figures.broker_cpu_s = meter.broker_seconds
    figures.other_cpu_pct = meter.other_pct
    during = probe_answers_ms(result, began, ended)
    figures.probes = len(during)
    figures.slowest_probe_ms = max(during, default=0.0)
    figures.p99_probe_ms = percentile(during, 0.99) if during else 0.0
    figures.probe_failures = result["failures"]


class ClusterPeer(AdminPeer):
    """Odradek as a cluster (--cluster): a controller and a broker, each a process of its
    own; the broker is the one measured, as it follows the controller's metadata."""

    name = "odradek"

    def __init__(self, workdir: Path) -> None:
        self.cluster = Cluster(1, workdir / "cluster").start()
        broker = self.cluster.nodes[1]
        assert broker.proc is not None
        self.proc, self.bootstrap, self.log_path = broker.proc, broker.bootstrap, broker.log_path

    def stop(self) -> None:
        self._admin = None
        self.cluster.close()


class MetadataBench:
    def __init__(self, run: Run, cluster: bool) -> None:
        self.settings: Settings = run.settings
        self.cluster = cluster
        self.brokers: dict[str, Peer] = {}
        self.figures: dict[str, Figures] = {}

    def start(self, run: Run, peers: list[Peer]) -> None:
        if self.cluster:
            peers.append(ClusterPeer(run.workdir))
        else:
            peers.append(OdradekPeer(run.python, run.workdir))
        start_kafka(run, peers)
        self.brokers = {peer.name: peer for peer in peers}

    def create_step(self, run: Run, peers: list[Peer]) -> None:
        for name, peer in self.brokers.items():
            figures = self.figures[name] = Figures()
            create_watched(run, self.settings, peer, figures)
            print(
                f"    {name}: topics created in {figures.create_s:.1f} s, ApiVersions slowest "
                f"{figures.slowest_probe_creating_ms:.1f} ms meanwhile",
                flush=True,
            )

    def measure_step(self, run: Run, peers: list[Peer]) -> None:
        for name, peer in self.brokers.items():
            done = self.figures[name]
            measure(run, self.settings, peer, done)
            check_peer(run, peer, "after the Metadata requests")
            print(
                f"    {name}: full Metadata median {statistics.median(done.answers_ms):.1f} ms, "
                f"slowest {max(done.answers_ms):.1f} ms, {done.answer_bytes:,} bytes; "
                f"ApiVersions slowest {done.slowest_probe_ms:.1f} ms "
                f"({done.probes} answers); broker CPU {done.broker_cpu_s:.2f} s",
                flush=True,
            )


def lines(bench: MetadataBench) -> list[Line]:
    f = bench.figures
    rounds = bench.settings.rounds
    figures: list[tuple[str, Any, str]] = [
        ("full Metadata answer, median", lambda x: statistics.median(x.answers_ms), "{:.1f} ms"),
        ("full Metadata answer, slowest", lambda x: max(x.answers_ms), "{:.1f} ms"),
        ("broker CPU per full Metadata", lambda x: x.broker_cpu_s / rounds * 1000, "{:.1f} ms"),
        ("slowest ApiVersions meanwhile", lambda x: x.slowest_probe_ms, "{:.1f} ms"),
        ("ApiVersions p99 meanwhile", lambda x: x.p99_probe_ms, "{:.1f} ms"),
        ("answer size", lambda x: x.answer_bytes / 1024, "{:.0f} KiB"),
        ("creating the topics (one CreateTopics each)", lambda x: x.create_s, "{:.1f} s"),
        ("slowest ApiVersions while creating", lambda x: x.slowest_probe_creating_ms, "{:.1f} ms"),
    ]
    out = []
    for what, value, fmt in figures:
        values = {name: float(value(x)) for name, x in f.items()}
        out.append(Line(what, values, {name: fmt.format(v) for name, v in values.items()}))
    return out


def report(run: Run, bench: MetadataBench, findings: list[str]) -> None:
    s = bench.settings
    elapsed = time.perf_counter() - run.began
    command = command_line()
    rows = lines(bench)
    table = render_table(rows)
    shape = (
        "Odradek as a cluster: a controller and a broker, each a process; the broker measured"
        if s.cluster
        else "Odradek as one node of its own"
    )
    notes = [
        shape + ". "
        f"{s.topics} topics x {s.partitions} partitions ({s.topics * s.partitions:,}); "
        f"{s.rounds} full Metadata v12 requests one after the other, each answer read as "
        f"bytes; ApiVersions v0 from a child process on a connection of its own, "
        f"{PROBE_GAP_S * 1000:.0f} ms apart, counted while the Metadata requests ran.",
        kafka_note(run),
        noise_note(),
    ]
    notes = [note for note in notes if note]
    text = "\n".join([table, "", *notes, "", f"command: `{command}`"])
    print()
    print(text)
    print_problems(run, findings)
    print(f"\ntook {elapsed:.0f}s")
    write_results(
        "metadata_scale_cluster" if s.cluster else "metadata_scale",
        {
            "command": command,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "seconds": round(elapsed, 1),
            "settings": asdict(s),
            "environment": environment(),
            "ratio_meaning": "Odradek / Kafka 4.4",
            "rows": [asdict(row) | {"ratio": row.ratio} for row in rows],
            "figures": {name: asdict(x) for name, x in bench.figures.items()},
            "notes": notes,
            "problems": run.problems,
            "other_cpu_pct_per_case": [round(v, 1) for v in OTHER_CPU],
            "odradek_log_findings": findings,
            **run.extra,
            "table_markdown": table,
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--topics", type=int, help="topics to create")
    parser.add_argument("--partitions", type=int, help="partitions per topic")
    parser.add_argument(
        "--cluster", action="store_true", help="Odradek as a controller and a broker"
    )
    args = parser.parse_args(argv)
    settings = Settings.make(args.quick, args.topics, args.partitions, args.cluster)
    run = start_run(settings, "metadata at scale", "odradek-bench-metadata-")
    bench = MetadataBench(run, args.cluster)
    steps: list[tuple[str, Step]] = [
        ("create the topics", bench.create_step),
        ("full Metadata", bench.measure_step),
    ]
    findings = run_steps(run, bench.start, steps)
    report(run, bench, findings)
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
