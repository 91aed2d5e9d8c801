"""The orders application of tests/streams/ (Kafka Streams 4.4, exactly_once_v2): its
input, the output it must come to, and its instances as processes.

The process itself, the topics and the input producer are bench/streams_app.py's,
which the Streams benchmark runs too. The input is computed here, so the expected
output is too: per customer the count and sum of its orders, per order one enriched
record, per customer and 10-second window a count.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.streams_app import CLASSES, LIB, OUTPUTS, PARTITIONS, AppProcess, built, input_producer
from bench.streams_app import create_topics as create_app_topics
from helpers.env import missing, require_executable, require_module

WINDOW_MS = 10_000
__all__ = [
    "CLASSES",
    "LIB",
    "OUTPUTS",
    "PARTITIONS",
    "Orders",
    "Output",
    "StreamsInstance",
    "create_topics",
    "produce",
    "read_output",
    "require",
]


def require() -> str:
    """The java executable; fails (skips outside CI) when the application is not built."""
    java = require_executable("java", "install a JDK 17")
    if not built():
        missing("the Streams application is not built: run `make install-test`")
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
    create_app_topics(bootstrap, prefix)


def produce(bootstrap: str, prefix: str, orders: Orders, start: int, stop: int) -> None:
    """Orders `start` to `stop` (and, with the first, the customers table)."""
    producer = input_producer(bootstrap)
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
        self.process: AppProcess | None = None

    @property
    def states(self) -> list[str]:
        return [] if self.process is None else self.process.states

    def start(self) -> StreamsInstance:
        java = require()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        # the tests' instances live for seconds: the quick JIT tier starts them sooner
        quick_start = ("-XX:TieredStopAtLevel=1",)
        self.process = AppProcess(java, self.args, self.log_path, quick_start)
        return self

    def wait_state(self, state: str = "RUNNING", timeout: float = 120) -> None:
        assert self.process is not None, "the instance was not started"
        deadline = time.monotonic() + timeout
        while state not in self.states:
            left = deadline - time.monotonic()
            assert left > 0, f"no {state} in {timeout} s: states {self.states}\n{self.log_tail()}"
            line = self.process.next_line(min(left, 1.0))
            if line is None:
                assert self.process.alive(), (
                    f"the instance exited ({self.process.proc.returncode})\n{self.log_tail()}"
                )
                continue
            assert not line.startswith("ERROR"), f"{line}\n{self.log_tail()}"

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def errors(self) -> list[str]:
        """Stream-thread errors reported so far."""
        if self.process is None:
            return []
        return [line for line in self.process.drain() if line.startswith("ERROR")]

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text()[-chars:]
        except OSError:
            return ""

    def kill(self) -> None:
        """kill -9: no clean close, no checkpoint, the open transaction left open."""
        if self.process is not None:
            self.process.kill()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def wipe_state(self) -> None:
        shutil.rmtree(self.state_dir, ignore_errors=True)
