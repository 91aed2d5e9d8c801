"""Controller and broker failover: an Odradek cluster beside an Apache Kafka 4.4 cluster,
each of three controllers (a KRaft quorum) and three brokers, one after the other in
one run.

Run from the repository root (`make bench-failover`):

    .venv/bin/python -m bench.failover [--quick] [--repeats N] [--session-timeout-ms MS]

Both clusters run with the same settings: Kafka's defaults for the quorum
(controller.quorum.fetch.timeout.ms 2000, election.timeout.ms 1000,
election.backoff.max.ms 1000), for broker.session.timeout.ms (9000),
broker.heartbeat.interval.ms (2000) and replica.lag.time.max.ms (30000); replication
factor 3 and min.insync.replicas 2.

- controller failover: the quorum's leader (DescribeQuorum v2 through a broker) is
  killed with SIGKILL; from the kill, the time until a surviving controller answers
  DescribeQuorum as the leader (asked of each controller every 50 ms), until a broker's
  DescribeQuorum names the new leader (the broker forwards it to the active
  controller; asked every 50 ms, answers may overlap), and until a CreateTopics of a
  new topic (3 partitions, replication factor 3) through a broker succeeds (attempts one
  after the other, each with a 4 s timeout). The killed controller is then started
  again and the next repeat waits until every voter has caught up with the leader.
- broker failover: an idempotent acks=all librdkafka producer writes one partition
  (replication factor 3) every 5 ms; once 100 records are acknowledged the partition's
  leader is killed with SIGKILL; the time from the kill until Metadata from a surviving
  broker names a new leader, and until the first record sent after the kill is
  acknowledged. The producer's backoffs are capped (200 ms) so that what is measured is
  the cluster. The killed broker is then started again and the next repeat waits until
  it is back in the partition's ISR.

Reported per system: min / median / max seconds over the repeats (5; --quick: 1), the
ratio Odradek / Kafka of the medians (below 1: Odradek fails over faster), the CPU
seconds the surviving nodes spent from the kill to the end of each case (from /proc;
Kafka's: whole JVMs; per node in the JSON), the time to bring the killed node back,
the cluster's start time and its idle CPU once the cases are done (informative). The
two clusters run one after the other, never side by side; the machine's 1-minute load
average, sampled every 2 s during each cluster's cases, stands beside the figures (on 2
cores Kafka's six JVMs load the machine themselves). Results: a Markdown table on stdout and
bench/results/failover.json.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bench import reference_cluster, reference_kafka
from bench.failover_systems import (
    CASE_TIMEOUT_S,
    TOPIC_ALREADY_EXISTS,
    KafkaSystem,
    LoadSampler,
    OdradekSystem,
    System,
    any_of,
    cpu_spent,
    create_topic,
    first_true,
    partition_state,
    quorum_leader,
    topic_name,
    voters_caught_up,
)
from bench.peers import CLIENT_LOG, ErrorSink, client_config
from bench.replication import FAILOVER_PRODUCER
from bench.report import (
    arg_parser,
    broker_log_findings,
    command_line,
    environment,
    log_tail,
    write_results,
)

REJOIN_TIMEOUT_S = 180.0
ACKED_BEFORE_KILL = 100


@dataclass(frozen=True)
class Settings:
    quick: bool
    repeats: int
    session_timeout_ms: int
    heartbeat_interval_ms: int
    idle_seconds: float

    def cluster_settings(self) -> dict[str, str]:
        """What both clusters run with (the quorum's are Kafka's defaults, stated)."""
        return {
            "broker.session.timeout.ms": str(self.session_timeout_ms),
            "broker.heartbeat.interval.ms": str(self.heartbeat_interval_ms),
            "controller.quorum.fetch.timeout.ms": "2000",
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.election.backoff.max.ms": "1000",
            "replica.lag.time.max.ms": "30000",
            "default.replication.factor": "3",
            "min.insync.replicas": "2",
            "offsets.topic.replication.factor": "3",
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2",
        }


@dataclass
class ControllerFailover:
    killed: int
    new_leader: int
    elected_s: float  # kill to a surviving controller answering as the leader
    brokers_see_s: float  # kill to a broker's DescribeQuorum naming the new leader
    created_s: float  # kill to CreateTopics (RF 3) through a broker succeeding
    attempts: int  # CreateTopics requests sent
    cpu_s: float  # the surviving nodes, kill to created
    rejoined_s: float  # restart of the killed controller to every voter caught up
    cpu_by_node: dict[int, float] = field(default_factory=dict)


@dataclass
class BrokerFailover:
    killed: int
    new_leader: int
    elected_s: float  # kill to Metadata naming a new leader
    acknowledged_s: float  # kill to the first record sent after it acknowledged
    cpu_s: float  # the surviving nodes, kill to acknowledged (or elected, if later)
    rejoined_s: float  # restart of the killed broker to it back in the ISR
    cpu_by_node: dict[int, float] = field(default_factory=dict)


@dataclass
class SystemResult:
    name: str
    start_s: float = 0.0
    format_s: float = 0.0
    idle_cpu_pct: dict[str, float] = field(default_factory=dict)
    controller: list[ControllerFailover] = field(default_factory=list)
    broker: list[BrokerFailover] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    log_findings: list[str] = field(default_factory=list)
    load: list[float] = field(default_factory=list)  # the machine's, every 2 s of the cases


# ------------------------------------------------------------------ controller case


async def active_controller(system: System) -> int:
    for address in system.running(system.brokers).values():
        leader = await quorum_leader(address)
        if leader >= 0:
            return leader
    return -1


async def _controller_failover(system: System, old: int) -> ControllerFailover:
    survivors = [a for n, a in system.controllers.items() if n != old]
    brokers = list(system.brokers.values())
    new_leader: list[int] = []

    async def elected(address: tuple[str, int]) -> bool:
        leader = await quorum_leader(address)
        if leader not in (-1, old):
            new_leader.append(leader)
            return True
        return False

    async def broker_sees(address: tuple[str, int]) -> bool:
        return await quorum_leader(address) not in (-1, old)

    async def create() -> tuple[float, int]:
        topic = topic_name("controller")
        attempts = 0
        deadline = time.monotonic() + CASE_TIMEOUT_S
        while time.monotonic() < deadline:
            address = brokers[attempts % len(brokers)]
            attempts += 1
            if await create_topic(address, topic, 3, 3) in (0, TOPIC_ALREADY_EXISTS):
                return time.monotonic(), attempts
            await asyncio.sleep(0.05)
        raise TimeoutError(f"CreateTopics did not succeed within {CASE_TIMEOUT_S:.0f} s")

    cpu_before = system.cpu_seconds()
    killed_at = time.monotonic()
    system.kill(old)
    elected_at, seen_at, (created_at, attempts) = await asyncio.gather(
        first_true(lambda: any_of(survivors, elected), 0.05),
        first_true(lambda: any_of(brokers[:1], broker_sees), 0.05),
        create(),
    )
    by_node = cpu_spent(cpu_before, system.cpu_seconds())
    return ControllerFailover(
        killed=old,
        new_leader=new_leader[0],
        elected_s=round(elected_at - killed_at, 3),
        brokers_see_s=round(seen_at - killed_at, 3),
        created_s=round(created_at - killed_at, 3),
        attempts=attempts,
        cpu_s=round(sum(by_node.values()), 2),
        rejoined_s=0.0,
        cpu_by_node=by_node,
    )


def controller_failover(system: System) -> ControllerFailover:
    old = asyncio.run(active_controller(system))
    if old not in system.controllers:
        raise RuntimeError(f"no active controller found (DescribeQuorum answered {old})")
    result = asyncio.run(_controller_failover(system, old))
    restarted = time.monotonic()
    system.restart(old)
    since_ms = int(time.time() * 1000)
    brokers = list(system.brokers.values())
    asyncio.run(first_true(lambda: voters_caught_up(brokers[0], since_ms), 0.2, REJOIN_TIMEOUT_S))
    result.rejoined_s = round(time.monotonic() - restarted, 2)
    return result


# ---------------------------------------------------------------------- broker case


class Watch:
    """Notes when Metadata from a surviving broker first names a leader other than
    `old` (in a thread of its own, beside the producer)."""

    def __init__(self, system: System, topic: str, old: int) -> None:
        self.system, self.topic, self.old = system, topic, old
        self.elected_at = 0.0
        self.new_leader = -1
        self.failure: Exception | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join(CASE_TIMEOUT_S + 10)

    def _run(self) -> None:
        survivors = [a for n, a in self.system.brokers.items() if n != self.old]

        async def elected(address: tuple[str, int]) -> bool:
            leader, _ = await partition_state(address, self.topic, 0)
            if leader not in (-1, self.old):
                self.new_leader = leader
                return True
            return False

        try:
            self.elected_at = asyncio.run(first_true(lambda: any_of(survivors, elected), 0.05))
        except Exception as exc:  # the producer's side reports it
            self.failure = exc


def _produce_through_kill(system: System, topic: str, old: int) -> tuple[float, float, Watch]:
    """Writes until a record sent after the kill is acknowledged: (kill, that ack)."""
    sink = ErrorSink()
    producer = Producer(client_config(system.bootstrap_servers, sink, **FAILOVER_PRODUCER))
    watch = Watch(system, topic, old)
    acked: list[float] = []
    killed_at = 0.0
    first_after: list[float] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            return
        acked.append(1.0)
        if killed_at and not first_after and float(message.value()) > killed_at:
            first_after.append(time.monotonic())

    deadline = time.monotonic() + CASE_TIMEOUT_S
    while not first_after and time.monotonic() < deadline:
        producer.produce(topic, str(time.monotonic()).encode(), partition=0, on_delivery=delivered)
        producer.poll(0.005)
        if not killed_at and len(acked) >= ACKED_BEFORE_KILL:
            killed_at = time.monotonic()
            system.kill(old)
            watch.start()
    producer.flush(30)
    if not first_after:
        raise TimeoutError(
            f"no record sent after the kill acknowledged within {CASE_TIMEOUT_S:.0f} s "
            f"({len(acked)} acknowledged in all; client errors: {sink.errors[-5:]})"
        )
    return killed_at, first_after[0], watch


def broker_failover(system: System, topic: str) -> BrokerFailover:
    address = next(iter(system.brokers.values()))
    old, isr = asyncio.run(partition_state(address, topic, 0))
    if old < 0 or len(isr) < 3:
        raise RuntimeError(f"{topic}-0 is not fully replicated: leader {old}, ISR {isr}")
    cpu_before = system.cpu_seconds()
    killed_at, acked_at, watch = _produce_through_kill(system, topic, old)
    watch.join()
    if watch.failure is not None or not watch.elected_at:
        raise RuntimeError(f"Metadata named no new leader: {watch.failure!r}")
    by_node = cpu_spent(cpu_before, system.cpu_seconds())
    restarted = time.monotonic()
    system.restart(old)
    wait_for_full_isr(system, topic)
    return BrokerFailover(
        killed=old,
        new_leader=watch.new_leader,
        elected_s=round(watch.elected_at - killed_at, 3),
        acknowledged_s=round(acked_at - killed_at, 3),
        cpu_s=round(sum(by_node.values()), 2),
        rejoined_s=round(time.monotonic() - restarted, 2),
        cpu_by_node=by_node,
    )


def wait_for_full_isr(system: System, topic: str) -> None:
    brokers = list(system.brokers.values())

    async def full(address: tuple[str, int]) -> bool:
        leader, isr = await partition_state(address, topic, 0)
        return leader >= 0 and isr == sorted(system.brokers)

    asyncio.run(first_true(lambda: any_of(brokers, full), 0.2, REJOIN_TIMEOUT_S))


def create_replicated_topic(system: System) -> str:
    topic = topic_name("broker")
    address = next(iter(system.brokers.values()))
    error = asyncio.run(create_topic(address, topic, 1, 3))
    if error:
        raise RuntimeError(f"CreateTopics answered error {error}")
    wait_for_full_isr(system, topic)
    return topic


# ------------------------------------------------------------------------ the run


def idle_cpu(system: System, seconds: float) -> dict[str, float]:
    """% of one core the controllers and the brokers use while nothing is asked."""
    before = system.cpu_seconds()
    time.sleep(seconds)
    spent = cpu_spent(before, system.cpu_seconds())
    controllers = sum(v for n, v in spent.items() if n in system.controllers)
    brokers = sum(v for n, v in spent.items() if n in system.brokers)
    return {
        "controllers": round(controllers / seconds * 100, 1),
        "brokers": round(brokers / seconds * 100, 1),
    }


def measure(system: System, settings: Settings) -> SystemResult:
    result = SystemResult(system.name)
    print(f"  {system.label}: starting 3 controllers and 3 brokers", flush=True)
    try:
        system.start()
    except Exception as exc:
        result.problems.append(f"{system.label} did not start: {str(exc)[-3000:]}")
        system.stop()
        return result
    result.start_s, result.format_s = round(system.start_seconds, 2), system.format_seconds
    try:
        with LoadSampler(result.load):
            run_cases(system, settings, result)
    except Exception as exc:  # what was measured so far is reported
        result.problems.append(f"{system.label}: run aborted: {exc!r}")
        for node_id, path in system.log_paths().items():
            result.problems.append(f"{system.label} node {node_id} log tail:\n{log_tail(path)}")
    finally:
        system.stop()
    result.log_findings = log_findings(system)
    return result


def run_cases(system: System, settings: Settings, result: SystemResult) -> None:
    for repeat in range(settings.repeats):
        print(f"  {system.label}: controller failover {repeat + 1}", flush=True)
        result.controller.append(controller_failover(system))
        print(f"    {result.controller[-1]}", flush=True)
    topic = create_replicated_topic(system)
    for repeat in range(settings.repeats):
        print(f"  {system.label}: broker failover {repeat + 1}", flush=True)
        result.broker.append(broker_failover(system, topic))
        print(f"    {result.broker[-1]}", flush=True)
    result.idle_cpu_pct = idle_cpu(system, settings.idle_seconds)  # warm by now


def log_findings(system: System, limit: int = 5) -> list[str]:
    """Odradek's warning and error lines; Kafka's ERROR lines; per node."""
    found: list[str] = []
    for node_id, path in system.log_paths().items():
        if system.name == "odradek":  # the harness's own "====" lines left out
            lines = [n for n in broker_log_findings(path, 100) if not n.startswith("====")]
            lines = lines[:limit]
        else:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            lines = [line for line in text.splitlines() if "] ERROR " in line][:limit]
        found.extend(f"node {node_id}: {line[:300]}" for line in lines)
    return found


# ------------------------------------------------------------------------- report

CASES: list[tuple[str, str, str]] = [
    ("controller", "elected_s", "controller failover: kill -9 to a new quorum leader"),
    ("controller", "brokers_see_s", "controller failover: kill -9 to a broker naming it"),
    ("controller", "created_s", "controller failover: kill -9 to CreateTopics (RF 3) done"),
    ("controller", "cpu_s", "controller failover: CPU s of the 5 surviving nodes, to created"),
    ("controller", "rejoined_s", "controller restart to every voter caught up (informative)"),
    ("broker", "elected_s", "broker failover: kill -9 to Metadata naming the new leader"),
    ("broker", "acknowledged_s", "broker failover: kill -9 to the first acks=all after it"),
    ("broker", "cpu_s", "broker failover: CPU s of the 5 surviving nodes, to acknowledged"),
    ("broker", "rejoined_s", "broker restart to back in the ISR (informative)"),
]


@dataclass
class Line:
    case: str
    values: dict[str, list[float]]
    compared: bool = True

    @property
    def ratio(self) -> float | None:
        odradek, kafka = self.values.get("odradek"), self.values.get("kafka")
        if not self.compared or not odradek or not kafka or not statistics.median(kafka):
            return None
        return statistics.median(odradek) / statistics.median(kafka)

    def text(self, name: str) -> str:
        values = self.values.get(name)
        if not values:
            return "failed"
        if len(values) == 1:
            return f"{values[0]:.2f}"
        return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def lines(results: dict[str, SystemResult]) -> list[Line]:
    out = []
    for kind, attribute, case in CASES:
        values = {
            name: [float(getattr(r, attribute)) for r in getattr(result, kind)]
            for name, result in results.items()
        }
        out.append(Line(case, values))
    out.append(
        Line(
            "cluster start, s: spawn to every broker registered (informative)",
            {n: [r.start_s] for n, r in results.items() if r.start_s},
        )
    )
    out.append(
        Line(
            "the machine's 1-min load average during the cases (not compared)",
            {n: [round(v, 2) for v in r.load] for n, r in results.items() if r.load},
            compared=False,
        )
    )
    for part in ("controllers", "brokers"):
        out.append(
            Line(
                f"idle CPU of the 3 {part} after the cases, % of one core (informative)",
                {n: [r.idle_cpu_pct[part]] for n, r in results.items() if r.idle_cpu_pct},
            )
        )
    return out


def render(rows: list[Line]) -> str:
    table = [
        "| case | Odradek min / median / max | Kafka 4.4 min / median / max | Odradek / Kafka |",
        "|---|---|---|---|",
    ]
    for row in rows:
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}"
        table.append(f"| {row.case} | {row.text('odradek')} | {row.text('kafka')} | {ratio} |")
    return "\n".join(table)


def report(settings: Settings, results: dict[str, SystemResult], began: float) -> None:
    rows = lines(results)
    table = render(rows)
    kafka = results.get("kafka")
    notes = [
        "Seconds unless stated; Odradek / Kafka is the ratio of the medians (below 1 "
        f"Odradek is faster or uses less). {settings.repeats} repeat(s) per case. Both "
        f"clusters: {settings.cluster_settings()}.",
        f"Kafka {reference_kafka.VERSION}: 6 JVMs, controllers java "
        f"{reference_cluster.CONTROLLER_HEAP}, brokers java {reference_kafka.HEAP}"
        + (f"; its storage formats took {kafka.format_s:.1f} s of its start" if kafka else "")
        + ". CPU from /proc (user + system; Kafka's: whole JVMs).",
    ]
    load = os.getloadavg()
    text = "\n".join([table, "", *notes, "", f"command: `{command_line()}`"])
    print()
    print(text)
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for result in results.values():
        for problem in result.problems:
            print(f"- problem: {problem}")
        for line in result.log_findings[:20]:
            print(f"  {result.name} log: {line}")
    if CLIENT_LOG.lines:
        print(f"librdkafka warnings: {len(CLIENT_LOG.lines)} (in the JSON)")
    elapsed = time.perf_counter() - began
    print(f"\ntook {elapsed:.0f}s")
    document = {
        "command": command_line(),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(elapsed, 1),
        "settings": asdict(settings) | {"cluster": settings.cluster_settings()},
        "environment": environment(kafka=reference_kafka.VERSION),
        "ratio_meaning": "Odradek / Kafka 4.4 of the medians, below 1 Odradek is better",
        "rows": [{"case": r.case, "values": r.values, "ratio": r.ratio} for r in rows],
        "results": {name: asdict(result) for name, result in results.items()},
        "notes": notes,
        "loadavg_at_end": load,
        "librdkafka_warnings": CLIENT_LOG.lines,
        "table_markdown": table,
    }
    write_results("failover", document)


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--repeats", type=int, help="failovers per case (5; --quick: 1)")
    parser.add_argument("--session-timeout-ms", type=int, default=9000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=2000)
    parser.add_argument(
        "--only", choices=["odradek", "kafka"], help="one system (no ratios; for development)"
    )
    args = parser.parse_args(argv)
    settings = Settings(
        quick=args.quick,
        repeats=args.repeats or (1 if args.quick else 5),
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        idle_seconds=5.0 if args.quick else 10.0,
    )
    began = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="odradek-bench-failover-"))
    print(f"odradek failover bench ({'quick' if args.quick else 'full'}), work dir {workdir}")
    systems: list[tuple[str, Callable[[Path, dict[str, str]], System]]] = [
        ("odradek", OdradekSystem),
        ("kafka", KafkaSystem),
    ]
    results: dict[str, SystemResult] = {}
    for name, make in systems:
        if args.only and name != args.only:
            continue
        if name == "kafka" and not reference_kafka.available():
            results[name] = SystemResult(
                name, problems=[f"Kafka not installed in {reference_kafka.LIB} or no java"]
            )
            continue
        results[name] = measure(make(workdir / name, settings.cluster_settings()), settings)
    report(settings, results, began)
    if args.keep:
        print(f"kept {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(not r.problems for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
