"""The peers a benchmark measures side by side, and what talks to them.

- Odradek runs as `python -m odradek` in a child process (free port, temp data dir).
- librdkafka's mock cluster runs in another child process (`python -m bench.peers
  --mock-host`), created through librdkafka's C API so that topics can be made with
  an exact partition count (the mock has no CreateTopics handler); it takes commands
  as JSON lines on stdin.
- Apache Kafka 4.4 runs as one combined KRaft node, a JVM started the way the test
  rig starts it (bench/reference_kafka.py: same settings, same heap).
- Helpers: free ports, a process's CPU time and memory from /proc (CpuMeter; JobMeter
  adds up a process tree, for Spark's JVM and workers), the client settings every
  case uses, and librdkafka's log lines kept for the report.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import json
import logging
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import confluent_kafka
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from bench.reference_kafka import ReferenceKafka

REPO = Path(__file__).resolve().parent.parent

log = logging.getLogger("bench")


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


def _process_table() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds of the process and of its reaped children)."""
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        # after "(comm)": ppid is field 4, utime, stime, cutime, cstime fields 14..17
        cpu = sum(int(v) for v in fields[11:15]) / tick
        table[int(name)] = (int(fields[1]), cpu)
    return table


def tree_cpu_seconds(root: int, exclude: int) -> float:
    """CPU seconds of ``root`` and its descendants, leaving out ``exclude``'s subtree.

    A descendant that exits is counted in its parent's reaped-children time, so the
    difference of two readings holds the work of processes that came and went."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _cpu) in table.items():
        children.setdefault(parent, []).append(pid)
    total = 0.0
    pending = [root]
    while pending:
        pid = pending.pop()
        if pid == exclude or pid not in table:
            continue
        total += table[pid][1]
        pending.extend(children.get(pid, ()))
    return total


class JobMeter:
    """Wall time and CPU use over a `with` block, CPU as % of one core: the broker, the
    client side (this process and its children but the broker, so Spark's JVM and
    Python workers) and everything else on the machine."""

    def __init__(self, broker_pid: int) -> None:
        self.broker_pid = broker_pid
        self.seconds = 0.0
        self.broker_pct = 0.0
        self.client_pct = 0.0
        self.other_pct = 0.0

    def _client(self) -> float:
        return tree_cpu_seconds(os.getpid(), self.broker_pid)

    def __enter__(self) -> JobMeter:
        self._broker = process_cpu_seconds(self.broker_pid)
        self._client_start = self._client()
        self._machine = machine_busy_seconds()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = wall = time.perf_counter() - self._wall
        with contextlib.suppress(OSError):
            self.broker_pct = 100 * (process_cpu_seconds(self.broker_pid) - self._broker) / wall
        self.client_pct = 100 * (self._client() - self._client_start) / wall
        machine_pct = 100 * (machine_busy_seconds() - self._machine) / wall
        self.other_pct = max(0.0, machine_pct - self.broker_pct - self.client_pct)
        OTHER_CPU.append(self.other_pct)


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

    def restart(self) -> None:
        """Start the broker again after stop() or kill(), on its port and data."""
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

    def kill(self) -> None:
        """SIGKILL, as a crash would end it."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

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


class AdminPeer(Peer):
    """A broker that creates and deletes topics through the Kafka admin API."""

    _admin: AdminClient | None = None

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


class OdradekPeer(AdminPeer):
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
            python, "-m", "odradek",
            "--data-dir", str(self.data_dir),
            "--host", "127.0.0.1",
            "--port", str(self.port),
        ]  # fmt: skip
        for key, value in (overrides or {}).items():
            self.command += ["--override", f"{key}={value}"]
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.restart()

    def restart(self) -> None:
        """Start the broker (again, after stop() or kill()) on the same port and data."""
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

    def stop(self) -> None:
        self._admin = None
        super().stop()
        self._log.close()

    def kill(self) -> None:
        self._admin = None
        super().kill()
        self._log.close()


class KafkaPeer(AdminPeer):
    """Apache Kafka 4.4 (bench/reference_kafka.py); `startup_s` is spawn to accepting
    connections after the storage format, which `format_s` times on its own."""

    name = "kafka"

    def __init__(
        self, workdir: Path, label: str = "main", settings: dict[str, str] | None = None
    ) -> None:
        self.kafka = ReferenceKafka(workdir / f"kafka-{label}", extra=dict(settings or {}))
        self.log_path = self.kafka.log_file
        self.kafka.start()
        assert self.kafka.proc is not None and self.kafka.figures is not None
        self.proc = self.kafka.proc
        self.startup_s = self.kafka.figures.seconds
        self.format_s = self.kafka.figures.format_seconds
        self.bootstrap = self.kafka.bootstrap

    def stop(self) -> None:
        self._admin = None
        self.kafka.stop()

    def kill(self) -> None:
        self._admin = None
        self.kafka.kill()

    def restart(self) -> None:
        """Start Kafka again on the same ports and data (no new storage format)."""
        self.kafka.start()
        assert self.kafka.proc is not None and self.kafka.figures is not None
        self.proc = self.kafka.proc
        self.startup_s = self.kafka.figures.seconds


class MockPeer(Peer):
    name = "mock"

    def __init__(self, python: str, workdir: Path) -> None:
        self.log_path = workdir / "mock-host.log"
        self._log: IO[bytes] = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [python, "-m", "bench.peers", "--mock-host"],
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


if __name__ == "__main__":
    if sys.argv[1:] != ["--mock-host"]:
        sys.exit("usage: python -m bench.peers --mock-host")
    sys.exit(mock_host_main())
