"""The orders application of tests/streams/ (Kafka Streams 4.4) as a process, and the
topics and producer its input needs; shared by bench/streams.py and the Streams tests.

`make install-test` builds the application with Maven (tests/streams/pom.xml) into
tests/streams/target/classes, its dependencies into tests/streams/lib. The application
prints `STATE <name>` on each state change and `ERROR <text>` on a stream-thread error.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

STREAMS_DIR = Path(__file__).resolve().parent.parent / "tests" / "streams"
CLASSES = STREAMS_DIR / "target" / "classes"
LIB = STREAMS_DIR / "lib"
MAIN_CLASS = "dev.odradek.streams.OrdersApp"
PARTITIONS = 4
OUTPUTS = ("totals", "enriched", "window-counts")


def built() -> bool:
    return (CLASSES / "dev" / "odradek" / "streams" / "OrdersApp.class").is_file() and bool(
        list(LIB.glob("kafka-streams-*.jar"))
    )


class AppProcess:
    """One JVM of the application. Its stdout lines are queued; `STATE` lines seen so far
    are in `states` once read with `next_line` or `drain`."""

    def __init__(
        self, java: str, args: list[str], log_path: Path, jvm_options: tuple[str, ...] = ()
    ) -> None:
        log = log_path.open("a")
        self.proc = subprocess.Popen(
            [
                java,
                "-Xmx256m",
                *jvm_options,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                f"{CLASSES}:{LIB}/*",
                MAIN_CLASS,
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        log.close()
        self.lines: queue.Queue[str] = queue.Queue()
        self.states: list[str] = []
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line.strip())

    def next_line(self, timeout: float) -> str | None:
        """The next line (None after `timeout` seconds without one); records states."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line.startswith("STATE "):
            self.states.append(line.split()[1])
        return line

    def drain(self) -> list[str]:
        """The lines printed since the last read, without waiting."""
        found = []
        while (line := self.next_line(0)) is not None:
            found.append(line)
        return found

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """kill -9: no clean close, no checkpoint, the open transaction left open."""
        if self.alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(45)
            except subprocess.TimeoutExpired:
                self.kill()


def create_topics(bootstrap: str, prefix: str) -> None:
    """The input topics (orders, customers) and the output topics, 4 partitions each."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"{prefix}-{name}" for name in ("orders", "customers", *OUTPUTS)]
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=PARTITIONS, replication_factor=1) for name in names],
        operation_timeout=30,
    )
    for future in futures.values():
        future.result(timeout=30)


def input_producer(bootstrap: str) -> Producer:
    # murmur2, as Java's producers partition: the customers table must be partitioned
    # as Streams partitions the re-keyed orders it is joined with
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "partitioner": "murmur2_random",
        }
    )
