"""Transactions across the death of their coordinator: a librdkafka producer runs a
stream of small transactions while the node coordinating its transactional id is
killed (SIGKILL), three times. No abortable or fatal error reaches the application
(a valid transaction is never refused because its new coordinator is still loading),
every committed transaction is read whole and nothing else is, and the producer
commits again within seconds of each new coordinator's election.

The layout makes the first failover the hard one: the node that takes over has never
been asked about transactions, and the data partitions move to it with the
coordinator, so the producer's first requests to it are Produce requests of the open
transaction, sent before it has said anything to the new coordinator. (librdkafka
picks a node at random for its first FindCoordinator, so in about one run in four it
asks that node beforehand; the raw-protocol test below makes the same move every time.)"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from helpers.wire import WireClient

from odradek.coordinator.partitioning import partition_for
from odradek.protocol.batch import ATTR_TRANSACTIONAL, build_batch
from odradek.testing import Cluster

TOPIC = "txn-stream"
TRANSACTION_STATE = "__transaction_state"
TXN_PARTITIONS = 50  # transaction.state.log.num.partitions (Kafka's default)
PRODUCE, FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS, END_TXN = 0, 10, 22, 24, 26
TRANSACTION_KEY = 1
# answers a client retries: NOT_LEADER_OR_FOLLOWER, COORDINATOR_LOAD_IN_PROGRESS,
# COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, NOT_ENOUGH_REPLICAS, CONCURRENT_TRANSACTIONS
RETRIABLE = {6, 14, 15, 16, 19, 51}
RECORDS_PER_TXN = 12
KILLS = 3
PROGRESS_S = 8.0  # from the new coordinator's election to the next commit


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(brokers=3, base_dir=tmp_path, session_timeout_ms=2000) as made:
        yield made


@dataclass
class Stream:
    """What the producer thread did: the transactions committed, when, and the
    abortable or fatal errors it met; and a kill it is to carry out halfway through
    its next transaction."""

    committed: list[int] = field(default_factory=list)
    commit_times: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    kill: Callable[[], None] | None = None
    killed: threading.Event = field(default_factory=threading.Event)

    def commits_after(self, moment: float) -> bool:
        with self.lock:
            return bool(self.commit_times) and self.commit_times[-1] > moment

    def kill_midway(self) -> None:
        with self.lock:
            kill, self.kill = self.kill, None
        if kill is not None:
            kill()
            self.killed.set()


def _value(txn: int, index: int) -> bytes:
    return f"{txn}:{index}".encode()


def _retrying(call: str, producer: Producer) -> None:
    """commit_transaction or abort_transaction, called again while librdkafka says its
    error is retriable (a timeout while the coordinator moves)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            getattr(producer, call)(10)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or time.monotonic() > deadline:
                raise


def _produce_transactions(producer: Producer, stream: Stream, partitions: int) -> None:
    """Small transactions, back to back, each spread over every partition and over a
    few milliseconds; a kill asked for happens in the middle of one."""
    txn = 0
    while not stream.stop.is_set():
        txn += 1
        try:
            producer.begin_transaction()
            for index in range(RECORDS_PER_TXN):
                producer.produce(TOPIC, _value(txn, index), partition=index % partitions)
                producer.poll(0)
                if index == RECORDS_PER_TXN // 2:
                    stream.kill_midway()
                time.sleep(0.002)
            _retrying("commit_transaction", producer)
        except KafkaException as exc:
            error = exc.args[0]
            stream.errors.append(f"transaction {txn}: {error}")
            if error.txn_requires_abort():
                _retrying("abort_transaction", producer)  # then stop: the test has failed
            return
        with stream.lock:
            stream.committed.append(txn)
            stream.commit_times.append(time.monotonic())


def _ask_for_the_transaction_coordinator(cluster: Cluster, node: int) -> None:
    """FindCoordinator(TRANSACTION) to one node, until it answers: __transaction_state
    exists then, and of the three nodes only this one was asked about transactions."""
    deadline = time.monotonic() + 30
    with WireClient(cluster.node(node).bootstrap) as wire:
        while wire.call(
            FIND_COORDINATOR, 3, {"key": "any", "key_type": TRANSACTION_KEY}
        ).error_code:
            assert time.monotonic() < deadline, "no transaction coordinator"
            time.sleep(0.1)


def _transactional_id(cluster: Cluster, asked: int) -> tuple[str, list[int]]:
    """An id whose coordinator's first successor in line was not asked about
    transactions; with its partition's replicas, leader first."""
    partitions = {
        p.partition_index: p for p in cluster.metadata([TRANSACTION_STATE]).topics[0].partitions
    }
    for i in range(1000):
        candidate = f"stream-tx-{i}"
        found = partitions[partition_for(candidate, TXN_PARTITIONS)]
        replicas = list(found.replica_nodes)
        if found.leader_id == replicas[0] and replicas[1] != asked and len(found.isr_nodes) == 3:
            return candidate, replicas
    raise AssertionError("no transactional id fits")


def _read_committed(cluster: Cluster, partitions: int) -> list[bytes]:
    """Every value of the topic as a read_committed consumer sees it, up to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"check-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(at_end) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error, partition, value = message.error(), message.partition(), message.value()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                assert partition is not None
                at_end.add(partition)
            elif error is None:
                assert value is not None
                values.append(value)
    finally:
        consumer.close()
    assert len(at_end) == partitions, "the topic was not read to its end"
    return values


def _kill_the_coordinator(cluster: Cluster, stream: Stream, state_partition: int) -> float:
    """Kill the coordinator in the middle of the stream and restart it once its successor
    is elected; how long the producer took to commit again after the election."""
    started = time.monotonic()
    while not stream.commits_after(started + 1.0):  # a steady stream first
        assert not stream.errors, stream.errors
        assert time.monotonic() - started < 60, "no transaction commits"
        time.sleep(0.05)
    victim = cluster.leader_of(TRANSACTION_STATE, state_partition)
    stream.killed.clear()
    with stream.lock:
        stream.kill = lambda: cluster.kill(victim)
    assert stream.killed.wait(30), stream.errors
    cluster.wait_for_new_leader(TRANSACTION_STATE, state_partition, old=victim)
    elected = time.monotonic()
    while not stream.commits_after(elected) and time.monotonic() - elected < 60:
        assert not stream.errors, stream.errors
        time.sleep(0.02)
    gap = time.monotonic() - elected
    cluster.restart(victim)
    cluster.wait_for_isr(TRANSACTION_STATE, state_partition, list(cluster.nodes))
    return gap


def test_a_stream_of_transactions_survives_the_deaths_of_its_coordinator(
    cluster: Cluster,
) -> None:
    _ask_for_the_transaction_coordinator(cluster, 1)
    transactional_id, (first, second, third) = _transactional_id(cluster, asked=1)
    state_partition = partition_for(transactional_id, TXN_PARTITIONS)
    # Partitions 0 and 1 follow the coordinator from node to node; partition 2 stays on
    # the third node, which the producer keeps a connection to while a coordinator is
    # dead, so it does not need to ask the successor anything before Produce.
    placed = [[first, second, third], [first, second, third], [third, second, first]]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(TOPIC, len(placed), replica_assignment=placed)
    for future in admin.create_topics([topic]).values():
        future.result(15)
    config: dict[str, Any] = {
        "bootstrap.servers": f"{cluster.node(first).bootstrap},{cluster.node(third).bootstrap}",
        "transactional.id": transactional_id,
        "linger.ms": 1,
        "transaction.timeout.ms": 60000,
    }
    producer = Producer(config)
    producer.init_transactions(30)
    stream = Stream()
    worker = threading.Thread(
        target=_produce_transactions, args=(producer, stream, len(placed)), daemon=True
    )
    worker.start()
    gaps: list[float] = []
    try:
        for _ in range(KILLS):
            gaps.append(_kill_the_coordinator(cluster, stream, state_partition))
            for index in range(len(placed)):
                cluster.wait_for_isr(TOPIC, index, list(cluster.nodes))
    finally:
        stream.stop.set()
        worker.join(120)
    assert not worker.is_alive()
    assert not stream.errors, stream.errors
    assert max(gaps) < PROGRESS_S, gaps
    assert producer.flush(30) == 0

    counts = Counter(_read_committed(cluster, len(placed)))
    assert max(counts.values()) == 1, "a record read twice"
    expected = {_value(t, i) for t in stream.committed for i in range(RECORDS_PER_TXN)}
    missing = expected - set(counts)
    assert not missing, f"{len(missing)} records of committed transactions missing"
    unexpected = set(counts) - expected
    assert not unexpected, f"{len(unexpected)} records of transactions not committed visible"


def _call_until_done(wire: WireClient, api_key: int, version: int, body: dict[str, Any]) -> int:
    """A request sent again while its answer is retriable, as a client does; its code."""
    deadline = time.monotonic() + 30
    while True:
        answer = wire.call(api_key, version, body)
        code = _error_code(api_key, answer)
        if code not in RETRIABLE or time.monotonic() > deadline:
            return code
        time.sleep(0.05)


def _error_code(api_key: int, answer: Any) -> int:
    if api_key == PRODUCE:
        return int(answer.responses[0].partition_responses[0].error_code)
    if api_key == ADD_PARTITIONS:
        return int(
            answer.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        )
    return int(answer.error_code)


def _produce(wire: WireClient, transactional_id: str, batch: bytes) -> int:
    body = {
        "transactional_id": transactional_id,
        "acks": -1,
        "timeout": 10000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }
    return _call_until_done(wire, PRODUCE, 9, body)


def test_a_produce_reaching_a_new_coordinator_nothing_asked_before_is_taken(
    cluster: Cluster,
) -> None:
    """The transaction's partition and its coordinator move to a node that has never
    been asked about transactions; the next Produce of the open transaction is the first
    thing that node hears of it. It takes the batch (a coordinator still loading would
    have it retried), and the transaction commits whole."""
    _ask_for_the_transaction_coordinator(cluster, 1)
    transactional_id, (first, second, third) = _transactional_id(cluster, asked=1)
    state_partition = partition_for(transactional_id, TXN_PARTITIONS)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    topic = NewTopic(TOPIC, 1, replica_assignment=[[first, second, third]])
    for future in admin.create_topics([topic]).values():
        future.result(15)
    with WireClient(cluster.node(first).bootstrap) as wire:
        answer = wire.call(
            INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": transactional_id,
                "transaction_timeout": 60000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        assert answer.error_code == 0, answer
        producer_id, epoch = int(answer.producer_id), int(answer.producer_epoch)
        added = {
            "v3_and_below_transactional_id": transactional_id,
            "v3_and_below_producer_id": producer_id,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}],
        }
        assert _call_until_done(wire, ADD_PARTITIONS, 3, added) == 0
        batches = [
            build_batch(
                [(None, _value(1, sequence))],
                timestamp=int(time.time() * 1000),  # (one of 1970 would be past retention)
                attributes=ATTR_TRANSACTIONAL,
                producer_id=producer_id,
                producer_epoch=epoch,
                base_sequence=sequence,
            )
            for sequence in (0, 1)
        ]
        assert _produce(wire, transactional_id, batches[0]) == 0
    cluster.kill(first)
    assert cluster.wait_for_new_leader(TRANSACTION_STATE, state_partition, old=first) == second
    with WireClient(cluster.node(second).bootstrap) as wire:
        code = _produce(wire, transactional_id, batches[1])
        assert code == 0, f"the open transaction's next Produce answered {code}"
        end = {
            "transactional_id": transactional_id,
            "producer_id": producer_id,
            "producer_epoch": epoch,
            "committed": True,
        }
        assert _call_until_done(wire, END_TXN, 3, end) == 0
    assert sorted(_read_committed(cluster, 1)) == [_value(1, 0), _value(1, 1)]
