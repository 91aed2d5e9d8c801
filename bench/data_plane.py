"""Data-plane benchmark: Odradek side by side with librdkafka's mock cluster.

Run from the repository root:

    .venv/bin/python -m bench.data_plane [--quick] [--profile]
    .venv/bin/python bench/data_plane.py [--quick] [--profile]

One run measures both peers with the same client (confluent-kafka / librdkafka)
from this process, which hosts neither broker:

- Odradek runs as `python -m broker` in a child process (free port, temp data dir).
- The mock cluster runs in another child process (this file with `--mock-host`),
  created through librdkafka's C API so topics can be made with an exact
  partition count (the mock has no CreateTopics handler).

Cases, each run against Odradek and the mock one after the other:

- produce throughput: 1 KB and 100 B records, acks=1 and acks=all, 1 and 8
  partitions (round-robin), linger.ms=5, other batching settings left at their
  defaults; time-boxed, then flushed; MB/s is 10^6 bytes of record values.
- produce latency: produce() to delivery callback, 1 KB records at a fixed rate
  (1000 msg/s) with linger.ms=0, so it measures the round trip, not queueing.
- consume throughput: assign() (no group) and read a topic filled with at most
  what the mock retains (about 5 MiB per partition), in repeated passes from the
  low watermark until the time box is used up. One extra Odradek-only row reads
  a large topic (left by a produce case) in a single pass.
- Odradek start-up (spawn to accepted TCP connection, median of several runs)
  and idle RSS (VmRSS) after start and after the runs; the mock host's figures
  are shown beside them for scale.

Results: a Markdown table on stdout and JSON in bench/results/data_plane.json.
bench/groups.py and bench/transactions.py take the peers, the mock host, the run's
skeleton and the report from this file.
Every ratio is oriented so that >1 means Odradek is better: Odradek/mock for
throughput, mock/Odradek for latency, start-up time and RSS.

`--profile` attaches py-spy (`pip install py-spy`; skipped when absent) to Odradek
during the produce and the consume cases, prints the hottest functions and writes
collapsed stacks (for flamegraph.pl or speedscope) to
bench/results/profile_{produce,fetch}.collapsed; its numbers are perturbed, so it
writes bench/results/data_plane_profile.json instead of data_plane.json.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import glob
import json
import logging
import os
import platform
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench" / "results"
KB = 1000
MB = 1_000_000
# Records per partition for the consume cases, by record size: the mock drops its
# oldest batches beyond 5 MiB per partition, so stay under that.
CONSUME_FILL = {1000: 4_000, 100: 40_000}
STALL_SECONDS = 20.0
FLUSH_TIMEOUT = 60.0

log = logging.getLogger("bench")


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
    profile: bool
    linger_ms: int = 5

    @classmethod
    def make(cls, quick: bool, profile: bool) -> Settings:
        if quick:
            return cls(quick, 0.7, 1, 0.7, 1.5, 1000, 3, profile)
        return cls(quick, 2.0, 3, 3.0, 5.0, 1000, 7, profile)


# --------------------------------------------------------------------------- helpers


def venv_python() -> str:
    candidate = REPO / ".venv" / "bin" / "python"
    return str(candidate) if candidate.exists() else sys.executable


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def rss_mib(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak) of a process, in MiB."""
    values: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values


def process_cpu_times(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process (all its threads), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        after_name = stat.read().rsplit(")", 1)[1].split()
    # after "(comm)" the list starts at field 3 (state): utime is field 14, stime 15
    tick = os.sysconf("SC_CLK_TCK")
    return int(after_name[11]) / tick, int(after_name[12]) / tick


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads)."""
    return sum(process_cpu_times(pid))


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine_busy_seconds() -> float:
    """CPU time spent by the whole machine (all cores), idle and iowait excluded."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


# "other" CPU (% of one core) seen during every measured case: a noisy-machine indicator
OTHER_CPU: list[float] = []


class CpuMeter:
    """CPU use over a `with` block, as % of one core: the broker process, this (client)
    process, and everything else on the machine (other processes, kernel threads)."""

    def __init__(self, broker_pid: int) -> None:
        self.broker_pid = broker_pid
        self.broker_pct = 0.0
        self.broker_seconds = 0.0
        self.client_pct = 0.0
        self.other_pct = 0.0

    def __enter__(self) -> CpuMeter:
        self._wall = time.perf_counter()
        self._broker = process_cpu_seconds(self.broker_pid)
        self._client = own_cpu_seconds()
        self._machine = machine_busy_seconds()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._wall
        with contextlib.suppress(OSError):
            self.broker_seconds = process_cpu_seconds(self.broker_pid) - self._broker
            self.broker_pct = 100 * self.broker_seconds / wall
        self.client_pct = 100 * (own_cpu_seconds() - self._client) / wall
        machine_pct = 100 * (machine_busy_seconds() - self._machine) / wall
        self.other_pct = max(0.0, machine_pct - self.broker_pct - self.client_pct)
        OTHER_CPU.append(self.other_pct)

    def record(self, result: Any) -> None:
        """Copy the percentages to the result's broker_cpu_pct, client_cpu_pct, other_cpu_pct
        (and the broker's CPU seconds to broker_cpu_s, where the result has one)."""
        result.broker_cpu_pct = self.broker_pct
        result.client_cpu_pct = self.client_pct
        result.other_cpu_pct = self.other_pct
        if hasattr(result, "broker_cpu_s"):
            result.broker_cpu_s = self.broker_seconds


def cpu_per_op_row(case: str, per_peer: dict[str, tuple[float, int]]) -> Row:
    """A row of the broker's CPU time per operation, from (CPU seconds, operations)."""
    values = {name: cpu / ops * 1e6 for name, (cpu, ops) in per_peer.items() if ops}
    return value_row(case, "µs", "lower", values, "{:.0f} µs")


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    rank = q / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def payloads(size: int, count: int = 16) -> list[bytes]:
    return [os.urandom(size) for _ in range(count)]


class ClientLog(logging.Handler):
    """Collects librdkafka's warnings and errors (routed through `logger`)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < 200:
            self.lines.append(record.getMessage())


CLIENT_LOG = ClientLog()
RDKAFKA_LOGGER = logging.getLogger("bench.librdkafka")
RDKAFKA_LOGGER.addHandler(CLIENT_LOG)
RDKAFKA_LOGGER.propagate = False


class ErrorSink:
    """error_cb target: librdkafka client-level errors (connection loss, timeouts)."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(self, error: KafkaError) -> None:
        if len(self.errors) < 50:
            self.errors.append(str(error))


def client_config(bootstrap: str, sink: ErrorSink, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "client.id": "odradek-bench",
        "error_cb": sink,
        "logger": RDKAFKA_LOGGER,
    }
    config.update(extra)
    return config


# --------------------------------------------------------------------------- mock host


class _Librdkafka:
    """The few librdkafka C functions needed to run a mock cluster."""

    def __init__(self) -> None:
        package = Path(confluent_kafka.__file__).resolve().parent
        found = sorted(glob.glob(str(package.parent / "confluent_kafka.libs" / "librdkafka*.so*")))
        lib = ctypes.CDLL(found[0] if found else "librdkafka.so.1")
        vp, cp, ci = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        lib.rd_kafka_conf_new.restype = vp
        lib.rd_kafka_conf_set.restype = ci
        lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
        lib.rd_kafka_new.restype = vp
        lib.rd_kafka_new.argtypes = [ci, vp, cp, ctypes.c_size_t]
        lib.rd_kafka_destroy.argtypes = [vp]
        lib.rd_kafka_mock_cluster_new.restype = vp
        lib.rd_kafka_mock_cluster_new.argtypes = [vp, ci]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
        lib.rd_kafka_mock_cluster_bootstraps.restype = cp
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
        lib.rd_kafka_mock_topic_create.restype = ci
        lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, ci, ci]
        lib.rd_kafka_mock_topic_delete.restype = ci
        lib.rd_kafka_mock_topic_delete.argtypes = [vp, cp]
        lib.rd_kafka_mock_group_initial_rebalance_delay_ms.restype = None
        lib.rd_kafka_mock_group_initial_rebalance_delay_ms.argtypes = [vp, ctypes.c_int32]
        lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms.restype = None
        lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms.argtypes = [vp, ctypes.c_int]
        self.lib = lib


def mock_host_main() -> int:
    """Child process: run a one-broker mock cluster, take commands as JSON lines."""
    lib = _Librdkafka().lib
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(conf, b"log_level", b"4", errstr, len(errstr))
    handle = lib.rd_kafka_new(0, conf, errstr, len(errstr))  # 0 = RD_KAFKA_PRODUCER
    if not handle:
        print(json.dumps({"error": errstr.value.decode()}), flush=True)
        return 1
    cluster = lib.rd_kafka_mock_cluster_new(handle, 1)
    bootstrap = lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()
    print(json.dumps({"bootstrap": bootstrap, "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        op = command.get("op")
        if op == "quit":
            break
        err = 0
        if op == "create":
            err = lib.rd_kafka_mock_topic_create(
                cluster, command["topic"].encode(), int(command["partitions"]), 1
            )
        elif op == "delete":
            err = lib.rd_kafka_mock_topic_delete(cluster, command["topic"].encode())
        elif op == "rebalance_delay":
            lib.rd_kafka_mock_group_initial_rebalance_delay_ms(cluster, int(command["ms"]))
        elif op == "consumer_heartbeat":
            lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(cluster, int(command["ms"]))
        else:
            err = -1
        print(json.dumps({"err": err}), flush=True)
    lib.rd_kafka_mock_cluster_destroy(cluster)
    lib.rd_kafka_destroy(handle)
    return 0


# --------------------------------------------------------------------------- peers


class Peer:
    name = ""
    bootstrap = ""
    proc: subprocess.Popen[Any]
    log_path: Path
    startup_s = 0.0

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def create_topic(self, topic: str, partitions: int) -> None:
        raise NotImplementedError

    def delete_topic(self, topic: str) -> None:
        raise NotImplementedError

    def died(self) -> str | None:
        code = self.proc.poll()
        return None if code is None else f"{self.name} exited with code {code}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def wait_for_topic(self, topic: str, partitions: int, timeout: float = 15.0) -> None:
        sink = ErrorSink()
        admin = AdminClient(client_config(self.bootstrap, sink))
        deadline = time.monotonic() + timeout
        while True:
            metadata = admin.list_topics(topic, timeout=5)
            described = metadata.topics.get(topic)
            if (
                described is not None
                and described.error is None
                and len(described.partitions) == partitions
                and all(p.leader >= 0 for p in described.partitions.values())
            ):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: topic {topic} not ready: {described!r}")
            time.sleep(0.05)


def wait_until_accepting(proc: subprocess.Popen[Any], port: int, timeout: float = 30.0) -> float:
    """Poll the port until it accepts a connection; returns the perf_counter() then."""
    deadline = time.monotonic() + timeout
    while not port_accepts(port):
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with code {proc.returncode} before accepting")
        if time.monotonic() > deadline:
            raise RuntimeError(f"port {port} not accepting after {timeout}s")
        time.sleep(0.002)
    return time.perf_counter()


class OdradekPeer(Peer):
    name = "odradek"

    def __init__(
        self,
        python: str,
        workdir: Path,
        label: str = "main",
        overrides: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = workdir / f"data-{label}"
        self.port = free_port()
        self.log_path = workdir / f"odradek-{label}.log"
        self.command = [
            python, "-m", "broker",
            "--data-dir", str(self.data_dir),
            "--host", "127.0.0.1",
            "--port", str(self.port),
        ]  # fmt: skip
        for key, value in (overrides or {}).items():
            self.command += ["--override", f"{key}={value}"]
        self._log: IO[bytes] = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            self.command, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT
        )
        try:
            self.startup_s = wait_until_accepting(self.proc, self.port) - started
        except RuntimeError:
            self.stop()
            raise
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._admin: AdminClient | None = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(client_config(self.bootstrap, ErrorSink()))
        return self._admin

    def create_topic(self, topic: str, partitions: int) -> None:
        futures = self.admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1)],
            operation_timeout=10,
        )
        futures[topic].result(timeout=20)
        self.wait_for_topic(topic, partitions)

    def delete_topic(self, topic: str) -> None:
        futures = self.admin.delete_topics([topic], operation_timeout=10)
        futures[topic].result(timeout=20)

    def stop(self) -> None:
        self._admin = None
        super().stop()
        self._log.close()


class MockPeer(Peer):
    name = "mock"

    def __init__(self, python: str, workdir: Path) -> None:
        self.log_path = workdir / "mock-host.log"
        self._log: IO[bytes] = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--mock-host"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        try:
            hello = json.loads(self._readline())
            if "bootstrap" not in hello:
                raise RuntimeError(f"mock host failed: {hello}")
            self.bootstrap = str(hello["bootstrap"]).split(",")[0]
            port = int(self.bootstrap.rsplit(":", 1)[1])
            self.startup_s = wait_until_accepting(self.proc, port) - started
        except (RuntimeError, ValueError):
            self.stop()
            raise

    def _readline(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"mock host exited (code {self.proc.poll()})")
        return line

    def _command(self, **command: Any) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return int(json.loads(self._readline())["err"])

    def create_topic(self, topic: str, partitions: int) -> None:
        err = self._command(op="create", topic=topic, partitions=partitions)
        if err:
            raise RuntimeError(f"mock topic create failed: {err}")
        self.wait_for_topic(topic, partitions)

    def delete_topic(self, topic: str) -> None:
        self._command(op="delete", topic=topic)

    def set_rebalance_delay(self, delay_ms: int) -> None:
        """The mock's initial rebalance delay for new groups (librdkafka's default: 3000 ms)."""
        err = self._command(op="rebalance_delay", ms=delay_ms)
        if err:
            raise RuntimeError(f"mock rebalance delay not set: {err}")

    def set_consumer_heartbeat_interval(self, interval_ms: int) -> None:
        """The heartbeat interval the mock gives consumer-protocol members (KIP-848)."""
        err = self._command(op="consumer_heartbeat", ms=interval_ms)
        if err:
            raise RuntimeError(f"mock consumer heartbeat interval not set: {err}")

    def stop(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)
        super().stop()
        self._log.close()


# --------------------------------------------------------------------------- client runs


class Rates:
    """MB/s and records/s of a result with `records`, `value_bytes` and `seconds`."""

    records: int
    value_bytes: int
    seconds: float

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / MB / self.seconds if self.seconds else 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


@dataclass
class ProduceResult(Rates):
    records: int = 0
    value_bytes: int = 0
    seconds: float = 0.0
    errors: int = 0
    undelivered: int = 0
    first_error: str | None = None
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0


class DeliveryCounter:
    def __init__(self) -> None:
        self.delivered = 0
        self.delivered_bytes = 0
        self.errors = 0
        self.first_error: str | None = None

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.delivered += 1
            self.delivered_bytes += len(message)
        else:
            self.errors += 1
            if self.first_error is None:
                self.first_error = str(error)


def produce(
    bootstrap: str,
    topic: str,
    partitions: int,
    size: int,
    acks: str,
    *,
    linger_ms: int,
    seconds: float | None = None,
    per_partition: int | None = None,
) -> ProduceResult:
    """Produce round-robin over the partitions, for `seconds` or `per_partition` records."""
    sink = ErrorSink()
    counter = DeliveryCounter()
    producer = Producer(
        client_config(
            bootstrap,
            sink,
            **{
                "acks": acks,
                "linger.ms": linger_ms,
                "message.timeout.ms": 30000,
                "on_delivery": counter,
            },
        )
    )
    producer.list_topics(topic, timeout=10)  # connect and learn the leaders before timing
    values = payloads(size)
    limit = per_partition * partitions if per_partition is not None else sys.maxsize
    sent = 0
    started = time.perf_counter()
    deadline = started + seconds if seconds is not None else float("inf")
    produce_one = producer.produce
    while sent < limit:
        if sent & 1023 == 0:
            if time.perf_counter() >= deadline:
                break
            producer.poll(0)
        try:
            produce_one(topic, values[sent & 15], partition=sent % partitions)
        except BufferError:
            producer.poll(0.01)
            continue
        sent += 1
    undelivered = producer.flush(FLUSH_TIMEOUT)
    elapsed = time.perf_counter() - started
    return ProduceResult(
        records=counter.delivered,
        value_bytes=counter.delivered_bytes,
        seconds=elapsed,
        errors=counter.errors,
        undelivered=undelivered,
        first_error=counter.first_error,
        client_errors=sink.errors,
    )


@dataclass
class LatencyResult:
    samples: int
    p50_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    achieved_rate: float
    errors: int
    undelivered: int
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0


def produce_latency(
    bootstrap: str, topic: str, size: int, acks: str, rate: int, seconds: float
) -> LatencyResult:
    """Send at a fixed rate; latency is produce() to delivery callback, in ms."""
    sink = ErrorSink()
    producer = Producer(
        client_config(
            bootstrap, sink, **{"acks": acks, "linger.ms": 0, "message.timeout.ms": 30000}
        )
    )
    producer.list_topics(topic, timeout=10)
    values = payloads(size)
    latencies: list[float] = []
    errors = 0

    def delivered(error: KafkaError | None, _message: Message, sent_at: float) -> None:
        nonlocal errors
        if error is None:
            latencies.append((time.perf_counter() - sent_at) * 1000)
        else:
            errors += 1

    # Warm up: the first requests pay for connection set-up and broker code paths.
    for i in range(50):
        producer.produce(topic, values[i & 15], partition=0)
    producer.flush(FLUSH_TIMEOUT)

    count = int(rate * seconds)
    interval = 1.0 / rate
    started = time.perf_counter()
    for i in range(count):
        target = started + i * interval
        while (wait := target - time.perf_counter()) > 0:
            producer.poll(max(wait, 0.001))  # serves delivery callbacks as they arrive
        sent_at = time.perf_counter()
        producer.produce(
            topic,
            values[i & 15],
            partition=0,
            on_delivery=functools.partial(delivered, sent_at=sent_at),
        )
        producer.poll(0)
    sending = time.perf_counter() - started
    undelivered = producer.flush(FLUSH_TIMEOUT)
    return LatencyResult(
        samples=len(latencies),
        p50_ms=percentile(latencies, 50),
        p99_ms=percentile(latencies, 99),
        mean_ms=statistics.fmean(latencies) if latencies else float("nan"),
        max_ms=max(latencies, default=float("nan")),
        achieved_rate=count / sending if sending else 0.0,
        errors=errors,
        undelivered=undelivered,
        client_errors=sink.errors,
    )


@dataclass
class ConsumeResult(Rates):
    records: int = 0
    value_bytes: int = 0
    seconds: float = 0.0
    passes: int = 0
    available_records: int = 0
    available_per_partition: list[int] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None
    client_errors: list[str] = field(default_factory=list)
    broker_cpu_pct: float = 0.0
    client_cpu_pct: float = 0.0
    other_cpu_pct: float = 0.0


def read_pass(
    consumer: Consumer,
    topic: str,
    lows: dict[int, int],
    ends: dict[int, int],
    result: Any,
    expected: int,
    deadline: float = float("inf"),
) -> tuple[int, int]:
    """Read each partition from `lows` up to `ends` (exclusive) once: (records, value bytes).

    Errors are counted on `result` (its `errors` and `first_error`). `expected`
    records, when known, keeps consume() from asking for more than is left.
    """
    consumer.assign([TopicPartition(topic, p, low) for p, low in lows.items()])
    remaining = {p for p in lows if ends[p] > lows[p]}
    records = value_bytes = 0
    last_progress = time.monotonic()
    while remaining:
        # consume() waits for a full batch (or the timeout): never ask for more
        # than is left, or every pass would end with a wasted wait.
        wanted = max(1, min(10000, expected - records)) if expected else 10000
        batch = consumer.consume(num_messages=wanted, timeout=0.5)
        now = time.monotonic()
        if batch:
            last_progress = now
        elif now - last_progress > STALL_SECONDS:
            raise RuntimeError(f"consume stalled; partitions left {sorted(remaining)}")
        for message in batch:
            error = message.error()
            if error is not None:
                result.errors += 1
                result.first_error = result.first_error or str(error)
                continue
            records += 1
            value_bytes += len(message)
            offset, partition = message.offset(), message.partition()
            if offset is not None and partition is not None and offset + 1 >= ends[partition]:
                remaining.discard(partition)
        if time.perf_counter() >= deadline:
            break
    consumer.unassign()
    return records, value_bytes


def consume(
    bootstrap: str, topic: str, partitions: int, seconds: float, *, single_pass: bool = False
) -> ConsumeResult:
    """assign() from the low watermark and read up to the high watermark, in passes.

    Without `single_pass`, one untimed warm-up pass is followed by timed passes until
    `seconds` have been spent (at least one). With it, one timed pass that stops at the
    high watermark or after `seconds`.
    """
    sink = ErrorSink()
    consumer = Consumer(
        client_config(
            bootstrap,
            sink,
            **{
                "group.id": f"odradek-bench-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                # A fetch parked at the high watermark at the end of a pass would hold
                # the next pass's first fetch for fetch.wait.max.ms (500 by default).
                "fetch.wait.max.ms": 10,
                # Past queued.min.messages (100k) librdkafka pauses fetching for this long
                # (1000 ms by default), which swamps a 100 B x 8 partition pass.
                "fetch.queue.backoff.ms": 10,
            },
        )
    )
    result = ConsumeResult()
    try:
        lows: list[int] = []
        highs: list[int] = []
        for index in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, index), timeout=10)
            lows.append(low)
            highs.append(high)
        result.available_per_partition = [h - lo for lo, h in zip(lows, highs, strict=True)]
        result.available_records = sum(result.available_per_partition)
        if result.available_records == 0:
            raise RuntimeError(f"nothing to consume in {topic}")

        ends = dict(enumerate(highs))

        def one_pass(deadline: float) -> tuple[int, int]:
            return read_pass(
                consumer,
                topic,
                dict(enumerate(lows)),
                ends,
                result,
                result.available_records,
                deadline,
            )

        if single_pass:
            started = time.perf_counter()
            result.records, result.value_bytes = one_pass(started + seconds)
            result.seconds = time.perf_counter() - started
            result.passes = 1
        else:
            one_pass(float("inf"))
            started = time.perf_counter()
            while result.passes == 0 or time.perf_counter() - started < seconds:
                records, value_bytes = one_pass(float("inf"))
                result.records += records
                result.value_bytes += value_bytes
                result.passes += 1
            result.seconds = time.perf_counter() - started
    finally:
        consumer.close()
        result.client_errors = sink.errors
    return result


# --------------------------------------------------------------------------- profiling


class Profiler:
    """py-spy record on a pid for as long as the `with` block lasts (raw collapsed stacks)."""

    def __init__(self, pid: int, out: Path) -> None:
        self.pid = pid
        self.out = out
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Profiler:
        exe = shutil.which("py-spy") or str(Path(venv_python()).parent / "py-spy")
        if not Path(exe).exists():
            log.warning("py-spy not found; profiling skipped")
            return self
        self.proc = subprocess.Popen(
            [exe, "record", "--pid", str(self.pid), "--format", "raw", "--rate", "200",
             "--nonblocking", "--output", str(self.out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.send_signal(2)  # SIGINT makes py-spy write its output
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def hottest(raw_files: list[Path], top: int = 15) -> dict[str, list[tuple[str, float]]]:
    """Self and inclusive sample shares per function from py-spy raw (collapsed) output."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for raw in raw_files:
        if not raw.exists():
            continue
        for line in raw.read_text().splitlines():
            stack, _, count_text = line.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            frames = [_frame_name(f) for f in stack.split(";")]
            frames = [f for f in frames if f]
            if not frames:
                continue
            total += count
            own[frames[-1]] += count
            for name in set(frames):
                inclusive[name] += count
    if not total:
        return {"self": [], "inclusive": []}
    return {
        "self": [(name, round(100 * n / total, 1)) for name, n in own.most_common(top)],
        "inclusive": [(name, round(100 * n / total, 1)) for name, n in inclusive.most_common(top)],
    }


def merge_collapsed(raw_files: list[Path], out: Path) -> None:
    """One collapsed-stack file (flamegraph.pl, speedscope) from several py-spy raw files."""
    stacks: Counter[str] = Counter()
    for raw in raw_files:
        if raw.exists():
            for line in raw.read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                if stack and count.isdigit():
                    stacks[stack] += int(count)
    out.write_text("".join(f"{stack} {count}\n" for stack, count in stacks.most_common()))


def _frame_name(frame: str) -> str:
    """'handle (broker/handlers/produce.py:97)' -> 'handle (broker/handlers/produce.py)'."""
    if frame.startswith("process ") or frame.startswith("thread "):
        return ""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("/site-packages/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    else:
        with contextlib.suppress(ValueError):
            path = str(Path(path).resolve().relative_to(REPO))
    return f"{name} ({path})" if path else name


# --------------------------------------------------------------------------- the run
# Shared with bench/groups.py and bench/transactions.py: rows, the run's skeleton, the report.


@dataclass
class Row:
    case: str
    unit: str
    better: str  # "higher" or "lower"
    odradek: float | None
    mock: float | None
    odradek_text: str = ""
    mock_text: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if not self.odradek or not self.mock:
            return None
        return self.odradek / self.mock if self.better == "higher" else self.mock / self.odradek


def peer_row(
    case: str,
    unit: str,
    better: str,
    value: Callable[[str], float | None],
    text: Callable[[str], str],
    details: dict[str, Any] | None = None,
) -> Row:
    """A row from a peer's value and text, each a function of the peer's name."""
    return Row(
        case=case,
        unit=unit,
        better=better,
        odradek=value("odradek"),
        mock=value("mock"),
        odradek_text=text("odradek"),
        mock_text=text("mock"),
        details=details or {},
    )


def value_row(
    case: str,
    unit: str,
    better: str,
    values: dict[str, float],
    fmt: str,
    missing: str = "failed",
    details: dict[str, Any] | None = None,
) -> Row:
    """A row from per-peer values shown with `fmt`; a peer without a value shows `missing`."""

    def text(name: str) -> str:
        return fmt.format(values[name]) if name in values else missing

    return peer_row(case, unit, better, values.get, text, details)


@dataclass
class Run:
    settings: Any  # the benchmark's Settings
    workdir: Path
    python: str
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    profiles: dict[str, list[Path]] = field(default_factory=dict)
    began: float = field(default_factory=time.perf_counter)


Step = Callable[[Run, list[Peer]], None]


def arg_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options every benchmark takes: --quick and --keep."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
    parser.add_argument("--quick", action="store_true", help="a short run (under a minute)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir and logs")
    return parser


def start_run(settings: Any, title: str, prefix: str) -> Run:
    """A run in a new temp dir (`prefix`...), announced on stdout."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    run = Run(settings=settings, workdir=workdir, python=venv_python())
    print(f"odradek {title} bench ({'quick' if settings.quick else 'full'}), work dir {workdir}")
    return run


def start_peers(run: Run, peers: list[Peer]) -> None:
    """Odradek, then the mock; each is added once it is up (so that it gets stopped)."""
    peers.append(OdradekPeer(run.python, run.workdir))
    peers.append(MockPeer(run.python, run.workdir))


def run_steps(
    run: Run, start: Step, steps: list[tuple[str, Step]], end: Step | None = None
) -> list[str]:
    """Start the peers, run the steps, stop the peers; returns Odradek's log findings.

    An exception ends the steps but not the run: what was measured so far is reported.
    """
    peers: list[Peer] = []
    try:
        start(run, peers)
        for name, step in steps:
            print(f"  {name} ... ({time.perf_counter() - run.began:.0f}s)", flush=True)
            step(run, peers)
            for peer in peers:
                if peer.died():
                    raise RuntimeError(f"{peer.died()}; log tail:\n{log_tail(peer.log_path)}")
        if end is not None:
            end(run, peers)
    except Exception as exc:  # report what was measured so far
        run.problems.append(f"run aborted: {exc!r}")
    finally:
        for peer in peers:
            with contextlib.suppress(Exception):
                peer.stop()
    odradek = next((peer for peer in peers if peer.name == "odradek"), None)
    findings = broker_log_findings(odradek.log_path) if odradek is not None else []
    if findings:
        run.problems.append(f"odradek log has {len(findings)} warning/error lines (see below)")
    return findings


def check_peer(run: Run, peer: Peer, when: str) -> None:
    died = peer.died()
    if died:
        run.problems.append(f"{died} ({when}); log tail:\n{log_tail(peer.log_path)}")
        raise RuntimeError(died)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def topic_name(label: str) -> str:
    return f"bench-{label}-{uuid.uuid4().hex[:6]}"


def peers_in_order(peers: list[Peer], index: int) -> list[Peer]:
    """Alternate which peer goes first so neither always gets the warmer machine."""
    return peers if index % 2 == 0 else list(reversed(peers))


def broker_log_findings(path: Path, limit: int = 40) -> list[str]:
    """Warning/error lines and anything that is not a JSON log line (tracebacks)."""
    found: list[str] = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return found
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            found.append(line)
            continue
        if isinstance(entry, dict) and entry.get("level") in ("warning", "error", "critical"):
            found.append(line)
    return found[:limit]


def render_table(rows: list[Row], columns: tuple[str, str] = ("Odradek", "mock")) -> str:
    lines = [f"| case | {columns[0]} | {columns[1]} | ratio |", "|---|---|---|---|"]
    for row in rows:
        ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}"
        lines.append(f"| {row.case} | {row.odradek_text} | {row.mock_text} | {ratio} |")
    return "\n".join(lines)


def git_head() -> str | None:
    """The checked-out commit (the working tree may hold uncommitted changes on top)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def noise_note() -> str:
    if not OTHER_CPU:
        return ""
    worst = max(OTHER_CPU)
    note = (
        f"Other load on the machine during the cases (CPU outside broker and client, "
        f"% of one core): median {statistics.median(OTHER_CPU):.0f}%, max {worst:.0f}%."
    )
    if worst > 30:
        note += " Above ~30% the figures are disturbed by other work; rerun on a quiet machine."
    return note


def command_line() -> str:
    """The command that reproduces this run (`python -m bench.NAME ...` or the script)."""
    spec = sys.modules["__main__"].__spec__
    if spec is not None and spec.name:
        argv = [sys.executable, "-m", spec.name.removesuffix(".__main__"), *sys.argv[1:]]
    else:
        argv = [sys.executable, *sys.argv]
    return f"cd {shlex.quote(str(Path.cwd()))} && {shlex.join(argv)}"


def environment(**versions: str) -> dict[str, Any]:
    """What the results were measured on; ``versions`` adds other packages' versions."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "confluent_kafka": str(confluent_kafka.version()),
        "librdkafka": confluent_kafka.libversion()[0],
        **versions,
        "git_head": git_head(),
    }


def print_problems(run: Run, findings: list[str]) -> None:
    """The run's problems, the broker's warnings and the client's, after the table."""
    if run.problems:
        print("\nproblems:")
        for problem in run.problems:
            print(f"- {problem}")
    if findings:
        print("\nOdradek log excerpt (warnings/errors):")
        for line in findings[:20]:
            print(f"  {line}")
    if CLIENT_LOG.lines:
        print("\nlibrdkafka warnings (first 20):")
        for line in CLIENT_LOG.lines[:20]:
            print(f"  {line}")


def report(
    run: Run,
    *,
    name: str,
    notes: list[str],
    findings: list[str],
    settings: dict[str, Any] | None = None,
    ratio_meaning: str = ">1 means Odradek is better",
    extra: dict[str, Any] | None = None,
    notes_in_table: bool = False,
    appendix: list[str] | None = None,
    columns: tuple[str, str] = ("Odradek", "mock"),
) -> None:
    """Print the table, notes, problems and log excerpts; write bench/results/NAME.json.

    `settings` defaults to the run's; `extra` adds entries to the JSON, `appendix` lines
    to the printout; `columns` names the two measured columns. With `notes_in_table`
    the JSON has no "notes": they and the command stand under the table in
    "table_markdown" (as data_plane.json has always had them).
    """
    elapsed = time.perf_counter() - run.began
    command = command_line()
    table = render_table(run.rows, columns)
    notes = [note for note in [*notes, noise_note()] if note]
    text = "\n".join([table, "", *notes, "", f"command: `{command}`"])
    print()
    print(text)
    print_problems(run, findings)
    for line in appendix or []:
        print(line)
    print(f"\ntook {elapsed:.0f}s")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"{name}.json"
    document = {
        "command": command,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(elapsed, 1),
        "settings": asdict(run.settings) if settings is None else settings,
        "environment": environment(),
        "ratio_meaning": ratio_meaning,
        "rows": [{**asdict(row), "ratio": row.ratio} for row in run.rows],
        **({} if notes_in_table else {"notes": notes}),
        "problems": run.problems,
        "other_cpu_pct_per_case": [round(v, 1) for v in OTHER_CPU],
        "loadavg_at_end": os.getloadavg(),
        "odradek_log_findings": findings,
        "librdkafka_warnings": CLIENT_LOG.lines,
        **(extra or {}),
        "table_markdown": text if notes_in_table else table,
    }
    out.write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"results: {out.relative_to(REPO)}")


def remove_workdir(run: Run, keep: bool) -> None:
    if keep:
        print(f"kept {run.workdir}")
    else:
        shutil.rmtree(run.workdir, ignore_errors=True)


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
                    if isinstance(profile, Profiler):
                        run.profiles.setdefault("produce", []).append(profile.out)
                    repeats.setdefault(peer.name, []).append(result)
                    if result.errors or result.undelivered:
                        run.problems.append(
                            f"{peer.name} {label}: {result.errors} delivery errors, "
                            f"{result.undelivered} undelivered; first: {result.first_error}"
                        )
                    large = (size, acks, partitions, repeat) == (1000, "1", 1, 0)
                    if large and peer.name == "odradek":
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


def run_large_consume(run: Run, peer: Peer, topic: str, partitions: int) -> None:
    """Odradek only: one pass over everything a produce case wrote (the mock keeps 5 MiB)."""
    label = "consume 1 KB, 1 partition, single pass over the produce case's topic (Odradek only)"
    try:
        with CpuMeter(peer.pid) as cpu:
            result = consume(
                peer.bootstrap, topic, partitions, run.settings.consume_seconds, single_pass=True
            )
        cpu.record(result)
        row = Row(
            case=label,
            unit="MB/s",
            better="higher",
            odradek=result.mb_per_s,
            mock=None,
            odradek_text=throughput_text(result)
            + f" ({result.records / 1000:.0f}k of {result.available_records / 1000:.0f}k rec)",
            mock_text="n/a (keeps 5 MiB)",
            details={"odradek": asdict(result)},
        )
        run.extra["large_consume_row"] = row
        if result.errors:
            run.problems.append(f"odradek {label}: {result.errors} errors: {result.first_error}")
    finally:
        peer.delete_topic(topic)


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
    large = run.extra.pop("large_consume_row", None)
    if isinstance(large, Row):
        run.rows.append(large)


def measure_startup(run: Run) -> None:
    """Spawn to first accepted connection, fresh data dir each time; median of several."""
    odradek: list[float] = []
    mock: list[float] = []
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
    runs = run.extra["startup_runs_s"] = {"odradek": odradek, "mock": mock}
    medians = {name: statistics.median(times) * 1000 for name, times in runs.items() if times}
    case = (
        f"start-up, spawn to accepting TCP (median of {len(odradek)}; "
        "mock = Python process hosting it)"
    )
    run.rows.append(value_row(case, "ms", "lower", medians, "{:.0f} ms", details=runs))


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
    for peer in peers:
        topic = topic_name("warmup")
        try:
            peer.create_topic(topic, 1)
            produce(peer.bootstrap, topic, 1, 1000, "1", linger_ms=5, seconds=0.5)
            consume(peer.bootstrap, topic, 1, 0.2, single_pass=True)
            peer.delete_topic(topic)
        except (KafkaException, RuntimeError) as exc:
            run.problems.append(f"{peer.name} warm-up: {exc}")


def notes(settings: Settings) -> list[str]:
    s = settings
    return [
        "ratio > 1 means Odradek is better: Odradek/mock for throughput, "
        "mock/Odradek for latency, start-up and RSS. MB = 10^6 bytes of record values. "
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
    """Start-up times first (nothing else running), then the two peers and their idle RSS."""
    measure_startup(run)
    start_peers(run, peers)
    time.sleep(1.0)
    rss_row(run, "idle RSS after start (VmRSS)", peers)


def end(run: Run, peers: list[Peer]) -> None:
    time.sleep(2.0)
    rss_row(run, "idle RSS after the runs (VmRSS, topics deleted)", peers)


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--profile", action="store_true", help="attach py-spy to Odradek")
    parser.add_argument("--mock-host", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mock_host:
        return mock_host_main()

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
        ratio_meaning=">1 means Odradek is better (throughput Odradek/mock; "
        "latency, start-up, RSS mock/Odradek)",
        extra={"profile": profile_summary},
        notes_in_table=True,
        appendix=profile_lines(profile_summary),
    )
    remove_workdir(run, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
