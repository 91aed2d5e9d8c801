"""Apache Kafka 4.4, the reference broker, as one combined KRaft node.

Shared by the test rig (tests/helpers/reference_kafka.py, the `kafka44` fixture) and
the benchmarks (bench/peers.py's KafkaPeer), so that both run the same broker with the
same settings and JVM heap. `make install-test` copies the broker and its dependencies
from Maven Central into tests/reference/lib (tests/reference/pom.xml).

`ReferenceKafka.start()` formats a storage directory (kafka.tools.StorageTool), starts
`kafka.Kafka` with listeners on free ports and logs in its own folder, and waits until
the broker accepts a connection; `stop()` ends it. Nothing here imports the tests.
"""

from __future__ import annotations

import base64
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

LIB = Path(__file__).resolve().parents[1] / "tests" / "reference" / "lib"
VERSION = "4.4.0"
START_TIMEOUT = 90.0
# The JVM options of every Kafka this project starts (tests and benchmarks alike).
HEAP = "-Xmx512m"


@dataclass
class StartFigures:
    """What one start cost: seconds from spawn to an accepted connection (after the
    storage was formatted), the format's own seconds, and the resident memory (KiB) of
    the process when it first accepted."""

    seconds: float
    rss_kib: int
    format_seconds: float = 0.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def new_cluster_id() -> str:
    # Kafka's storage tool reads an id that starts with "-" as an option, as Kafka's own
    # ids never do (1 in 64 random ones would)
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def available() -> bool:
    """Kafka's jars are in LIB and a `java` is on the PATH."""
    return (LIB / f"kafka_2.13-{VERSION}.jar").is_file() and shutil.which("java") is not None


@dataclass
class ReferenceKafka:
    base: Path
    port: int = field(default_factory=_free_port)
    controller_port: int = field(default_factory=_free_port)
    extra: dict[str, str] = field(default_factory=dict)
    classpath: list[str] = field(default_factory=list)  # plugins, after Kafka's jars
    cluster_id: str | None = None  # None: a random one (nodes of one cluster share theirs)
    heap: str = HEAP
    proc: subprocess.Popen[bytes] | None = None
    figures: StartFigures | None = None
    last_rss_kib: int = 0  # the resident memory when the session ended with it
    _output: IO[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.base / "server.log"

    def _properties(self) -> str:
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.base / "data"),
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **self.extra,
        }
        return "".join(f"{key}={value}\n" for key, value in settings.items())

    def _log_settings(self) -> str:
        return (
            "status = warn\n"
            "appender.file.type = File\n"
            "appender.file.name = file\n"
            f"appender.file.fileName = {self.log_file}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.file.ref = file\n"
        )

    def _java(self, *args: str) -> list[str]:
        log_settings = self.base / "log4j2.properties"
        return [
            "java",
            self.heap,
            f"-Dlog4j2.configurationFile={log_settings}",
            "-cp",
            ":".join([str(LIB / "*"), *self.classpath]),
            *args,
        ]

    def start(self, timeout: float = START_TIMEOUT) -> ReferenceKafka:
        self.base.mkdir(parents=True, exist_ok=True)
        properties = self.base / "server.properties"
        properties.write_text(self._properties())
        (self.base / "log4j2.properties").write_text(self._log_settings())
        if (self.base / "data" / "meta.properties").is_file():
            return self._launch(timeout, format_seconds=0.0)  # a restart: already formatted
        formatting = time.monotonic()
        formatted = subprocess.run(
            self._java(
                "kafka.tools.StorageTool",
                "format",
                "-t",
                self.cluster_id or new_cluster_id(),
                "-c",
                str(properties),
            ),
            capture_output=True,
            timeout=120,
        )
        format_seconds = time.monotonic() - formatting
        if formatted.returncode != 0:
            raise RuntimeError(f"formatting Kafka's storage failed: {formatted.stderr.decode()}")
        return self._launch(timeout, format_seconds)

    def _launch(self, timeout: float, format_seconds: float) -> ReferenceKafka:
        properties = self.base / "server.properties"
        self._output = (self.base / "stdout.log").open("ab")
        began = time.monotonic()
        self.proc = subprocess.Popen(
            self._java("kafka.Kafka", str(properties)),
            stdout=self._output,
            stderr=subprocess.STDOUT,
        )
        deadline = began + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            except OSError:
                time.sleep(0.01)
                continue
            seconds = time.monotonic() - began
            self.figures = StartFigures(seconds, _rss_kib(self.proc.pid), format_seconds)
            return self
        self.stop()
        raise RuntimeError(f"Kafka did not answer within {timeout} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self._output is not None:
            self._output.close()
            self._output = None

    def kill(self) -> None:
        """SIGKILL (a crash); start() then brings it back on the same data and ports."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self._output is not None:
            self._output.close()
            self._output = None

    def rss_kib(self) -> int:
        return _rss_kib(self.proc.pid) if self.proc is not None else 0

    def log_tail(self, max_chars: int = 6000) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-max_chars:]
        except OSError:
            return ""
