"""Scenarios of the transaction admin APIs (DescribeTransactions, ListTransactions,
DescribeProducers) and of WriteTxnMarkers sent by a client."""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_groups import ready
from conformance.scenarios_topics import quietly_create
from conformance.scenarios_transactions import (
    add_partitions,
    begin,
    describe_transactions,
    end,
    init,
    produce,
    settled,
)
from odradek.protocol.batch import build_batch

PRODUCE, WRITE_TXN_MARKERS, DESCRIBE_PRODUCERS = 0, 27, 61
LIST_TRANSACTIONS = 66


@scenario("describe-transactions.cases", "an empty, an open and an ended transaction; unknown ids")
def _describe_transactions(run: Run) -> None:
    txn, topic = run.name("t"), run.name("topic")
    quietly_create(run, topic, 3)
    pid, epoch = begin(run, txn)
    describe_transactions(run, txn)
    add_partitions(run, txn, pid, epoch, {topic: [2, 0]})
    describe_transactions(run, txn)
    describe_transactions(run, run.name("never"))
    describe_transactions(run, "")
    describe_transactions(run)
    end(run, txn, pid, epoch, True)
    settled(run, txn)
    describe_transactions(run, txn)


def listed(run: Run, version: int, body: dict[str, Any]) -> None:
    """ListTransactions, keeping only this run's transactional ids (the broker is
    shared)."""
    answer = run.quiet(LIST_TRANSACTIONS, version, body)
    mine = sorted(
        (t for t in answer.transaction_states if t.transactional_id.startswith(run.prefix)),
        key=lambda t: t.transactional_id,
    )
    shown = {
        "error_code": answer.error_code,
        "unknown_state_filters": answer.unknown_state_filters,
        "transaction_states": mine,
    }
    run.steps.append({"api": LIST_TRANSACTIONS, "version": version, "answer": shown})


@scenario(
    "list-transactions.filters", "ListTransactions v0-v1 filtered by state, producer, duration"
)
def _list_transactions(run: Run) -> None:
    empty, ongoing, topic = run.name("a-empty"), run.name("b-ongoing"), run.name("topic")
    quietly_create(run, topic)
    begin(run, empty)
    pid, epoch = begin(run, ongoing)
    add_partitions(run, ongoing, pid, epoch, {topic: [0]})

    def body(states: list[str], producers: list[int], duration: int = -1) -> dict[str, Any]:
        return {
            "state_filters": states,
            "producer_id_filters": producers,
            "duration_filter": duration,
        }

    listed(run, 0, {"state_filters": [], "producer_id_filters": []})
    listed(run, 1, body(["Ongoing"], []))
    listed(run, 1, body(["Empty", "Bogus", "ongoing"], []))
    listed(run, 1, body([], [pid]))
    listed(run, 1, body(["Empty"], [pid]))
    listed(run, 1, body([], [], 3_600_000))
    listed(run, 1, body([], [], 0))
    listed(run, 1, body(["CompleteCommit"], [], -5))
    end(run, ongoing, pid, epoch, False)
    settled(run, ongoing)
    listed(run, 1, body(["CompleteAbort", "PrepareAbort"], []))
    # v2: a pattern the whole id must match (so only this run's ids: the answer is kept whole)
    for pattern in (f"{run.prefix}-a.*", f"{run.prefix}.*ongoing", "a-empty", "[", "(?<x"):
        run.call(LIST_TRANSACTIONS, 2, {**body([], []), "transactional_id_pattern": pattern})


def idempotent_batch(pid: int, epoch: int, sequence: int) -> bytes:
    return build_batch(
        [(None, b"x")], producer_id=pid, producer_epoch=epoch, base_sequence=sequence
    )


@scenario("describe-producers.cases", "producers of partitions: idempotent, transactional, none")
def _describe_producers(run: Run) -> None:
    txn, topic = run.name("t"), run.name("topic")
    quietly_create(run, topic, 2)
    started = init(run, None)
    idempotent, idempotent_epoch = int(started.producer_id), int(started.producer_epoch)
    for sequence in (0, 1, 2):
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout": 10000,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [
                        {
                            "index": 1,
                            "records": idempotent_batch(idempotent, idempotent_epoch, sequence),
                        }
                    ],
                }
            ],
        }
        run.quiet(PRODUCE, 9, body)
    pid, epoch = begin(run, txn)
    add_partitions(run, txn, pid, epoch, {topic: [0]})
    produce(run, txn, topic, pid, epoch)
    describe = {"topics": [{"name": topic, "partition_indexes": [0, 1, 2, -1]}]}
    run.call(DESCRIBE_PRODUCERS, 0, describe)
    run.call(
        DESCRIBE_PRODUCERS, 0, {"topics": [{"name": run.name("none"), "partition_indexes": [0]}]}
    )
    run.call(DESCRIBE_PRODUCERS, 0, {"topics": []})
    end(run, txn, pid, epoch, True)
    settled(run, txn)
    run.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})


def markers(
    run: Run,
    pid: int,
    epoch: int,
    commit: bool,
    topics: dict[str, list[int]],
    coordinator_epoch: int = 0,
    version: int = 1,
) -> Any:
    body = {
        "markers": [
            {
                "producer_id": pid,
                "producer_epoch": epoch,
                "transaction_result": commit,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                "coordinator_epoch": coordinator_epoch,
                "transaction_version": 2,
            }
        ]
    }
    return run.call(WRITE_TXN_MARKERS, version, body)


@scenario("write-txn-markers.from-a-client", "WriteTxnMarkers sent by a client, good and bad")
def _write_markers(run: Run) -> None:
    txn, topic = run.name("t"), run.name("topic")
    quietly_create(run, topic, 2)
    ready(run, 0, run.name("g"))
    pid, epoch = begin(run, txn)
    add_partitions(run, txn, pid, epoch, {topic: [0]})
    produce(run, txn, topic, pid, epoch)
    markers(run, pid, epoch, False, {topic: [1]})
    markers(run, pid, epoch, True, {topic: [5]}, version=2)  # (one topic a marker: Kafka answers
    markers(run, pid, epoch, True, {run.name("none"): [0]})  # several in a hash map's order)
    markers(run, pid, epoch - 1, False, {topic: [0]})
    markers(run, pid + 1000, 0, True, {topic: [0]}, version=2)
    run.call(WRITE_TXN_MARKERS, 1, {"markers": []})
    run.call(WRITE_TXN_MARKERS, 2, {"markers": []})
    end(run, txn, pid, epoch, False)
    settled(run, txn)
    # after the coordinator's marker: one of an older coordinator epoch, of the same
    markers(run, pid, epoch, False, {topic: [0]}, coordinator_epoch=-1)
    markers(run, pid, epoch, True, {topic: [0]})
