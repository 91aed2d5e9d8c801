"""A benchmark run: its settings and work dir, the steps it takes with the peers, the
rows it measures (Odradek beside the mock and, where the run starts it, Apache Kafka
4.4, each ratio oriented so that > 1 means Odradek is better), and the report: a
Markdown table on stdout and bench/results/NAME.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import confluent_kafka

from bench import reference_kafka
from bench.peers import (
    CLIENT_LOG,
    OTHER_CPU,
    REPO,
    KafkaPeer,
    MockPeer,
    OdradekPeer,
    Peer,
    venv_python,
)

RESULTS_DIR = REPO / "bench" / "results"


# --------------------------------------------------------------------------- the run
# Shared with bench/groups.py and bench/transactions.py: rows, the run's skeleton, the report.


def cpu_per_op_row(
    case: str,
    per_peer: Mapping[str, tuple[float, float]],
    unit: str = "µs",
    scale: float = 1e6,
    fmt: str = "{:.0f} µs",
    missing: str = "failed",
) -> Row:
    """A row of the broker's CPU time per operation, from (CPU seconds, operations);
    `scale` turns seconds into `unit` (µs by default). /proc counts CPU in ticks (10 ms):
    a peer that used less than one tick over the case gets no value, only a bound."""
    tick = 1 / os.sysconf("SC_CLK_TCK")
    values = {name: cpu / ops * scale for name, (cpu, ops) in per_peer.items() if ops}

    def text(name: str) -> str:
        if name not in values:
            return missing
        if values[name] == 0:
            return "< " + fmt.format(tick / per_peer[name][1] * scale) + " (under a tick)"
        return fmt.format(values[name])

    return peer_row(case, unit, "lower", lambda name: values.get(name) or None, text)


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
    kafka: float | None = None
    kafka_text: str = ""

    def _against(self, other: float | None) -> float | None:
        if not self.odradek or not other:
            return None
        return self.odradek / other if self.better == "higher" else other / self.odradek

    @property
    def ratio(self) -> float | None:
        """Odradek against the mock, > 1 when Odradek is better."""
        return self._against(self.mock)

    @property
    def kafka_ratio(self) -> float | None:
        """Odradek against Apache Kafka 4.4, > 1 when Odradek is better."""
        return self._against(self.kafka)


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
        kafka=value("kafka"),
        kafka_text=text("kafka"),
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
    with_kafka: bool = False  # the run starts Apache Kafka 4.4: its columns are reported


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


def start_kafka(run: Run, peers: list[Peer], settings: dict[str, str] | None = None) -> None:
    """Apache Kafka 4.4 as a third peer; if it does not start, the run goes on without it
    and says why (its columns show "failed")."""
    run.with_kafka = True
    run.extra["kafka_settings"] = dict(settings or {})
    if not reference_kafka.available():
        run.problems.append(
            f"Apache Kafka {reference_kafka.VERSION} not installed in {reference_kafka.LIB} "
            "(make install-test) or no java"
        )
        return
    try:
        peers.append(KafkaPeer(run.workdir, settings=settings))
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        run.problems.append(f"Apache Kafka did not start: {exc}")


def kafka_note(run: Run) -> str:
    """How the run's Kafka was started: the JVM heap and the settings beyond the rig's."""
    settings = run.extra.get("kafka_settings") or {}
    added = ", ".join(f"{key}={value}" for key, value in settings.items())
    return (
        f"Apache Kafka {reference_kafka.VERSION}: one combined KRaft node (broker and "
        f"controller) in one JVM, java {reference_kafka.HEAP}, the test rig's settings "
        "(bench/reference_kafka.py)" + (f" plus {added}" if added else "") + "; its CPU is "
        "the whole JVM process's (all threads), from /proc."
    )


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


def render_table(
    rows: list[Row], columns: tuple[str, str] = ("Odradek", "mock"), with_kafka: bool = False
) -> str:
    """Odradek, [Kafka 4.4 and the ratio against it,] the mock and the ratio against it."""

    def ratio(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    if not with_kafka:
        lines = [f"| case | {columns[0]} | {columns[1]} | ratio |", "|---|---|---|---|"]
        for row in rows:
            lines.append(
                f"| {row.case} | {row.odradek_text} | {row.mock_text} | {ratio(row.ratio)} |"
            )
        return "\n".join(lines)
    lines = [
        f"| case | {columns[0]} | Kafka 4.4 | vs Kafka | {columns[1]} | vs {columns[1]} |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.case} | {row.odradek_text} | {row.kafka_text} | {ratio(row.kafka_ratio)} "
            f"| {row.mock_text} | {ratio(row.ratio)} |"
        )
    return "\n".join(lines)


def row_json(row: Row, with_kafka: bool) -> dict[str, Any]:
    document = {**asdict(row), "ratio": row.ratio}
    if with_kafka:
        document["kafka_ratio"] = row.kafka_ratio
    else:
        del document["kafka"], document["kafka_text"]
    return document


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
    table = render_table(run.rows, columns, run.with_kafka)
    kafka = kafka_note(run) if run.with_kafka else ""
    notes = [note for note in [*notes, kafka, noise_note()] if note]
    text = "\n".join([table, "", *notes, "", f"command: `{command}`"])
    print()
    print(text)
    print_problems(run, findings)
    for line in appendix or []:
        print(line)
    print(f"\ntook {elapsed:.0f}s")
    document = {
        "command": command,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "seconds": round(elapsed, 1),
        "settings": asdict(run.settings) if settings is None else settings,
        "environment": environment(
            **(
                {"kafka": reference_kafka.VERSION, "kafka_jvm": reference_kafka.HEAP}
                if run.with_kafka
                else {}
            )
        ),
        "ratio_meaning": ratio_meaning,
        "rows": [row_json(row, run.with_kafka) for row in run.rows],
        **({} if notes_in_table else {"notes": notes}),
        "problems": run.problems,
        "other_cpu_pct_per_case": [round(v, 1) for v in OTHER_CPU],
        "loadavg_at_end": os.getloadavg(),
        "odradek_log_findings": findings,
        "librdkafka_warnings": CLIENT_LOG.lines,
        **(extra or {}),
        "table_markdown": text if notes_in_table else table,
    }
    write_results(name, document)


def write_results(name: str, document: dict[str, Any]) -> None:
    """bench/results/<name>.json, and where it is, on stdout."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"{name}.json"
    out.write_text(json.dumps(document, indent=2, default=str) + "\n")
    print(f"results: {out.relative_to(REPO)}")


def remove_workdir(run: Run, keep: bool) -> None:
    if keep:
        print(f"kept {run.workdir}")
    else:
        shutil.rmtree(run.workdir, ignore_errors=True)
