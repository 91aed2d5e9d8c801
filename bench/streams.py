"""Kafka Streams benchmark: the orders application of tests/streams/ (Kafka Streams 4.4,
exactly_once_v2) on Odradek and on Apache Kafka 4.4, in the same run.

Run from the repository root, after `make install-test` has built the application:

    .venv/bin/python -m bench.streams [--quick]

- throughput: one instance (two stream threads) is running and idle; the whole input
  (orders and the customers table) is then produced at once, and the clock stops when
  a read_committed consumer has seen every order's enriched record. Input records/s,
  and the broker's CPU (process CPU from /proc; Kafka's whole JVM) per 1000 orders.
  Once with the classic group protocol, once with the streams protocol (KIP-1071).
- recovery: two instances, orders arriving at a steady rate; one instance is killed
  with SIGKILL. The time from the kill until the committed output holds every order
  produced before the kill: the broker's defaults decide it (the session timeout, 45 s
  on both brokers and both protocols, before the dead member's tasks move). The median
  of three kills (one with --quick): a member expires 45 s after its last heartbeat,
  which came up to a heartbeat interval before the kill.

Ratios are oriented so that >1 means Odradek is better.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer

from bench.peers import KafkaPeer, OdradekPeer, process_cpu_seconds, venv_python
from bench.reference_kafka import HEAP, VERSION
from bench.streams_app import AppProcess, built, create_topics, input_producer

REPO = Path(__file__).resolve().parent.parent
CUSTOMERS = 12
RESULTS = REPO / "bench" / "results" / "streams.json"


@dataclass
class Settings:
    orders: int
    recovery_rate: int  # orders/s while an instance is killed
    recovery_before_kill_s: float
    recovery_repeats: int  # the time to a member's expiry depends on its last heartbeat

    @classmethod
    def make(cls, quick: bool) -> Settings:
        if quick:
            return cls(
                orders=5_000, recovery_rate=200, recovery_before_kill_s=8, recovery_repeats=1
            )
        return cls(orders=30_000, recovery_rate=500, recovery_before_kill_s=15, recovery_repeats=3)


@dataclass
class Throughput:
    orders: int
    seconds: float
    broker_cpu_s: float

    @property
    def per_second(self) -> float:
        return self.orders / self.seconds

    @property
    def cpu_ms_per_1000(self) -> float:
        return 1_000_000 * self.broker_cpu_s / self.orders


@dataclass
class Results:
    peers: dict[str, dict[str, float]] = field(default_factory=dict)


class Instance:
    """One instance of the application, two stream threads."""

    def __init__(self, bootstrap: str, app_id: str, prefix: str, state: Path, protocol: str):
        args = [f"bootstrap={bootstrap}", f"application.id={app_id}", f"prefix={prefix}"]
        args += [f"state.dir={state}", "threads=2", f"group.protocol={protocol}"]
        self.process = AppProcess("java", args, state.with_suffix(".log"))

    def wait_running(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while "RUNNING" not in self.process.states:
            if not self.process.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the application did not start: {self.process.states}")
            self.process.next_line(0.05)

    def kill(self) -> None:
        self.process.kill()

    def stop(self) -> None:
        self.process.stop()


def produce_customers(out: Producer, prefix: str, base: int) -> None:
    for n in range(CUSTOMERS):
        region = ("north", "south", "east")[n % 3]
        out.produce(f"{prefix}-customers", region.encode(), f"c{n:02d}".encode(), timestamp=base)


def produce_order(out: Producer, prefix: str, n: int, base: int) -> None:
    value = f"c{(n * 7) % CUSTOMERS:02d},{n % 97 + 1}".encode()
    out.produce(f"{prefix}-orders", value, f"o{n:07d}".encode(), timestamp=base + n * 10)


class EnrichedReader:
    """Counts, by order number, the enriched records a read_committed consumer sees."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"{prefix}-reader",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([f"{prefix}-enriched"])
        self.seen: set[int] = set()

    def until(self, done: Callable[[set[int]], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not done(self.seen):
            if time.monotonic() > deadline:
                return False
            for message in self.consumer.consume(1000, timeout=0.1):
                error = message.error()
                if error is None:
                    key = message.key()
                    assert key is not None
                    self.seen.add(int(key[1:]))
                elif error.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(str(error))
        return True

    def close(self) -> None:
        self.consumer.close()


def measure_throughput(
    bootstrap: str, pid: int, work: Path, protocol: str, orders: int
) -> Throughput:
    prefix = f"sb-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, prefix)
    app = Instance(bootstrap, f"{prefix}-app", prefix, work / f"{prefix}-a", protocol)
    reader = EnrichedReader(bootstrap, prefix)
    try:
        app.wait_running()
        time.sleep(3)  # the first assignment settled (streams groups delay it 3 s)
        base = int(time.time() * 1000) - 3_600_000
        cpu = process_cpu_seconds(pid)
        started = time.perf_counter()
        out = input_producer(bootstrap)
        produce_customers(out, prefix, base - 60_000)
        out.flush(30)
        for n in range(orders):
            produce_order(out, prefix, n, base)
            if n % 10_000 == 0:
                out.poll(0)
        out.flush(60)
        if not reader.until(lambda seen: len(seen) >= orders, timeout=600):
            raise RuntimeError(f"only {len(reader.seen)} of {orders} orders came out")
        seconds = time.perf_counter() - started
        return Throughput(orders, seconds, process_cpu_seconds(pid) - cpu)
    finally:
        reader.close()
        app.stop()


def measure_recovery(bootstrap: str, work: Path, protocol: str, settings: Settings) -> float:
    """Seconds from one instance's SIGKILL until every order produced before it is out."""
    prefix = f"sr-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, prefix)
    base = int(time.time() * 1000) - 3_600_000
    out = input_producer(bootstrap)
    produce_customers(out, prefix, base - 60_000)
    out.flush(30)
    apps = [
        Instance(bootstrap, f"{prefix}-app", prefix, work / f"{prefix}-{name}", protocol)
        for name in "ab"
    ]
    reader = EnrichedReader(bootstrap, prefix)
    produced = 0
    stop = threading.Event()

    def feed() -> None:
        nonlocal produced
        interval = 1 / settings.recovery_rate
        next_at = time.monotonic()
        while not stop.is_set():
            produce_order(out, prefix, produced, base)
            produced += 1
            out.poll(0)
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
        out.flush(30)

    feeder = threading.Thread(target=feed)
    try:
        for app in apps:
            app.wait_running()
        feeder.start()
        time.sleep(settings.recovery_before_kill_s)
        out.flush(10)
        before_kill = produced
        killed_at = time.perf_counter()
        apps[0].kill()
        if not reader.until(lambda seen: all(n in seen for n in range(before_kill)), 300):
            raise RuntimeError("the output did not catch up after the kill")
        return time.perf_counter() - killed_at
    finally:
        stop.set()
        if feeder.is_alive():
            feeder.join()
        reader.close()
        for app in apps:
            app.stop()


def run_peer(
    name: str, start: Callable[[], OdradekPeer | KafkaPeer], settings: Settings, work: Path
) -> dict[str, float]:
    peer = start()
    figures: dict[str, float] = {}
    try:
        for protocol in ("classic", "streams"):
            result = measure_throughput(peer.bootstrap, peer.pid, work, protocol, settings.orders)
            figures[f"{protocol} orders/s"] = result.per_second
            figures[f"{protocol} broker CPU ms per 1000 orders"] = result.cpu_ms_per_1000
            print(f"  {name} {protocol}: {result.per_second:,.0f} orders/s, broker CPU "
                  f"{result.cpu_ms_per_1000:.0f} ms per 1000 orders", flush=True)  # fmt: skip
        for protocol in ("classic", "streams"):
            times = [
                measure_recovery(peer.bootstrap, work, protocol, settings)
                for _ in range(settings.recovery_repeats)
            ]
            figures[f"{protocol} recovery s (median)"] = statistics.median(times)
            shown = ", ".join(f"{t:.1f}" for t in times)
            print(f"  {name} {protocol}: output complete {shown} s after the kill", flush=True)
    finally:
        peer.stop()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer orders (a smoke run)")
    args = parser.parse_args()
    settings = Settings.make(args.quick)
    if not built() or shutil.which("java") is None:
        print("the Streams application is not built: run `make install-test`")
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench-streams-"))
    results = Results()
    try:
        print(f"Kafka Streams 4.4 orders application, {settings.orders} orders, exactly_once_v2")
        results.peers["odradek"] = run_peer(
            "odradek", lambda: OdradekPeer(venv_python(), work), settings, work
        )
        results.peers["kafka"] = run_peer("kafka", lambda: KafkaPeer(work), settings, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    odradek, kafka = results.peers["odradek"], results.peers["kafka"]
    print(f"\n| case | Odradek | Apache Kafka {VERSION} ({HEAP}) | vs Kafka |")
    print("|---|---|---|---|")
    for key in odradek:
        higher_is_better = key.endswith("orders/s")
        ratio = odradek[key] / kafka[key] if higher_is_better else kafka[key] / odradek[key]
        print(f"| {key} | {odradek[key]:,.1f} | {kafka[key]:,.1f} | {ratio:.2f} |")
    RESULTS.write_text(
        json.dumps({"settings": asdict(settings), "quick": args.quick, **asdict(results)}, indent=2)
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
