"""Helpers shared by bench/groups.py and bench/transactions.py.

Only what cannot be imported from bench/data_plane.py lives here:

- `OdradekPeer` there starts the broker without `--override` settings; the group
  benchmark needs `group.initial.rebalance.delay.ms=0`, so `ConfiguredOdradek`
  starts it the same way with overrides appended.
- The mock host there only creates and deletes topics; `ConfiguredMock` hosts the
  mock in a child process (`python -m bench.common --mock-host`) that can also set
  the mock's initial rebalance delay (librdkafka's default for the mock: 3000 ms).
- Rendering and writing the results (Markdown table + JSON) for a list of `Row`s.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

import confluent_kafka

from bench.data_plane import (
    CLIENT_LOG,
    OTHER_CPU,
    REPO,
    RESULTS_DIR,
    MockPeer,
    OdradekPeer,
    Peer,
    Row,
    _Librdkafka,
    broker_log_findings,
    free_port,
    git_head,
    log_tail,
    wait_until_accepting,
)

# --------------------------------------------------------------------------- peers


class ConfiguredOdradek(OdradekPeer):
    """`OdradekPeer` with `--override KEY=VALUE` settings (same layout and log)."""

    def __init__(
        self,
        python: str,
        workdir: Path,
        label: str = "main",
        overrides: dict[str, str] | None = None,
    ) -> None:
        self.overrides = dict(overrides or {})
        self.data_dir = workdir / f"data-{label}"
        self.port = free_port()
        self.log_path = workdir / f"odradek-{label}.log"
        self.command = [
            python, "-m", "broker",
            "--data-dir", str(self.data_dir),
            "--host", "127.0.0.1",
            "--port", str(self.port),
        ]  # fmt: skip
        for key, value in self.overrides.items():
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
        self._admin = None


class ConfiguredMock(MockPeer):
    """`MockPeer` whose host also takes `set_rebalance_delay` (see `mock_host_main`)."""

    def __init__(self, python: str, workdir: Path) -> None:
        self.log_path = workdir / "mock-host.log"
        self._log: IO[bytes] = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [python, "-m", "bench.common", "--mock-host"],
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

    def set_rebalance_delay(self, delay_ms: int) -> None:
        err = self._command(op="rebalance_delay", ms=delay_ms)
        if err:
            raise RuntimeError(f"mock rebalance delay not set: {err}")


def mock_host_main() -> int:
    """Child process: a one-broker mock cluster, commands as JSON lines on stdin."""
    lib = _Librdkafka().lib
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms.restype = None
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms.argtypes = [ctypes.c_void_p, ctypes.c_int32]
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
        else:
            err = -1
        print(json.dumps({"err": err}), flush=True)
    lib.rd_kafka_mock_cluster_destroy(cluster)
    lib.rd_kafka_destroy(handle)
    return 0


# --------------------------------------------------------------------------- output


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def render_table(rows: list[Row]) -> str:
    lines = ["| case | Odradek | mock | ratio |", "|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row.case} | {row.odradek_text} | {row.mock_text} | {fmt_ratio(row.ratio)} |"
        )
    return "\n".join(lines)


def noise_note() -> str:
    if not OTHER_CPU:
        return ""
    worst = max(OTHER_CPU)
    note = (
        f"Other load on the machine during the cases (CPU outside broker and client, "
        f"% of one core): median {statistics.median(OTHER_CPU):.0f}%, max {worst:.0f}%."
    )
    if worst > 30:
        note += " Above ~30% the figures are disturbed by other work."
    return note


def log_excerpt(path: Path | None, limit: int = 40) -> list[str]:
    return broker_log_findings(path, limit) if path is not None else []


def report(
    *,
    name: str,
    command: str,
    rows: list[Row],
    notes: list[str],
    problems: list[str],
    findings: list[str],
    settings: dict[str, Any],
    elapsed: float,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Print the table, problems and log excerpts; write bench/results/NAME.json."""
    table = render_table(rows)
    text_notes = [n for n in [*notes, noise_note()] if n]
    print()
    print(table)
    print()
    for note in text_notes:
        print(note)
    print(f"\ncommand: `{command}`")
    if problems:
        print("\nproblems:")
        for problem in problems:
            print(f"- {problem}")
    if findings:
        print("\nOdradek log excerpt (warnings/errors):")
        for line in findings[:20]:
            print(f"  {line}")
    if CLIENT_LOG.lines:
        print("\nlibrdkafka warnings (first 20):")
        for line in CLIENT_LOG.lines[:20]:
            print(f"  {line}")
    print(f"\ntook {elapsed:.0f}s")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"{name}.json"
    document = {
        "command": command,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(elapsed, 1),
        "settings": settings,
        "environment": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "confluent_kafka": confluent_kafka.version()[0],
            "librdkafka": confluent_kafka.libversion()[0],
            "git_head": git_head(),
        },
        "ratio_meaning": ">1 means Odradek is better",
        "rows": [{**asdict(row), "ratio": row.ratio} for row in rows],
        "notes": text_notes,
        "problems": problems,
        "other_cpu_pct_per_case": [round(v, 1) for v in OTHER_CPU],
        "loadavg_at_end": os.getloadavg(),
        "odradek_log_findings": findings,
        "librdkafka_warnings": CLIENT_LOG.lines,
        **(extra or {}),
        "table_markdown": table,
    }
    out.write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"results: {out.relative_to(REPO)}")
    return out


def command_line(module: str) -> str:
    """The command that reproduces this run (data_plane's helper names its own module)."""
    argv = [sys.executable, "-m", module, *sys.argv[1:]]
    return f"cd {shlex.quote(str(Path.cwd()))} && {shlex.join(argv)}"


def check_alive(problems: list[str], peer: Peer, when: str) -> None:
    died = peer.died()
    if died:
        problems.append(f"{died} ({when}); log tail:\n{log_tail(peer.log_path)}")
        raise RuntimeError(died)


def stop_all(peers: list[Any]) -> None:
    for peer in peers:
        with contextlib.suppress(Exception):
            peer.stop()


if __name__ == "__main__":
    if "--mock-host" in sys.argv[1:]:
        sys.exit(mock_host_main())
    sys.exit("usage: python -m bench.common --mock-host (used by the benchmarks)")
