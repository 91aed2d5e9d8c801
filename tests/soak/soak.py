"""Soak: kill -9 cycles of one broker under mixed load, then a check of the guarantees.

    PYTHONPATH=tests .venv/bin/python -m soak.soak --cycles 100      (make soak)

One broker on one data directory; idempotent producers, transactional producers and
two consumer groups (classic and consumer protocol) run against it all the time. Each
cycle lets the load run for a random time, kills the broker with SIGKILL, pauses for
a random time and restarts it on the same data directory. Then the load stops and
everything is read back with a read_committed consumer:

- every acknowledged idempotent record is there, once, in order (per producer and
  partition), offsets contiguous;
- committed transactions are whole, aborted ones invisible, those in doubt (commit or
  abort call that did not return) all or nothing;
- each group's acknowledged commits never go backwards, and OffsetFetch after the last
  restart gives at least the last acknowledged commit of each partition.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from helpers.broker import Broker
from helpers.topics import create_topic

from soak.verify import (
    check_commit_order,
    check_fetched_offsets,
    check_idempotent,
    check_transactions,
    committed_offsets,
    last_commits,
    read_committed,
    wait_no_open_transaction,
)
from soak.workload import Load, LoadContext, LoadPlan

# Waits for every worker to make progress (at the start, and after the last restart).
RESUME_TIMEOUT = 90.0
STOP_TIMEOUT = 120.0


@dataclass
class SoakSettings:
    cycles: int
    seed: int
    min_run: float = 0.5  # seconds of load before each kill, drawn between min and max
    max_run: float = 3.0
    max_pause: float = 1.0  # seconds between the kill and the restart, drawn from 0 to max
    plan: LoadPlan = field(default_factory=LoadPlan)


@dataclass
class SoakResult:
    figures: list[tuple[str, str]]
    problems: list[str]

    def table(self) -> str:
        width = max(len(name) for name, _ in self.figures)
        value_width = max(len(value) for _, value in self.figures)
        rule = f"+-{'-' * width}-+-{'-' * value_width}-+"
        rows = [f"| {name:<{width}} | {value:>{value_width}} |" for name, value in self.figures]
        return "\n".join([rule, *rows, rule])


def _seconds(values: list[float]) -> str:
    if not values:
        return "n/a"
    return (
        f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f} (n={len(values)})"
    )


def _wait_for_progress(load: Load, since: float, timeout: float) -> list[str]:
    """Workers still idle after ``timeout`` (those the broker acknowledged nothing to
    since ``since``)."""
    deadline = time.monotonic() + timeout
    while True:
        idle = load.idle_since(since)
        if not idle or time.monotonic() > deadline:
            return idle
        time.sleep(0.2)


def run_soak(
    broker: Broker, settings: SoakSettings, say: Callable[[str], None] = print
) -> SoakResult:
    """Run the cycles against a started ``broker`` (which this kills and restarts)."""
    began = time.monotonic()
    plan = settings.plan
    pick = random.Random(settings.seed)
    problems: list[str] = []
    create_topic(broker.bootstrap, plan.data_topic, partitions=plan.partitions)
    create_topic(broker.bootstrap, plan.txn_topic, partitions=plan.partitions)

    ctx = LoadContext(broker.bootstrap, broker_run=broker.starts)
    load = Load(ctx, plan, settings.seed)
    load.start()
    idle = _wait_for_progress(load, 0.0, RESUME_TIMEOUT)
    if idle:
        problems.append(f"no progress before the first kill: {idle}")

    restart_times: list[float] = []
    restart_started: dict[int, float] = {}
    offsets_checked = 0
    for cycle in range(1, settings.cycles + 1):
        ran = pick.uniform(settings.min_run, settings.max_run)
        time.sleep(ran)
        # no new offset commits until OffsetFetch after the restart: a commit made after
        # the restart would hide one lost in the crash
        ctx.commits_paused.set()
        broker.kill()
        acknowledged = last_commits(load.members)
        pause = pick.uniform(0.0, settings.max_pause)
        time.sleep(pause)
        ctx.broker_run = broker.starts + 1
        started = time.monotonic()
        restart_started[ctx.broker_run] = started
        broker.start()
        restart_times.append(time.monotonic() - started)
        fetched = committed_offsets(broker.bootstrap, load.groups, plan.data_topic, plan.partitions)
        offsets_checked += check_fetched_offsets(
            acknowledged, fetched, f"after restart {cycle}", problems
        )
        ctx.commits_paused.clear()
        say(
            f"cycle {cycle}/{settings.cycles}: load {ran:.1f} s, kill -9, pause {pause:.1f} s, "
            f"restart {restart_times[-1]:.2f} s"
        )

    last_restart = time.monotonic()
    idle = _wait_for_progress(load, last_restart, RESUME_TIMEOUT)
    if idle:
        problems.append(f"no progress after the last restart within {RESUME_TIMEOUT:.0f} s: {idle}")
    time.sleep(1.0)
    stuck = load.stop(STOP_TIMEOUT)
    if stuck:
        problems.append(f"workers did not stop within {STOP_TIMEOUT:.0f} s: {stuck}")
    problems += load.errors()

    if not wait_no_open_transaction(broker.bootstrap, plan.txn_topic, plan.partitions, 60):
        problems.append(f"{plan.txn_topic}: a transaction is still open 60 s after the load")
    data = read_committed(broker.bootstrap, plan.data_topic, plan.partitions)
    txn_data = read_committed(broker.bootstrap, plan.txn_topic, plan.partitions)
    final = committed_offsets(broker.bootstrap, load.groups, plan.data_topic, plan.partitions)
    offsets_checked += check_fetched_offsets(
        last_commits(load.members), final, "at the end", problems
    )

    records = check_idempotent(load.writers, data, problems)
    txns = check_transactions(load.txn_writers, txn_data, problems)
    commits = check_commit_order(load.members, problems)
    if records.acknowledged == 0 or txns.committed == 0 or commits == 0:
        problems.append("the load made too little progress for the checks to mean anything")

    first_acks = [
        min(w.first_ack_in_run[run] for w in load.writers if run in w.first_ack_in_run) - at
        for run, at in restart_started.items()
        if any(run in w.first_ack_in_run for w in load.writers)
    ]
    figures = [
        ("seed", str(settings.seed)),
        ("cycles (kill -9, pause, restart)", str(settings.cycles)),
        ("idempotent records acknowledged / found", f"{records.acknowledged} / {records.found}"),
        ("idempotent records failed (not acknowledged)", str(records.failed)),
        (
            "transactions committed / aborted / in doubt",
            f"{txns.committed} / {txns.aborted} / {txns.in_doubt_landed + txns.in_doubt_vanished}",
        ),
        (
            "in doubt: landed whole / vanished",
            f"{txns.in_doubt_landed} / {txns.in_doubt_vanished}",
        ),
        (
            "transactional records expected / found",
            f"{txns.records_expected} / {txns.records_found}",
        ),
        ("group commits acknowledged", str(commits)),
        ("OffsetFetch checks (after each restart, at the end)", str(offsets_checked)),
        ("records consumed by the groups", str(sum(m.consumed for m in load.members))),
        ("restart to port open, s (min / median / max)", _seconds(restart_times)),
        ("restart to first acknowledged record, s", _seconds(first_acks)),
        ("wall time, s", f"{time.monotonic() - began:.0f}"),
        ("problems", str(len(problems))),
    ]
    return SoakResult(figures, problems)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak.soak", description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--min-run", type=float, default=0.5, help="least load time per cycle, s")
    parser.add_argument("--max-run", type=float, default=3.0, help="most load time per cycle, s")
    parser.add_argument("--max-pause", type=float, default=1.0, help="most pause after a kill, s")
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="data dir and broker log (default: temporary)"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="odradek-soak-"))
    broker = Broker(work_dir / "data", log_dir=work_dir)
    print(f"soak: seed {seed}, broker on {broker.bootstrap}, data in {broker.data_dir}")
    broker.start()
    try:
        result = run_soak(
            broker,
            SoakSettings(
                cycles=args.cycles,
                seed=seed,
                min_run=args.min_run,
                max_run=args.max_run,
                max_pause=args.max_pause,
            ),
        )
    finally:
        broker.stop()
    print(result.table())
    for problem in result.problems:
        print(f"PROBLEM: {problem}")
    print(f"broker log: {broker.log_path}")
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
