"""One transaction loop (librdkafka's or the Java client's) on each peer in turn, for
each case: topics made and removed around it, the broker's CPU measured, problems
noted, and the case's rows added by the caller's `add_rows`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.peers import CpuMeter, Peer
from bench.report import Run, check_peer, peers_in_order, topic_name

# (partitions, with the offsets of an input topic, the case's label)
Case = tuple[int, bool, str]
# (bootstrap, topic, partitions, seconds, input topic or None) -> a TxnResult
Transact = Callable[[str, str, int, float, str | None], Any]


def run_cases(
    run: Run,
    peers: list[Peer],
    cases: list[Case],
    transact: Transact,
    prefix: str,
    add_rows: Callable[[Run, str, dict[str, Any], dict[str, str]], None],
    errors: tuple[type[BaseException], ...],
) -> None:
    for index, (partitions, with_offsets, label) in enumerate(cases):
        results: dict[str, Any] = {}
        failures: dict[str, str] = {}
        for peer in peers_in_order(peers, index):
            topic = topic_name(f"{prefix}{partitions}")
            source = topic_name(f"{prefix}-in") if with_offsets else None
            try:
                peer.create_topic(topic, partitions)
                if source is not None:
                    peer.create_topic(source, 8)
                with CpuMeter(peer.pid) as cpu:
                    result = transact(
                        peer.bootstrap, topic, partitions, run.settings.txn_seconds, source
                    )
                cpu.record(result)
                if result.failed_transactions or result.delivery_errors:
                    run.problems.append(
                        f"{peer.name} {label}: {result.failed_transactions} failed transactions, "
                        f"{result.delivery_errors} delivery errors; first: {result.first_error}"
                    )
                if result.transactions:
                    results[peer.name] = result
                else:
                    failures[peer.name] = result.first_error or "no transaction completed"
                peer.delete_topic(topic)
                if source is not None:
                    peer.delete_topic(source)
                check_peer(run, peer, label)
            except errors as exc:
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
        add_rows(run, label, results, failures)
