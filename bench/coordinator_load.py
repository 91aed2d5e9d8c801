"""Group coordinator load: how a broker answers while it loads a large
__consumer_offsets, Odradek beside Apache Kafka 4.4 in one run.

Run from the repository root (`make bench-coordinator-load`):

    .venv/bin/python -m bench.coordinator_load [--quick] [--groups G] [--records N]

- fill: on each broker (a fresh data dir each), simple-group offset commits
  (OffsetCommit v8, generation -1, no member) of every partition of a 50-partition
  topic, one group per request, pipelined over one raw connection, round after round
  over all groups until __consumer_offsets holds `records` offset records (2,000
  groups and 1,000,000 records; --quick: 200 and 50,000).
- restart: the broker is stopped with SIGTERM and started again, then killed with
  SIGKILL and started again. From the moment the port accepts, a child process sends
  ApiVersions v0 requests one at a time (a few ms apart) and times each answer, while
  this process asks OffsetFetch v8 for every group (batches of groups, one partition
  each) until none answers COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR or
  COORDINATOR_NOT_AVAILABLE: "all groups ready". Then a sample of groups is fetched
  whole and checked against the last offsets committed. (The raw connection and the
  probe: bench/coordinator_wire.py.)

Reported per broker and restart: the slowest ApiVersions answer and the p99 while the
groups were loading, seconds from the port accepting to all groups ready, spawn to
accepting, and the broker's CPU seconds (from /proc: spawn to all groups ready, and
accepting to all groups ready); with what each broker's log says of the load. Ratios
are Odradek / Kafka. Results: a Markdown table on stdout and JSON in
bench/results/coordinator_load.json.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v4.response import FindCoordinatorResponse
from kio.schema.offset_commit.v8.response import OffsetCommitResponse
from kio.schema.offset_fetch.v8.response import OffsetFetchResponse

from bench.coordinator_wire import (
    PROBE_GAP_S,
    Connection,
    Probe,
    commit_request,
    fetch_request,
    group_error,
)
from bench.peers import (
    OTHER_CPU,
    CpuMeter,
    OdradekPeer,
    Peer,
    percentile,
    process_cpu_seconds,
)
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

PARTITIONS = 50
IN_FLIGHT = 64  # pipelined commit requests
FETCH_BATCH = 50  # groups per readiness OffsetFetch
VERIFY_GROUPS = 200
POLL_GAP_S = 0.02
READY_TIMEOUT_S = 600.0
NOT_READY = {14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE",
             16: "NOT_COORDINATOR"}  # fmt: skip
RESTARTS = {"stop": "SIGTERM", "kill": "kill -9"}
BROKERS = ("odradek", "kafka")


@dataclass(frozen=True)
class Settings:
    quick: bool
    groups: int
    records: int
    partitions: int = PARTITIONS

    @property
    def rounds(self) -> int:
        return max(1, self.records // (self.groups * self.partitions))

    @classmethod
    def make(cls, quick: bool, groups: int | None, records: int | None) -> Settings:
        default_groups, default_records = (200, 50_000) if quick else (2_000, 1_000_000)
        return cls(quick, groups or default_groups, records or default_records)


def group_name(index: int) -> str:
    return f"load-{index:05d}"


def committed(settings: Settings, round_: int, group: int, partition: int) -> int:
    """The offset a round commits: unique per round, group and partition."""
    return (round_ * settings.groups + group) * settings.partitions + partition


def commit(settings: Settings, topic: str, round_: int, group: int) -> Any:
    offsets = [committed(settings, round_, group, p) for p in range(settings.partitions)]
    return commit_request(group_name(group), topic, offsets)


def fetch(groups: list[int], topic: str, partitions: tuple[int, ...] | None) -> Any:
    return fetch_request([group_name(g) for g in groups], topic, partitions)


# --------------------------------------------------------------------------- the cases


@dataclass
class Fill:
    records: int
    seconds: float
    broker_cpu_s: float

    @property
    def per_s(self) -> float:
        return self.records / self.seconds


@dataclass
class Restart:
    stop_s: float = 0.0  # how long the SIGTERM stop took (0 for kill -9)
    accept_s: float = 0.0  # spawn to the port accepting
    ready_s: float = 0.0  # port accepting to every group answering
    probes: int = 0
    slowest_ms: float = 0.0
    slowest_at_s: float = 0.0  # when that request was sent, after the port accepted
    first_ms: float = 0.0  # the first answer's
    p99_ms: float = 0.0
    p50_ms: float = 0.0
    probe_failures: list[str] = field(default_factory=list)
    cpu_s: float = 0.0  # the new process's CPU, spawn to every group answering
    cpu_after_accept_s: float = 0.0
    not_ready_answers: dict[str, int] = field(default_factory=dict)
    other_errors: dict[str, int] = field(default_factory=dict)
    verified_groups: int = 0
    mismatches: list[str] = field(default_factory=list)
    loaded: dict[str, float] = field(default_factory=dict)  # from the broker's log


def find_coordinators(settings: Settings, peer: Peer) -> None:
    """FindCoordinator for every group until each has one: Kafka creates
    __consumer_offsets on the first, and answers commits NOT_COORDINATOR until then."""
    keys = tuple(group_name(g) for g in range(settings.groups))
    deadline = time.monotonic() + 60
    connection = Connection(peer.bootstrap)
    try:
        while True:
            request = FindCoordinatorRequest(coordinator_keys=keys)
            reply = connection.call(request, FindCoordinatorResponse)
            codes = Counter(int(c.error_code) for c in reply.coordinators)
            if set(codes) == {0}:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{peer.name}: FindCoordinator answered {dict(codes)}")
            time.sleep(0.1)
    finally:
        connection.close()


def fill(settings: Settings, peer: Peer, topic: str) -> Fill:
    find_coordinators(settings, peer)
    wait_ready(settings, peer, topic, Restart())
    requests = [
        (round_, group) for round_ in range(settings.rounds) for group in range(settings.groups)
    ]
    connection = Connection(peer.bootstrap)
    try:
        with CpuMeter(peer.pid) as meter:
            began = time.perf_counter()
            for first in range(0, len(requests), IN_FLIGHT):
                batch = requests[first : first + IN_FLIGHT]
                connection.send([commit(settings, topic, r, g) for r, g in batch])
                for _ in batch:
                    reply = connection.receive(OffsetCommitResponse)
                    codes = {int(p.error_code) for t in reply.topics for p in t.partitions}
                    if codes != {0}:
                        raise RuntimeError(f"{peer.name}: OffsetCommit answered {codes}")
            seconds = time.perf_counter() - began
    finally:
        connection.close()
    return Fill(len(requests) * settings.partitions, seconds, meter.broker_seconds)


def wait_ready(settings: Settings, peer: Peer, topic: str, result: Restart) -> float:
    """Poll until every group answers OffsetFetch without a loading error; returns the
    monotonic time then."""
    pending = list(range(settings.groups))
    not_ready: Counter[str] = Counter()
    others: Counter[str] = Counter()
    deadline = time.monotonic() + READY_TIMEOUT_S
    connection: Connection | None = None
    try:
        while pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{peer.name}: {len(pending)} groups not ready after load")
            if connection is None:
                connection = Connection(peer.bootstrap)
            still: list[int] = []
            try:
                for first in range(0, len(pending), FETCH_BATCH):
                    batch = pending[first : first + FETCH_BATCH]
                    reply = connection.call(fetch(batch, topic, (0,)), OffsetFetchResponse)
                    codes = {str(g.group_id): group_error(g) for g in reply.groups}
                    for index in batch:
                        code = codes.get(group_name(index), -1)
                        if code:
                            still.append(index)
                            counts = not_ready if code in NOT_READY else others
                            counts[NOT_READY.get(code, str(code))] += 1
            except OSError as exc:
                others[type(exc).__name__] += 1
                connection.close()
                connection = None
                still = pending
            pending = still
            if pending:
                time.sleep(POLL_GAP_S)
        ready = time.monotonic()
    finally:
        if connection is not None:
            connection.close()
    result.not_ready_answers = dict(not_ready)
    result.other_errors = dict(others)
    return ready


def verify(settings: Settings, peer: Peer, topic: str, result: Restart) -> None:
    """The last round's offsets, every partition, for a sample of the groups."""
    step = max(1, settings.groups // VERIFY_GROUPS)
    sample = list(range(0, settings.groups, step))
    last = settings.rounds - 1
    connection = Connection(peer.bootstrap)
    try:
        for first in range(0, len(sample), 10):
            batch = sample[first : first + 10]
            reply = connection.call(fetch(batch, topic, None), OffsetFetchResponse)
            for group in reply.groups:
                index = int(str(group.group_id).rsplit("-", 1)[1])
                found = {
                    int(p.partition_index): int(p.committed_offset)
                    for t in group.topics
                    if t.name == topic
                    for p in t.partitions
                }
                expected = {
                    p: committed(settings, last, index, p) for p in range(settings.partitions)
                }
                if found != expected or group.error_code:
                    wrong = sorted(p for p in expected if found.get(p) != expected[p])
                    result.mismatches.append(
                        f"{group.group_id}: error {int(group.error_code)}, partitions {wrong[:5]} "
                        f"(e.g. {found.get(wrong[0]) if wrong else None} for "
                        f"{expected[wrong[0]] if wrong else None})"
                    )
            result.verified_groups += len(batch)
    finally:
        connection.close()


KAFKA_LOADED = re.compile(
    r"Finished loading of metadata from __consumer_offsets-\d+ with epoch \d+ in (\d+)ms "
    r"where \d+ms was spent in the scheduler\. Loaded (\d+) records"
)


def loaded_from_log(peer: Peer, since: int) -> dict[str, float]:
    """Partitions of __consumer_offsets loaded, records replayed and the slowest
    partition's milliseconds, from what the broker logged after byte `since`."""
    with open(peer.log_path, "rb") as log:
        log.seek(since)
        text = log.read().decode(errors="replace")
    loads: list[tuple[float, int]] = []
    if peer.name == "kafka":
        loads = [(float(ms), int(n)) for ms, n in KAFKA_LOADED.findall(text)]
    else:
        for line in text.splitlines():
            if '"shard loaded"' not in line:
                continue
            entry = json.loads(line)
            if entry.get("topic") == "__consumer_offsets":
                loads.append((float(entry["ms"]), int(entry["records"])))
    if not loads:
        return {}
    return {
        "partitions": len(loads),
        "records": sum(n for _, n in loads),
        "slowest_partition_ms": max(ms for ms, _ in loads),
        "sum_ms": sum(ms for ms, _ in loads),
    }


def restart(run: Run, peer: Peer, kind: str, topic: str) -> Restart:
    settings: Settings = run.settings
    result = Restart()
    if kind == "stop":
        began = time.perf_counter()
        peer.stop()
        result.stop_s = time.perf_counter() - began
    else:
        peer.kill()
    since = peer.log_path.stat().st_size if peer.log_path.exists() else 0
    probe = Probe(run.python, int(peer.bootstrap.rsplit(":", 1)[1]))
    try:
        peer.restart()
        result.accept_s = peer.startup_s
        with CpuMeter(peer.pid) as meter:
            ready = wait_ready(settings, peer, topic, result)
            result.cpu_s = process_cpu_seconds(peer.pid)
    finally:
        probed = probe.finish()
    result.cpu_after_accept_s = meter.broker_seconds
    accepted = probed["accepted"] or ready
    result.ready_s = ready - accepted
    timed = [(sent - accepted, seconds * 1000) for sent, seconds in probed["samples"]]
    during = [ms for at, ms in timed if at <= result.ready_s]
    result.probes = len(during)
    result.probe_failures = probed["failures"][:20]
    if during:
        result.slowest_at_s, result.slowest_ms = max(timed[: len(during)], key=lambda t: t[1])
        result.first_ms = during[0]
        result.p99_ms = percentile(during, 99)
        result.p50_ms = percentile(during, 50)
    verify(settings, peer, topic, result)
    if result.mismatches:
        run.problems.append(
            f"{peer.name} after {RESTARTS[kind]}: {len(result.mismatches)} groups do not "
            f"have their last commits: {result.mismatches[:3]}"
        )
    time.sleep(0.5)  # the log line of the last partition loaded may trail its answer
    result.loaded = loaded_from_log(peer, since)
    return result


class CoordinatorLoadBench:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.settings: Settings = run.settings
        self.topic = "load"
        self.brokers: dict[str, Peer] = {}
        self.fills: dict[str, Fill] = {}
        self.restarts: dict[tuple[str, str], Restart] = {}

    def start(self, run: Run, peers: list[Peer]) -> None:
        peers.append(OdradekPeer(run.python, run.workdir))
        start_kafka(run, peers)
        self.brokers = {peer.name: peer for peer in peers}

    def fill_step(self, run: Run, peers: list[Peer]) -> None:
        for name, peer in self.brokers.items():
            peer.create_topic(self.topic, self.settings.partitions)
            done = fill(self.settings, peer, self.topic)
            self.fills[name] = done
            print(
                f"    {name}: {done.records:,} records in {done.seconds:.1f} s "
                f"({done.per_s:,.0f}/s), broker CPU {done.broker_cpu_s:.1f} s",
                flush=True,
            )

    def restart_step(self, kind: str) -> Step:
        def step(run: Run, peers: list[Peer]) -> None:
            for name, peer in self.brokers.items():
                done = restart(run, peer, kind, self.topic)
                self.restarts[(name, kind)] = done
                check_peer(run, peer, f"after {RESTARTS[kind]}")
                print(
                    f"    {name}: accepting after {done.accept_s:.2f} s, all groups ready "
                    f"{done.ready_s:.2f} s later; ApiVersions slowest {done.slowest_ms:.1f} ms, "
                    f"p99 {done.p99_ms:.1f} ms ({done.probes} answers); CPU {done.cpu_s:.1f} s; "
                    f"log: {done.loaded}",
                    flush=True,
                )

        return step


# --------------------------------------------------------------------------- the report


@dataclass
class Line:
    case: str
    values: dict[str, float]
    texts: dict[str, str]

    @property
    def ratio(self) -> float | None:
        ours, theirs = self.values.get("odradek"), self.values.get("kafka")
        return ours / theirs if ours is not None and theirs else None


def lines(bench: CoordinatorLoadBench) -> list[Line]:
    s = bench.settings
    out = [
        Line(
            f"fill: {s.records:,} offset records ({s.groups} groups x {s.partitions} "
            f"partitions x {s.rounds}), records/s",
            {name: f.per_s for name, f in bench.fills.items()},
            {
                name: f"{f.per_s:,.0f}/s ({f.seconds:.1f} s, broker CPU {f.broker_cpu_s:.1f} s)"
                for name, f in bench.fills.items()
            },
        )
    ]
    figures: list[tuple[str, str, str]] = [
        ("accept_s", "spawn to the port accepting", "{:.2f} s"),
        ("ready_s", f"all {s.groups} groups ready, after the port accepted", "{:.2f} s"),
        ("slowest_ms", "slowest ApiVersions while loading", "{:.1f} ms"),
        ("p99_ms", "ApiVersions p99 while loading", "{:.1f} ms"),
        ("cpu_s", "broker CPU, spawn to all groups ready", "{:.2f} s"),
        ("cpu_after_accept_s", "broker CPU, port accepting to all groups ready", "{:.2f} s"),
    ]
    for kind, label in RESTARTS.items():
        done = {name: r for (name, k), r in bench.restarts.items() if k == kind}
        for attribute, what, fmt in figures:
            values = {name: float(getattr(r, attribute)) for name, r in done.items()}
            texts = {name: fmt.format(v) for name, v in values.items()}
            if attribute == "slowest_ms":
                texts = {
                    n: f"{t} at {done[n].slowest_at_s:.2f} s ({done[n].probes} answers, the "
                    f"first in {done[n].first_ms:.0f} ms)"
                    for n, t in texts.items()
                }
            out.append(Line(f"after {label}: {what}", values, texts))
        logged = {name: r.loaded for name, r in done.items() if r.loaded}
        out.append(
            Line(
                f"after {label}: load in the broker's log, slowest partition",
                {name: v["slowest_partition_ms"] for name, v in logged.items()},
                {
                    name: f"{v['slowest_partition_ms']:.0f} ms ({v['records']:,.0f} records, "
                    f"{v['partitions']:.0f} partition loads)"
                    for name, v in logged.items()
                },
            )
        )
    return out


def render_table(rows: list[Line]) -> str:
    table = ["| case | Odradek | Kafka 4.4 | Odradek / Kafka |", "|---|---|---|---|"]
    for row in rows:
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}"
        cells = [row.texts.get(name, "failed") for name in BROKERS]
        table.append(f"| {row.case} | {' | '.join(cells)} | {ratio} |")
    return "\n".join(table)


def report(run: Run, bench: CoordinatorLoadBench, findings: list[str]) -> None:
    elapsed = time.perf_counter() - run.began
    command = command_line()
    rows = lines(bench)
    table = render_table(rows)
    notes = [
        "Odradek / Kafka: below 1 Odradek took less (time, CPU), above 1 it filled faster. "
        f"ApiVersions v0 one at a time, {PROBE_GAP_S * 1000:.0f} ms apart, from a child "
        "process that connected as soon as the port accepted; 'while loading' counts the "
        "answers to requests sent before all groups were ready. A group is ready when "
        f"OffsetFetch v8 (batches of {FETCH_BATCH} groups, polled every "
        f"{POLL_GAP_S * 1000:.0f} ms) answers it without error; the CPU is the broker "
        "process's (Kafka: the whole JVM, start-up included). The log row: each broker's "
        'own line per __consumer_offsets partition loaded (Odradek\'s "shard loaded", '
        'Kafka\'s "Finished loading of metadata"); the partitions load side by side. After '
        "kill -9 Kafka loads each partition twice, once before its port accepts and again "
        "with a new leader epoch; both count.",
        kafka_note(run),
        noise_note(),
    ]
    notes = [note for note in notes if note]
    text = "\n".join([table, "", *notes, "", f"command: `{command}`"])
    print()
    print(text)
    print_problems(run, findings)
    print(f"\ntook {elapsed:.0f}s")
    document = {
        "command": command,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(elapsed, 1),
        "settings": asdict(run.settings) | {"rounds": bench.settings.rounds},
        "environment": environment(),
        "ratio_meaning": "Odradek / Kafka 4.4",
        "rows": [asdict(row) | {"ratio": row.ratio} for row in rows],
        "fills": {name: asdict(f) | {"per_s": f.per_s} for name, f in bench.fills.items()},
        "restarts": {f"{n}/{k}": asdict(r) for (n, k), r in bench.restarts.items()},
        "notes": notes,
        "problems": run.problems,
        "other_cpu_pct_per_case": [round(v, 1) for v in OTHER_CPU],
        "odradek_log_findings": findings,
        **run.extra,
        "table_markdown": table,
    }
    write_results("coordinator_load", document)


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--groups", type=int, help="groups to commit for (a smaller run)")
    parser.add_argument("--records", type=int, help="offset records in all (a smaller run)")
    args = parser.parse_args(argv)
    settings = Settings.make(args.quick, args.groups, args.records)
    run = start_run(settings, "coordinator load", "odradek-bench-coordload-")
    bench = CoordinatorLoadBench(run)
    steps: list[tuple[str, Step]] = [
        ("fill __consumer_offsets", bench.fill_step),
        ("restart after SIGTERM", bench.restart_step("stop")),
        ("restart after kill -9", bench.restart_step("kill")),
    ]
    findings = run_steps(run, bench.start, steps)
    report(run, bench, findings)
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
