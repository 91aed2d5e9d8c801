"""Network partitions, not only kills: three brokers and three controllers, each node
reaching every other one through a proxy of its own (Cluster(proxied=True)), while
the clients reach every node directly. A partition's leader cut off from every other
node, a broker cut off from the controllers only, the active controller cut off from
the other controllers, a transaction coordinator cut off: what was acknowledged is
never lost, a leader left alone acknowledges nothing, and once the network heals the
replicas hold the same batches."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from cluster.conftest import SESSION_MS, create_topic
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.testing.cluster import _call
from odradek.broker.testing.netsplit import Mode
from odradek.protocol.batch import InvalidBatch, build_batch, iter_batches
from odradek.protocol.errors import ErrorCode
from odradek.testing import START_TIMEOUT, Broker, Cluster

pytestmark = pytest.mark.timeout(180)

PRODUCE, FIND_COORDINATOR, DESCRIBE_QUORUM = 0, 10, 55
MIN_ISR: dict[str, Any] = {"min.insync.replicas": "2"}
WRITTEN_APART = 1_000_000  # the numbers of records that other producers write


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("netsplit")
    made = Cluster(
        brokers=3, controllers=3, base_dir=base, session_timeout_ms=SESSION_MS, proxied=True
    )
    try:
        made.start(max(START_TIMEOUT, 30))  # six processes, one after the other
        yield made
    finally:
        made.close()


@pytest.fixture
def cluster(shared: Cluster) -> Iterator[Cluster]:
    """The shared cluster, whole again: every link forwarding, every broker admitted,
    a controller leading."""
    shared.heal()
    wait_until_whole(shared)
    yield shared
    shared.heal()


def wait_until_whole(cluster: Cluster, timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while sorted(live_brokers(cluster)) != sorted(cluster.nodes) or (
        cluster.active_controller() == -1
    ):
        assert time.monotonic() < deadline, f"the cluster is not whole again: {cluster}"
        time.sleep(0.2)


def live_brokers(cluster: Cluster, via: int | None = None) -> list[int]:
    """The unfenced brokers, as a broker (`via`, else any) describes the cluster."""
    bootstrap = cluster.bootstrap_servers if via is None else cluster.node(via).bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        return [node.id for node in admin.describe_cluster(request_timeout=5).result(10).nodes]
    except KafkaException:
        return []


class Producing:
    """An idempotent acks=all producer writing 0, 1, 2, ... to one partition from a
    thread of its own until stopped; what was acknowledged, what failed."""

    def __init__(self, cluster: Cluster, topic: str, partition: int) -> None:
        self.topic, self.partition = topic, partition
        self.acked: list[int] = []
        self.failed: list[str] = []
        self.sent = 0
        self._producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "request.timeout.ms": 5000,  # a produce held by a cut-off leader
            }
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self.failed.append(str(error))
        else:
            self.acked.append(int(message.value()))

    def _run(self) -> None:
        while not self._stop.is_set():
            value = str(self.sent).encode()
            try:
                self._producer.produce(
                    self.topic, value, partition=self.partition, on_delivery=self._delivered
                )
            except BufferError:
                self._producer.poll(0.1)
                continue
            self.sent += 1
            self._producer.poll(0.003)

    def wait_for(self, count: int, timeout: float = 30) -> None:
        """Wait until `count` records are acknowledged."""
        deadline = time.monotonic() + timeout
        while len(self.acked) < count:
            assert not self.failed, self.failed[:3]
            assert time.monotonic() < deadline, f"{len(self.acked)} of {count} acknowledged"
            time.sleep(0.05)

    def more(self, count: int, timeout: float = 30) -> None:
        self.wait_for(len(self.acked) + count, timeout)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        assert self._producer.flush(60) == 0
        assert not self.failed, self.failed[:3]


def read_to_end(cluster: Cluster, topic: str, partition: int) -> list[bytes]:
    """Every value of the partition, read_committed, up to its end as it is now."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"check-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)
        consumer.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is None:
                values.append(message.value() or b"")
            elif error.code() == KafkaError._PARTITION_EOF and (message.offset() or 0) >= end:
                return values
        raise AssertionError(f"{topic}-{partition}: not read to {end} in 30 s")
    finally:
        consumer.close()


def check_exactly_once(acked: list[int], values: list[bytes]) -> None:
    """The producer's records (those below WRITTEN_APART) are read once each, in the
    order they were sent, none acknowledged missing."""
    read = [int(v) for v in values if 0 <= int(v) < WRITTEN_APART]
    assert len(read) == len(set(read)), "duplicates"
    lost = set(acked) - set(read)
    assert not lost, f"{len(lost)} acknowledged records lost, {sorted(lost)[:5]}..."
    assert read == sorted(read), "out of order"


def produce_directly(broker: Broker, topic: str, partition: int, value: bytes) -> ErrorCode:
    """One acks=all record, to this broker whether it leads or not: its answer
    (REQUEST_TIMED_OUT when no answer came in time)."""
    request = {
        "transactional_id": None,
        "acks": -1,
        "timeout": 3000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": partition, "records": build_batch([(None, value)])}],
            }
        ],
    }
    try:
        answer = _call(broker.host, broker.port, PRODUCE, 9, request)
    except NodeUnreachable:
        return ErrorCode.request_timed_out
    return ErrorCode(answer.responses[0].partition_responses[0].error_code)


def batches(broker: Broker, directory: str) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, leader epoch, CRC) of each batch in a replica's log."""
    files = sorted((broker.data_dir / directory).glob("*.log"))
    data = b"".join(f.read_bytes() for f in files)
    return [
        (h.base_offset, h.last_offset, h.partition_leader_epoch, h.crc) for h in iter_batches(data)
    ]


def wait_for_equal_logs(
    nodes: dict[int, Broker], directory: str, timeout: float = 20
) -> list[tuple[int, int, int, int]]:
    """Wait until each node's log of `directory` (topic-partition) holds the same
    batches; those batches."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            logs = {node: batches(broker, directory) for node, broker in nodes.items()}
        except InvalidBatch:  # a batch being written
            logs = {}
        if logs and len({tuple(log) for log in logs.values()}) == 1:
            return next(iter(logs.values()))
        if time.monotonic() > deadline:
            ends = {node: log[-1:] for node, log in logs.items()}
            raise AssertionError(f"the replicas of {directory} differ; their last batches: {ends}")
        time.sleep(0.2)


def brokers_leading(cluster: Cluster, topic: str, partitions: int) -> dict[int, int]:
    return {index: cluster.leader_of(topic, index) for index in range(partitions)}


# -- a partition's leader cut off -------------------------------------------------------


def test_a_leader_cut_off_from_every_node_is_replaced_and_acknowledges_nothing(
    cluster: Cluster,
) -> None:
    create_topic(cluster, "cut-leader", partitions=1, **MIN_ISR)
    leader = cluster.leader_of("cut-leader", 0)
    others = [n for n in cluster.nodes if n != leader]
    producing = Producing(cluster, "cut-leader", 0)
    producing.wait_for(200)
    cut_at = time.monotonic()
    cluster.cut(leader)  # from the other brokers and the controllers, both ways
    # alone, it takes a write but does not acknowledge it: its followers cannot have it
    assert produce_directly(cluster.node(leader), "cut-leader", 0, b"-1") != ErrorCode.none
    # the controller fences it once its session runs out, and another replica leads
    new_leader = cluster.wait_for_new_leader("cut-leader", 0, old=leader)
    assert new_leader in others
    assert time.monotonic() - cut_at > SESSION_MS / 1000 * 0.8
    assert leader not in live_brokers(cluster, via=others[0])
    # The old leader does not know, and tells its clients it still leads: the producer
    # waits on it (as on Kafka), while clients of the others write to the new leader.
    assert cluster.leader_of("cut-leader", 0, via=leader) == leader
    assert len(write_through(cluster, others, "cut-leader", 0, 100)) == 100
    assert produce_directly(cluster.node(leader), "cut-leader", 0, b"-2") != ErrorCode.none
    cluster.heal()
    cluster.wait_for_isr("cut-leader", 0, [1, 2, 3])
    producing.more(100)  # the same producer, carrying on
    producing.stop()
    values = read_to_end(cluster, "cut-leader", 0)
    check_exactly_once(producing.acked, values)
    assert not {b"-1", b"-2"} & set(values)  # what it took alone was cut from its log
    # its log lost its own tail, and is the new leader's, batch for batch
    assert "truncated a diverged log" in cluster.node(leader).log_text()
    held = wait_for_equal_logs(cluster.nodes, "cut-leader-0")
    assert held[-1][1] + 1 >= len(values)


def write_through(
    cluster: Cluster, nodes: list[int], topic: str, partition: int, count: int
) -> list[int]:
    """`count` records (numbered from WRITTEN_APART) by an idempotent acks=all
    producer that knows only `nodes`: the offsets they were written at."""
    offsets: list[int] = []
    producer = Producer(
        {
            "bootstrap.servers": ",".join(cluster.node(n).bootstrap for n in nodes),
            "acks": "all",
            "enable.idempotence": True,
        }
    )

    def delivered(error: Any, message: Any) -> None:
        assert error is None, error
        offsets.append(message.offset())

    for i in range(count):
        value = str(WRITTEN_APART + i).encode()
        producer.produce(topic, value, partition=partition, on_delivery=delivered)
    assert producer.flush(30) == 0
    return offsets


# -- a broker cut off from the controllers ----------------------------------------------


@pytest.mark.parametrize("mode", ["blackhole", "reset"])
def test_a_broker_cut_off_from_the_controllers_is_fenced_and_rejoins(
    cluster: Cluster, mode: Mode
) -> None:
    topic = f"cut-broker-{mode}"
    create_topic(cluster, topic, partitions=3, **MIN_ISR)
    leaders = brokers_leading(cluster, topic, 3)
    victim = leaders[0]
    others = [n for n in cluster.nodes if n != victim]
    followed = next(index for index, node in leaders.items() if node != victim)
    producing = Producing(cluster, topic, followed)  # led by another broker
    producing.wait_for(200)
    cut_at = time.monotonic()
    cluster.cut(victim, cluster.controller_ids, mode)  # the brokers and clients still reach it
    new_leader = cluster.wait_for_new_leader(topic, 0, old=victim)
    assert new_leader in others
    assert time.monotonic() - cut_at > SESSION_MS / 1000 * 0.8
    # fenced: out of the cluster and of every ISR, though it still fetches from its peers
    assert victim not in live_brokers(cluster, via=others[0])
    producing.more(200)  # the partition it follows takes writes without it
    for index in range(3):
        assert victim not in cluster.isr_of(topic, index)
    assert produce_directly(cluster.node(victim), topic, 0, b"-1") != ErrorCode.none
    assert len(write_through(cluster, others, topic, 0, 100)) == 100
    cluster.heal()
    # it registers again, is admitted once it caught up, and rejoins every ISR
    for index in range(3):
        cluster.wait_for_isr(topic, index, [1, 2, 3])
    deadline = time.monotonic() + 10  # every broker's view has it unfenced, soon after
    while victim not in live_brokers(cluster):
        assert time.monotonic() < deadline, live_brokers(cluster)
        time.sleep(0.1)
    producing.more(100)
    producing.stop()
    check_exactly_once(producing.acked, read_to_end(cluster, topic, followed))
    values = read_to_end(cluster, topic, 0)
    assert len(values) == len(set(values)) and b"-1" not in values
    for index in range(3):
        wait_for_equal_logs(cluster.nodes, f"{topic}-{index}")


# -- the active controller cut off ------------------------------------------------------


def describe_quorum(cluster: Cluster, node_id: int) -> Any:
    node = cluster.node(node_id)
    request = {
        "topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]
    }
    return _call(node.host, node.port, DESCRIBE_QUORUM, 2, request)


def quorum_epoch(cluster: Cluster, node_id: int) -> int:
    """The epoch a controller has written to its quorum-state."""
    path = Path(cluster.node(node_id).data_dir) / "__cluster_metadata-0" / "quorum-state"
    return int(json.loads(path.read_text())["leaderEpoch"])


def leads(cluster: Cluster, node_id: int) -> bool:
    try:
        answer = describe_quorum(cluster, node_id)
    except NodeUnreachable:
        return False
    return bool(answer.error_code == 0 and answer.topics[0].partitions[0].error_code == 0)


@pytest.mark.parametrize("mode", ["blackhole", "reset"])
def test_the_active_controller_cut_off_from_the_others_resigns_and_follows_again(
    cluster: Cluster, mode: Mode
) -> None:
    old = cluster.wait_for_active_controller()
    others = [c for c in cluster.controller_ids if c != old]
    cut_at = time.monotonic()
    cluster.cut(old, others, mode)  # the brokers still reach all three
    # without a majority it resigns, within one and a half fetch timeouts (and a step)
    while leads(cluster, old):
        assert time.monotonic() - cut_at < 3 * 2 + 2, "the cut-off controller still leads"
        time.sleep(0.1)
    assert "lost the majority of the quorum: resigning" in cluster.node(old).log_text()
    new = cluster.wait_for_active_controller(other_than=old)
    assert new in others
    # the brokers follow the new leader: a topic is created and written through it
    create_topic(cluster, f"after-split-{mode}", partitions=3, **MIN_ISR)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(30):
        producer.produce(f"after-split-{mode}", str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0
    # alone, it asks the others whether they would vote for it (a pre-vote) and, never
    # told yes, stays in the epoch it had: it neither leads nor, once the network heals,
    # deposes the new leader
    epoch = describe_quorum(cluster, new).topics[0].partitions[0].leader_epoch
    time.sleep(3)  # a few election timeouts alone
    assert not leads(cluster, old)
    assert quorum_epoch(cluster, old) < epoch
    cluster.heal()
    # one leader again, the old one following, its metadata log the others'
    wait_for_equal_logs(cluster.controllers, "__cluster_metadata-0")
    create_topic(cluster, f"after-heal-{mode}", partitions=3, **MIN_ISR)
    active = cluster.wait_for_active_controller()
    assert [c for c in cluster.controller_ids if leads(cluster, c)] == [active]
    assert active == new
    assert describe_quorum(cluster, active).topics[0].partitions[0].leader_epoch == epoch
    for node_id in cluster.nodes:
        for topic in (f"after-split-{mode}", f"after-heal-{mode}"):
            assert len(cluster.metadata([topic], via=node_id).topics[0].partitions) == 3
    wait_for_equal_logs(cluster.controllers, "__cluster_metadata-0")
    # the leader's view of its voters agrees (brokers may still be writing: each tells
    # the controller where its new replicas lie, so it is asked until they settle)
    deadline = time.monotonic() + 15
    while True:
        voters = describe_quorum(cluster, active).topics[0].partitions[0].current_voters
        ends = {v.replica_id: v.log_end_offset for v in voters}
        if len(set(ends.values())) == 1:
            break
        assert time.monotonic() < deadline, ends
        time.sleep(0.2)


# -- a transaction coordinator cut off -------------------------------------------------


def coordinator_of(cluster: Cluster, transactional_id: str, via: int = 1) -> int:
    broker = cluster.node(via)
    request = {"key_type": 1, "coordinator_keys": [transactional_id]}
    answer = _call(broker.host, broker.port, FIND_COORDINATOR, 4, request)
    return int(answer.coordinators[0].node_id)


class Transactions:
    """A transactional producer writing transactions of ten records ("n:i") to one
    partition from a thread of its own, every fifth aborted; each transaction ends
    committed, aborted, or unknown (its end failed: a new producer takes over)."""

    def __init__(self, cluster: Cluster, topic: str, partition: int, transactional_id: str):
        self.cluster, self.topic, self.partition = cluster, topic, partition
        self.transactional_id = transactional_id
        self.committed: list[int] = []
        self.aborted: list[int] = []
        self.unknown: list[int] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _new_producer(self) -> Producer:
        producer = Producer(
            {
                "bootstrap.servers": self.cluster.bootstrap_servers,
                "transactional.id": self.transactional_id,
                "request.timeout.ms": 5000,
            }
        )
        producer.init_transactions(60)
        return producer

    def _run(self) -> None:
        producer = self._new_producer()
        number = 0
        while not self._stop.is_set():
            try:
                self._one(producer, number)
            except KafkaException as exc:
                self.errors.append(str(exc.args[0]))
                self.unknown.append(number)
                producer = self._new_producer()  # fences the old one, ends its transaction
            number += 1

    def _one(self, producer: Producer, number: int) -> None:
        producer.begin_transaction()
        for i in range(10):
            producer.produce(self.topic, f"{number}:{i}".encode(), partition=self.partition)
        commit = number % 5 != 4
        deadline = time.monotonic() + 60
        while True:
            try:
                if commit:
                    producer.commit_transaction(10)
                    self.committed.append(number)
                else:
                    producer.abort_transaction(10)
                    self.aborted.append(number)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if commit and error.txn_requires_abort():
                    commit = False  # (its records were not all written)
                elif not error.retriable() or time.monotonic() > deadline:
                    raise

    def wait_for(self, count: int, timeout: float = 60) -> None:
        """Wait until `count` more transactions are committed."""
        goal = len(self.committed) + count
        deadline = time.monotonic() + timeout
        while len(self.committed) < goal:
            assert time.monotonic() < deadline, f"committed {self.committed}, {self.errors}"
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)
        assert not self._thread.is_alive()


def test_transactions_across_a_cut_off_coordinator_commit_or_abort_whole(
    cluster: Cluster,
) -> None:
    create_topic(cluster, "cut-txns", partitions=3, **MIN_ISR)
    coordinator = coordinator_of(cluster, "netsplit-txn")
    leaders = brokers_leading(cluster, "cut-txns", 3)
    partition = next(index for index, node in leaders.items() if node == coordinator)
    transactions = Transactions(cluster, "cut-txns", partition, "netsplit-txn")
    transactions.wait_for(3)
    cluster.cut(coordinator)  # the coordinator, also the partition's leader, alone
    cluster.wait_for_new_leader("cut-txns", partition, old=coordinator)
    other = next(n for n in cluster.nodes if n != coordinator)
    deadline = time.monotonic() + 20
    while coordinator_of(cluster, "netsplit-txn", via=other) in (coordinator, -1):
        assert time.monotonic() < deadline, "the transactional id has no new coordinator"
        time.sleep(0.1)
    before = len(transactions.committed)
    cluster.heal()
    transactions.wait_for(3)
    transactions.stop()
    assert len(transactions.committed) > before
    values = read_to_end(cluster, "cut-txns", partition)
    read: dict[int, list[int]] = {}
    for value in values:
        number, index = map(int, value.split(b":"))
        read.setdefault(number, []).append(index)
    assert all(indexes == list(range(10)) for indexes in read.values()), read
    assert set(transactions.committed) <= set(read), "committed transactions lost"
    assert not set(transactions.aborted) & set(read), "aborted transactions read"
    assert set(read) <= set(transactions.committed) | set(transactions.unknown)
    numbers = [int(v.split(b":")[0]) for v in values]
    assert numbers == sorted(numbers)
    wait_for_equal_logs(cluster.nodes, f"cut-txns-{partition}")
