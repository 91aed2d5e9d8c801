"""Transactions version 2 (KIP-890) in a cluster: the partition's leader adds a
transactional Produce's partition at a coordinator on another broker (AddPartitionsToTxn
v5), and the transactions go on, on new epochs, after that coordinator is killed."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from helpers.wire import WireClient

from cluster.test_transactions import (
    END_TXN,
    INIT_PRODUCER_ID,
    RETRIABLE,
    TOPIC,
    TRANSACTION_STATE,
    TXN_PARTITIONS,
    _ask_for_the_transaction_coordinator,
    _read_committed,
    _transactional_id,
    _value,
)
from odradek.coordinator.partitioning import partition_for
from odradek.protocol.batch import ATTR_TRANSACTIONAL, build_batch
from odradek.testing import Cluster

PRODUCE = 0


def _until_done(wire: WireClient, api_key: int, version: int, body: dict[str, Any]) -> Any:
    """Sent again while the answer is retriable, as a client does; the last answer."""
    deadline = time.monotonic() + 30
    while True:
        answer = wire.call(api_key, version, body)
        if api_key == PRODUCE:
            code = answer.responses[0].partition_responses[0].error_code
        else:
            code = answer.error_code
        if code not in RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def _produce(wire: WireClient, tid: str, pid: int, epoch: int, txn: int) -> int:
    batch = build_batch(
        [(None, _value(txn, 0))],
        timestamp=int(time.time() * 1000),
        attributes=ATTR_TRANSACTIONAL,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=0,
    )
    body = {
        "transactional_id": tid,
        "acks": -1,
        "timeout": 10000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }
    answer = _until_done(wire, PRODUCE, 12, body)
    return int(answer.responses[0].partition_responses[0].error_code)


def _end(wire: WireClient, tid: str, pid: int, epoch: int) -> tuple[int, int, int]:
    body = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch}
    answer = _until_done(wire, END_TXN, 5, {**body, "committed": True})
    return int(answer.error_code), int(answer.producer_id), int(answer.producer_epoch)


def test_a_partition_led_elsewhere_joins_and_the_coordinator_dies(cluster: Cluster) -> None:
    _ask_for_the_transaction_coordinator(cluster, 1)
    tid, (coordinator, successor, third) = _transactional_id(cluster, asked=1)
    state_partition = partition_for(tid, TXN_PARTITIONS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    # the data partition's leader is not the transaction's coordinator
    topic = NewTopic(TOPIC, 1, replica_assignment=[[successor, third, coordinator]])
    for future in admin.create_topics([topic]).values():
        future.result(15)
    with WireClient(cluster.node(coordinator).bootstrap) as wire:
        body = {"transactional_id": tid, "transaction_timeout": 60000}
        answer = _until_done(
            wire, INIT_PRODUCER_ID, 5, {**body, "producer_id": -1, "producer_epoch": -1}
        )
        assert answer.error_code == 0, answer
        pid, epoch = int(answer.producer_id), int(answer.producer_epoch)
    with WireClient(cluster.node(successor).bootstrap) as leader:
        assert _produce(leader, tid, pid, epoch, 1) == 0  # added at the coordinator
    with WireClient(cluster.node(coordinator).bootstrap) as wire:
        assert _end(wire, tid, pid, epoch) == (0, pid, epoch + 1)
    cluster.kill(coordinator)
    assert cluster.wait_for_new_leader(TRANSACTION_STATE, state_partition, coordinator) == successor
    with WireClient(cluster.node(successor).bootstrap) as wire:
        assert _produce(wire, tid, pid, epoch + 1, 2) == 0
        assert _produce(wire, tid, pid, epoch, 3) != 0  # the old epoch: refused
        assert _end(wire, tid, pid, epoch + 1) == (0, pid, epoch + 2)
    assert sorted(_read_committed(cluster, 1)) == [_value(1, 0), _value(2, 0)]
