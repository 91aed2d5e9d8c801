"""Scenarios of transactions version 2 (KIP-890): InitProducerId v5, Produce v12 adding
its partition to the transaction, TxnOffsetCommit v5 adding the group's offsets
partition, and EndTxn v5 bumping the epoch at every end; a late Produce of the old
epoch, and the retries and refusals of EndTxn v5."""

from __future__ import annotations

import uuid
from typing import Any

from conformance import scenarios_transactions as v1
from conformance.harness import Run, scenario
from conformance.scenarios_groups import ready
from conformance.scenarios_topics import quietly_create, topic_id
from conformance.scenarios_transactions import (
    begin,
    describe_transactions,
    fetch_offsets,
    settled,
)

PRODUCE, END_TXN, TXN_OFFSET_COMMIT, INIT_PRODUCER_ID = 0, 26, 28, 22


def produce(run: Run, txn: str, topic: str, pid: int, epoch: int, sequence: int) -> Any:
    return v1.produce(run, txn, topic, pid, epoch, sequence, version=12, keep=True)


def describe(run: Run, txn: str) -> None:
    """The transaction's state, epoch and topics (the group's offsets partition is not
    the same partition on two brokers with different partition counts)."""
    answer = describe_transactions(run, txn, keep=False)["transaction_states"][0]
    topics = [t["topic"] for t in answer["topics"]]
    run.record("described", (answer["transaction_state"], answer["producer_epoch"], topics))


def end(run: Run, txn: str, pid: int, epoch: int, committed: bool) -> Any:
    body = {"transactional_id": txn, "producer_id": pid, "producer_epoch": epoch}
    answer = run.call(END_TXN, 5, {**body, "committed": committed})
    run.record("epoch moved by", answer.producer_epoch - epoch if answer.error_code == 0 else None)
    return answer


def txn_commit(run: Run, txn: str, pid: int, epoch: int, group: str, topic: str | uuid.UUID) -> Any:
    """TxnOffsetCommit v5 naming the topic, v6 (by id) given its id."""
    named = {"topic_id": topic} if isinstance(topic, uuid.UUID) else {"name": topic}
    body = {
        "transactional_id": txn,
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                **named,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "v2",
                    }
                ],
            }
        ],
    }
    return run.call(TXN_OFFSET_COMMIT, 6 if isinstance(topic, uuid.UUID) else 5, body)


@scenario("transactions-v2.commit", "records and offsets in a transaction of version 2")
def _commit_v2(run: Run) -> None:
    txn, group, topic = run.name("t"), run.name("g"), run.name("topic")
    quietly_create(run, topic)
    ready(run, 0, group)
    pid, epoch = begin(run, txn)
    body = {"transactional_id": txn, "transaction_timeout": 60000}
    run.call(INIT_PRODUCER_ID, 5, {**body, "producer_id": pid, "producer_epoch": epoch})
    epoch += 1
    produce(run, txn, topic, pid, epoch, 0)
    txn_commit(run, txn, pid, epoch, group, topic)
    txn_commit(run, txn, pid, epoch, group, topic_id(run, topic))
    txn_commit(run, txn, pid, epoch, group, uuid.uuid4())  # an id no topic has
    describe(run, txn)
    fetch_offsets(run, group, topic, stable=False)
    end(run, txn, pid, epoch, committed=True)
    settled(run, txn)
    fetch_offsets(run, group, topic, stable=True)
    describe(run, txn)


@scenario("transactions-v2.late-produce", "a Produce of the epoch an abort moved past")
def _late_produce(run: Run) -> None:
    txn, topic = run.name("t"), run.name("topic")
    quietly_create(run, topic)
    pid, epoch = begin(run, txn)
    produce(run, txn, topic, pid, epoch, 0)
    end(run, txn, pid, epoch, committed=False)
    settled(run, txn)
    produce(run, txn, topic, pid, epoch, 1)
    describe(run, txn)
    txn_commit(run, txn, pid, epoch, run.name("g"), topic)


@scenario("end-txn.v5-states", "EndTxn v5: nothing open, an empty abort, its retry, old epochs")
def _end_v5_states(run: Run) -> None:
    txn = run.name("t")
    pid, epoch = begin(run, txn)
    end(run, txn, pid, epoch, committed=True)
    end(run, txn, pid, epoch, committed=False)
    settled(run, txn)
    end(run, txn, pid, epoch, committed=False)
    end(run, txn, pid, epoch + 1, committed=True)
    end(run, txn, pid, epoch - 1, committed=False)
    end(run, txn, pid + 1, epoch + 1, committed=False)
