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
from bench.peers import CpuMeter, Peer
from bench.report import Run, check_peer, peers_in_order, topic_name

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
    s = run.settings
    cases = [
        (1, False, "Java client, transactions v2: txn/s, 1 partition"),
        (8, True, "Java client, transactions v2: txn/s, 8 partitions + sendOffsetsToTransaction"),
    ]
    chosen = [p for p in peers if p.name in VERSION_2_PEERS]
    for index, (partitions, with_offsets, label) in enumerate(cases):
        results: dict[str, Any] = {}
        failures: dict[str, str] = {}
        for peer in peers_in_order(chosen, index):
            topic = topic_name(f"jtxn{partitions}")
            source = topic_name("jtxn-in") if with_offsets else None
            try:
                peer.create_topic(topic, partitions)
                if source is not None:
                    peer.create_topic(source, 8)
                with CpuMeter(peer.pid) as cpu:
                    figures = run_java_transactions(
                        peer.bootstrap,
                        topic,
                        partitions,
                        s.txn_seconds,
                        loop.warmup,
                        loop.records,
                        loop.value_size,
                        source,
                    )
                result = loop.result_type(
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
                cpu.record(result)
                if result.failed_transactions:
                    run.problems.append(f"{peer.name} {label}: {result.first_error}")
                if result.transactions:
                    results[peer.name] = result
                else:
                    failures[peer.name] = result.first_error or "no transaction completed"
                peer.delete_topic(topic)
                if source is not None:
                    peer.delete_topic(source)
                check_peer(run, peer, label)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                failures[peer.name] = str(exc)
                run.problems.append(f"{peer.name} {label}: {exc}")
            done = results.get(peer.name)
            print(
                f"    {peer.name}: "
                + (
                    f"{done.per_second:.0f} txn/s, commit p50 {done.commit_p50_ms:.1f} ms"
                    if done is not None
                    else f"failed ({failures.get(peer.name)})"
                ),
                flush=True,
            )
        loop.add_rows(run, label, results, failures)
