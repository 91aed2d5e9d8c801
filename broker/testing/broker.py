"""A real Odradek broker process for tests, in this project and in others.

    from odradek.testing import Broker

    with Broker() as broker:                     # a temporary data directory, a free port
        use(broker.bootstrap_servers)
        broker.kill()                            # SIGKILL, as a crash
        broker.restart()                         # same data, same port

    Broker({"num.partitions": 3}).start()        # Kafka settings, as server.properties names them

    with Cluster(brokers=3) as cluster:         # several nodes: see broker/testing/cluster.py
        cluster.kill(cluster.leader_of("orders", 0))

pytest users get fixtures from the plugin (broker/testing/pytest_plugin.py): ``odradek_broker``,
``odradek_bootstrap_servers``, ``odradek_broker_factory`` and ``odradek_cluster``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

import odradek
from odradek.broker.testing.faults import FaultControl

START_TIMEOUT = float(os.environ.get("ODRADEK_BROKER_START_TIMEOUT", "10"))
STOP_TIMEOUT = float(os.environ.get("ODRADEK_BROKER_STOP_TIMEOUT", "15"))


class BrokerStartError(RuntimeError):
    pass


_LIVE: set[Broker] = set()


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_LIVE):
        broker.kill()


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, for a process started later to listen on.

    The kernel's own picks (``bind(0)``, and the local end of every outgoing
    connection) come from the ephemeral range, so a port picked there may be taken by
    somebody's connection before the broker binds it. The ports handed out here lie
    below that range, each pytest-xdist worker in a slice of its own, in turn."""
    with _PORTS.lock:
        for port in _PORTS.candidates():
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class _PortTurns:
    """The ports below the ephemeral range that this process hands out, in turn."""

    LOWEST = 10000

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._next: int | None = None

    def _slice(self) -> tuple[int, int]:
        try:
            with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
                ephemeral_low = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            ephemeral_low = 32768
        if ephemeral_low - self.LOWEST < 1000:
            return 0, 0
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
        index = int(worker) if worker.isdigit() else 0
        width = (ephemeral_low - self.LOWEST) // max(count, index + 1)
        low = self.LOWEST + index * width
        return low, low + width

    def candidates(self) -> Iterator[int]:
        """Each port of the slice once, from the one after the last handed out."""
        low, high = self._slice()
        if high <= low:
            return
        if self._next is None or not low <= self._next < high:
            self._next = low + os.getpid() % (high - low)
        start = self._next
        for i in range(high - low):
            port = low + (start - low + i) % (high - low)
            self._next = port + 1
            yield port


_PORTS = _PortTurns()


def port_accepts(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def normalize_overrides(
    overrides: Mapping[str, object] | None = None, **kw: object
) -> dict[str, str]:
    """Merge a mapping of Kafka config names with keyword arguments (``num_partitions=3``
    becomes ``num.partitions=3``). Booleans become ``true``/``false``."""
    out: dict[str, str] = {}
    items: list[tuple[str, object]] = list((overrides or {}).items())
    items += [(k.replace("_", "."), v) for k, v in kw.items()]
    for key, value in items:
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


# The directory holding the odradek package, so that the process runs the same code.
_PACKAGE_ROOT = Path(odradek.__file__).resolve().parent.parent


class Broker:
    """One broker process: ``start()``, ``stop()`` (SIGTERM), ``kill()`` (SIGKILL),
    ``restart()`` (same data dir and port). Logs (stdout and stderr) go to ``log_path``.
    Without ``data_dir`` it uses a temporary directory, removed by ``close()`` (and on
    leaving a ``with`` block)."""

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        overrides: Mapping[str, object] | None = None,
        metrics_port: int | None = None,
        config_file: Path | None = None,
        extra_args: Sequence[str] = (),
        log_dir: Path | None = None,
        python: str | None = None,
        external: bool = False,
        env: Mapping[str, str] | None = None,
        faults: bool = False,
    ) -> None:
        self._temporary: Path | None = None
        if data_dir is None:
            self._temporary = Path(tempfile.mkdtemp(prefix="odradek-"))
            data_dir = self._temporary / "data"
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.overrides = normalize_overrides(overrides)
        self.metrics_port = metrics_port
        self.config_file = config_file
        self.extra_args = list(extra_args)
        self.enable_faults = faults  # tests may inject faults (``self.faults``)
        self.log_dir = Path(log_dir) if log_dir is not None else self.data_dir.parent
        self.python = python or os.environ.get("ODRADEK_PYTHON") or sys.executable
        # external: a broker this object does not own (ODRADEK_BOOTSTRAP_SERVERS in the
        # pytest plugin), e.g. to check tests against another Kafka; start/stop/kill do nothing.
        self.external = external
        # extra environment variables for the broker process (e.g. ODRADEK_TXN_CRASH_AT);
        # may be changed between restarts
        self.env: dict[str, str] = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._log_file: IO[bytes] | None = None
        self._expected_exit = False
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.log_dir / f"broker-{self.port}.log"

    # ------------------------------------------------------------------ properties

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def bootstrap_servers(self) -> str:
        """What a client's bootstrap.servers setting takes."""
        return self.bootstrap

    @property
    def faults(self) -> FaultControl:
        """Its fault injection (started with ``faults=True``; refused otherwise)."""
        return FaultControl(self.bootstrap)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def is_running(self) -> bool:
        if self.external:
            return port_accepts(self.host, self.port)
        return self.proc is not None and self.proc.poll() is None

    def listeners_configured(self) -> bool:
        """True when the settings name the listeners: then ``host`` and ``port`` only say
        where to check that the broker is up."""
        return "listeners" in self.overrides or "KAFKA_LISTENERS" in self.env

    def died_unexpectedly(self) -> bool:
        """True when the process exited without stop()/kill() being asked for."""
        return self.proc is not None and self.proc.poll() is not None and not self._expected_exit

    def command(self) -> list[str]:
        cmd = [
            self.python,
            "-m",
            "odradek",
            "--data-dir",
            str(self.data_dir),
        ]
        if not self.listeners_configured():
            cmd += ["--host", self.host, "--port", str(self.port)]
        if self.metrics_port is not None:
            cmd += ["--metrics-port", str(self.metrics_port)]
        if self.enable_faults:
            cmd.append("--enable-faults")
        if self.config_file is not None:
            cmd += ["--config", str(self.config_file)]
        for key, value in self.overrides.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd + self.extra_args

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def start_log(
        self, start: int, wait_for: str = '"event": "started"', timeout: float = 10
    ) -> str:
        """The log written since start number `start`, once it holds `wait_for`: the port
        accepts connections a moment before the broker's first lines are written."""
        deadline = time.monotonic() + timeout
        while True:
            parts = self.log_text().split(f"==== start #{start}:")
            text = parts[1] if len(parts) > 1 else ""
            if wait_for in text or time.monotonic() > deadline:
                return text
            time.sleep(0.05)

    def log_tail(self, max_chars: int = 6000) -> str:
        text = self.log_text()
        return text if len(text) <= max_chars else "...\n" + text[-max_chars:]

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = START_TIMEOUT) -> Broker:
        if self.external:
            return self
        if self.is_running():
            raise RuntimeError(f"broker on {self.bootstrap} is already running")
        self.starts += 1
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the process
        self._log_file.write(f"==== start #{self.starts}: {' '.join(self.command())}\n".encode())
        self._log_file.flush()
        self._expected_exit = False
        env = dict(os.environ)
        env.update(self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p
        )
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        _LIVE.add(self)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        assert self.proc is not None
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                self._expected_exit = True
                raise BrokerStartError(
                    f"broker exited with status {code} before accepting connections on "
                    f"{self.bootstrap}\ncommand: {' '.join(self.command())}\n"
                    f"--- broker log ({self.log_path}) ---\n{self.log_tail()}"
                )
            if port_accepts(self.host, self.port):
                return
            time.sleep(0.05)
        self.kill()
        raise BrokerStartError(
            f"broker did not accept connections on {self.bootstrap} within {timeout:.0f}s\n"
            f"command: {' '.join(self.command())}\n"
            f"--- broker log ({self.log_path}) ---\n{self.log_tail()}"
        )

    def stop(self, timeout: float = STOP_TIMEOUT) -> int | None:
        """SIGTERM and wait; SIGKILL if it does not exit in time. Returns the exit status."""
        if self.proc is None:
            return None
        self._expected_exit = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._write_log_note(f"did not exit {timeout:.0f}s after SIGTERM; SIGKILL")
                self.proc.kill()
                self.proc.wait()
        self._close_log()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL (a crash) and reap."""
        if self.proc is None:
            return
        self._expected_exit = True
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._close_log()

    def suspend(self) -> None:
        """SIGSTOP: the process stays, answering nothing (a long pause, a cut-off node)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after suspend()."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    def restart(self, *, hard: bool = False, timeout: float = START_TIMEOUT) -> Broker:
        """Stop (SIGTERM, or SIGKILL when ``hard``) and start again on the same dir and port."""
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start(timeout)

    def _write_log_note(self, note: str) -> None:
        if self._log_file is not None and not self._log_file.closed:
            self._log_file.write(f"==== harness: {note}\n".encode())
            self._log_file.flush()

    def _close_log(self) -> None:
        _LIVE.discard(self)
        if self._log_file is not None and not self._log_file.closed:
            status = self.proc.returncode if self.proc is not None else None
            self._log_file.write(f"==== exited with status {status}\n".encode())
            self._log_file.close()

    def close(self) -> None:
        """Kill the process; remove the temporary directory if this object made it."""
        self.kill()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def __enter__(self) -> Broker:
        return self.start() if not self.is_running() else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<Broker {self.bootstrap} {state} data_dir={self.data_dir}>"
