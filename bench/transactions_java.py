"""The transactions benchmark's cases on the Java client 4.4, which runs transactions
version 2 (KIP-890) against a broker that finalizes transaction.version 2: Odradek and
Kafka 4.4 (librdkafka's mock finalizes no features, so it is left out).

The loop is tests/streams' TxnBench (built with the Streams application by `make
install-test`): begin, the records, the offsets of an input topic when asked, commit,
for a fixed time after a few untimed transactions. The broker's CPU is measured as for
the librdkafka cases; the client is another process (its JVM counts as "other").
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any

from bench import streams_app
from bench.peers import Peer
from bench.report import Run
from bench.transaction_cases import Case, run_cases

VERSION_2_PEERS = ("odradek", "kafka")
JAVA_NOTE = (
    "Java client rows: the Java client 4.4 in its own JVM (its CPU counts as other), which "
    "runs transactions version 2 on Odradek and Kafka 4.4 (the librdkafka rows run "
    "version 1), linger.ms=0."
)


def run_java_transactions(
    bootstrap: str,
    topic: str,
    partitions: int,
    seconds: float,
    warmup: int,
    records: int,
    value_size: int,
    offsets_topic: str | None,
) -> dict[str, Any]:
    """TxnBench's figures (transactions, seconds, commit latencies, failures)."""
    classpath = f"{streams_app.CLASSES}:{streams_app.LIB}/*"
    command = [
        "java",
        "-Xmx512m",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        classpath,
        "dev.odradek.streams.TxnBench",
        bootstrap,
        topic,
        str(partitions),
        str(seconds),
        str(warmup),
        str(records),
        str(value_size),
        offsets_topic or "-",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"TxnBench failed ({done.returncode}): {done.stderr[-400:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


@dataclass(frozen=True)
class Loop:
    """What bench/transactions.py's loops are made of, and how it reports them."""

    records: int
    value_size: int
    warmup: int
    result_type: Any  # its TxnResult
    add_rows: Any  # its add_txn_rows(run, label, results, failures)


def run_java_txn_cases(run: Run, peers: list[Peer], loop: Loop) -> None:
    """The librdkafka cases' two loops, on the Java client: rows of their own."""
    cases: list[Case] = [
        (1, False, "Java client, transactions v2: txn/s, 1 partition"),
        (8, True, "Java client, transactions v2: txn/s, 8 partitions + sendOffsetsToTransaction"),
    ]

    def transact(
        bootstrap: str, topic: str, partitions: int, seconds: float, source: str | None
    ) -> Any:
        figures = run_java_transactions(
            bootstrap,
            topic,
            partitions,
            seconds,
            loop.warmup,
            loop.records,
            loop.value_size,
            source,
        )
        return loop.result_type(
            transactions=figures["transactions"],
            records=figures["transactions"] * loop.records,
            seconds=figures["seconds"],
            init_ms=figures["init_ms"],
            commit_p50_ms=figures["commit_p50_ms"],
            commit_p99_ms=figures["commit_p99_ms"],
            commit_max_ms=figures["commit_max_ms"],
            txn_p50_ms=figures["txn_p50_ms"],
            failed_transactions=figures["failed_transactions"],
            first_error=figures["first_error"],
        )

    chosen = [p for p in peers if p.name in VERSION_2_PEERS]
    errors = (RuntimeError, subprocess.TimeoutExpired, ValueError)
    run_cases(run, chosen, cases, transact, "jtxn", loop.add_rows, errors)
