"""The orders application of tests/streams/ (Kafka Streams 4.4, exactly_once_v2): its
input, the output it must come to, and its instances as processes.

`make install-test` builds the application with Maven (tests/streams/pom.xml) into
tests/streams/target/classes, its dependencies into tests/streams/lib. The input is
computed here, so the expected output is too: per customer the count and sum of its
orders, per order one enriched record, per customer and 10-second window a count.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from helpers.env import missing, require_executable, require_module

STREAMS_DIR = Path(__file__).resolve().parents[1] / "streams"
CLASSES = STREAMS_DIR / "target" / "classes"
LIB = STREAMS_DIR / "lib"
MAIN_CLASS = "dev.odradek.streams.OrdersApp"
WINDOW_MS = 10_000
PARTITIONS = 4
OUTPUTS = ("totals", "enriched", "window-counts")


def require() -> str:
    """The java executable; fails (skips outside CI) when the application is not built."""
    java = require_executable("java", "install a JDK 17")
    if not (CLASSES / "dev" / "odradek" / "streams" / "OrdersApp.class").is_file():
        missing("the Streams application is not built: run `make install-test`")
    if not list(LIB.glob("kafka-streams-*.jar")):
        missing("Kafka Streams jars missing from tests/streams/lib: run `make install-test`")
    return java


@dataclass(frozen=True)
class Order:
    order_id: str
    customer: str
    amount: int
    timestamp: int


@dataclass
class Orders:
    """A deterministic input: `count` orders of `customers` customers, 100 ms apart."""

    count: int
    customers: int = 12
    base: int = field(
        default_factory=lambda: (int(time.time() * 1000) - 600_000) // WINDOW_MS * WINDOW_MS
    )

    def regions(self) -> dict[str, str]:
        return {f"c{n:02d}": ("north", "south", "east")[n % 3] for n in range(self.customers)}

    def all(self) -> list[Order]:
        return [
            Order(f"o{n:06d}", f"c{(n * 7) % self.customers:02d}", n % 97 + 1, self.base + n * 100)
            for n in range(self.count)
        ]

    def expected(self) -> dict[str, dict[str, str]]:
        """The final value of every key of every output topic."""
        totals: dict[str, tuple[int, int]] = {}
        windows: Counter[str] = Counter()
        enriched = {}
        regions = self.regions()
        for order in self.all():
            count, total = totals.get(order.customer, (0, 0))
            totals[order.customer] = (count + 1, total + order.amount)
            windows[f"{order.customer}@{order.timestamp // WINDOW_MS * WINDOW_MS}"] += 1
            enriched[order.order_id] = f"{order.customer},{order.amount},{regions[order.customer]}"
        return {
            "totals": {k: f"{c},{s}" for k, (c, s) in totals.items()},
            "enriched": enriched,
            "window-counts": {k: str(v) for k, v in windows.items()},
        }


def create_topics(bootstrap: str, prefix: str) -> None:
    require_module("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"{prefix}-{name}" for name in ("orders", "customers", *OUTPUTS)]
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=PARTITIONS, replication_factor=1) for name in names],
        operation_timeout=30,
    )
    for future in futures.values():
        future.result(timeout=30)


def produce(bootstrap: str, prefix: str, orders: Orders, start: int, stop: int) -> None:
    """Orders `start` to `stop` (and, with the first, the customers table)."""
    from confluent_kafka import Producer

    # murmur2, as Java's producers partition: the customers table must be partitioned
    # as Streams partitions the re-keyed orders it is joined with
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "partitioner": "murmur2_random",
        }
    )
    if start == 0:
        for customer, region in orders.regions().items():
            producer.produce(
                f"{prefix}-customers",
                region.encode(),
                customer.encode(),
                timestamp=orders.base - 60_000,
            )
    for order in orders.all()[start:stop]:
        value = f"{order.customer},{order.amount}".encode()
        producer.produce(
            f"{prefix}-orders", value, order.order_id.encode(), timestamp=order.timestamp
        )
    assert producer.flush(60) == 0, "the input was not all delivered"


@dataclass
class Output:
    """What a read_committed consumer saw on the output topics."""

    records: dict[str, list[tuple[str, str]]]

    def latest(self, topic: str) -> dict[str, str]:
        return dict(self.records[topic])

    def copies(self, topic: str) -> Counter[str]:
        return Counter(key for key, _ in self.records[topic])


def read_output(
    bootstrap: str, prefix: str, expected: dict[str, dict[str, str]], timeout: float = 180
) -> Output:
    """Reads the committed output until every key has its expected final value (or the
    time runs out: the caller then compares and shows what differs)."""
    from confluent_kafka import Consumer, KafkaError

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{prefix}-reader-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    records: dict[str, list[tuple[str, str]]] = {name: [] for name in OUTPUTS}
    consumer.subscribe([f"{prefix}-{name}" for name in OUTPUTS])
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                error = message.error()
                if error is not None:
                    assert error.code() == KafkaError._PARTITION_EOF, error
                    continue
                topic = str(message.topic())[len(prefix) + 1 :]
                key, value = message.key(), message.value()
                assert key is not None and value is not None
                records[topic].append((key.decode(), value.decode()))
            output = Output(records)
            if all(output.latest(name) == expected[name] for name in OUTPUTS):
                break
    finally:
        consumer.close()
    return Output(records)


class StreamsInstance:
    """One instance of the application: a JVM with its own state directory."""

    def __init__(
        self,
        bootstrap: str,
        application_id: str,
        prefix: str,
        state_dir: Path,
        *,
        threads: int = 1,
        standbys: int = 0,
        protocol: str = "classic",
        leave: bool = False,
        configs: dict[str, str] | None = None,
    ) -> None:
        self.args = [
            f"bootstrap={bootstrap}",
            f"application.id={application_id}",
            f"prefix={prefix}",
            f"state.dir={state_dir}",
            f"threads={threads}",
            f"standbys={standbys}",
            f"group.protocol={protocol}",
            f"leave={str(leave).lower()}",
            *(f"config.{k}={v}" for k, v in (configs or {}).items()),
        ]
        self.state_dir = state_dir
        self.log_path = state_dir.with_suffix(".log")
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str] = queue.Queue()
        self.states: list[str] = []

    def start(self) -> StreamsInstance:
        java = require()
        classpath = f"{CLASSES}:{LIB}/*"
        self.state_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [
                java,
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                classpath,
                MAIN_CLASS,
                *self.args,
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()
        return self

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line.strip())

    def wait_state(self, state: str = "RUNNING", timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while state not in self.states:
            left = deadline - time.monotonic()
            assert left > 0, f"no {state} in {timeout} s: states {self.states}\n{self.log_tail()}"
            try:
                line = self.lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                assert self.proc is not None and self.proc.poll() is None, (
                    f"the instance exited ({self.proc and self.proc.returncode})\n{self.log_tail()}"
                )
                continue
            if line.startswith("STATE "):
                self.states.append(line.split()[1])
            assert not line.startswith("ERROR"), f"{line}\n{self.log_tail()}"

    def errors(self) -> list[str]:
        """Stream-thread errors reported so far."""
        found = []
        while not self.lines.empty():
            line = self.lines.get()
            if line.startswith("STATE "):
                self.states.append(line.split()[1])
            elif line.startswith("ERROR"):
                found.append(line)
        return found

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text()[-chars:]
        except OSError:
            return ""

    def kill(self) -> None:
        """kill -9: no clean close, no checkpoint, the open transaction left open."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(45)
            except subprocess.TimeoutExpired:
                self.kill()

    def wipe_state(self) -> None:
        shutil.rmtree(self.state_dir, ignore_errors=True)
