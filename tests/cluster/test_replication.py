"""Replication across three broker processes (and a controller of their own): topics
placed with their replication factor, followers that fetch from the leader, the
high watermark, leader failover on kill -9 with no acknowledged record lost, and a
killed node that returns and rejoins the ISR."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
)
from helpers import java

from cluster.conftest import SESSION_MS, create_topic, read_all
from odradek.testing import Cluster


def not_the_controller(cluster: Cluster, topic: str, partition: int) -> int:
    leader = cluster.leader_of(topic, partition)
    assert leader in cluster.nodes, leader
    return leader


def check_nothing_acknowledged_was_lost(acked: list[int], values: list[bytes]) -> None:
    read = [int(v) for v in values]
    assert len(read) == len(set(read)), "duplicates"
    assert set(acked) <= set(read), f"{len(set(acked) - set(read))} acknowledged records lost"
    assert read == sorted(read), "out of order"


def test_a_topic_is_placed_with_its_replication_factor_and_replicated(cluster: Cluster) -> None:
    create_topic(cluster, "placed", partitions=3)
    leaders = set()
    for index in range(3):
        partition = cluster.partition("placed", index)
        assert sorted(partition.replica_nodes) == [1, 2, 3]
        assert sorted(partition.isr_nodes) == [1, 2, 3]
        assert partition.leader_id == partition.replica_nodes[0]
        leaders.add(partition.leader_id)
    assert leaders == {1, 2, 3}  # round-robin: each broker leads one
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(300):
        producer.produce("placed", value=str(i).encode(), partition=i % 3)
    assert producer.flush(15) == 0
    # every replica holds the same bytes (followers fetch whole batches as written)
    for index in range(3):
        deadline = time.monotonic() + 10
        while True:
            sizes = {
                node: sum(f.stat().st_size for f in broker.data_dir.glob(f"placed-{index}/*.log"))
                for node, broker in cluster.nodes.items()
            }
            if len(set(sizes.values())) == 1 and sizes[1] > 0:
                break
            assert time.monotonic() < deadline, sizes
            time.sleep(0.1)
    assert len(read_all(cluster, "placed", 1, 100)) == 100
    # a clean stop leaves the high watermarks for the next start, as Kafka's file does
    # (a follower's may trail its leader's until its next fetch, on a busy machine)
    led = next(index for index in range(3) if cluster.leader_of("placed", index) == 2)
    cluster.stop(2)
    checkpoint = (cluster.node(2).data_dir / "replication-offset-checkpoint").read_text()
    entries = dict(line.rsplit(" ", 1) for line in checkpoint.splitlines()[2:])
    assert entries[f"placed {led}"] == "100"
    assert all(0 <= int(entries[f"placed {index}"]) <= 100 for index in range(3))


def test_a_replication_factor_above_the_live_brokers_is_refused(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    future = admin.create_topics([NewTopic("too-many", 1, 4)])["too-many"]
    with pytest.raises(KafkaException) as refused:
        future.result(15)
    assert "INVALID_REPLICATION_FACTOR" in str(refused.value)


def test_librdkafka_idempotent_acks_all_across_the_death_of_the_leader(cluster: Cluster) -> None:
    create_topic(cluster, "orders", partitions=3)
    victim = not_the_controller(cluster, "orders", 1)
    acked: list[int] = []
    failed: list[Any] = []

    def delivered(error: Any, message: Any) -> None:
        (failed if error else acked).append(error or int(message.value()))

    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    # a consumer reading all along carries on across the failover
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "live"})
    consumer.assign([TopicPartition("orders", 1, 0)])
    seen: list[bytes] = []
    sent = 0
    started = time.monotonic()
    killed_at = None
    while time.monotonic() - started < 7:
        producer.produce("orders", value=str(sent).encode(), partition=1, on_delivery=delivered)
        sent += 1
        producer.poll(0)
        message = consumer.poll(0)
        if message is not None and message.error() is None:
            seen.append(message.value())
        if killed_at is None and len(acked) >= 500:
            cluster.kill(victim)
            killed_at = time.monotonic()
        time.sleep(0.001)
    assert producer.flush(30) == 0
    assert killed_at is not None and not failed, failed[:3]
    new_leader = cluster.wait_for_new_leader("orders", 1, old=victim)
    assert new_leader != victim
    assert len(acked) == sent  # the producer carried on through the failover
    deadline = time.monotonic() + 20
    while len(seen) < sent and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen.append(message.value())
    consumer.close()
    check_nothing_acknowledged_was_lost(acked, seen)
    check_nothing_acknowledged_was_lost(acked, read_all(cluster, "orders", 1, sent))
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    live = admin.describe_cluster().result(10).nodes
    assert sorted(node.id for node in live) == sorted(n for n in cluster.nodes if n != victim)
    # the killed node comes back, catches up and rejoins the ISR; a preferred election
    # gives it its partition back
    cluster.restart(victim)
    cluster.wait_for_isr("orders", 1, [1, 2, 3])
    assert cluster.partition("orders", 1).replica_nodes[0] == victim
    elected = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 1)])
    assert elected.result(10)[TopicPartition("orders", 1)] is None
    deadline = time.monotonic() + 10
    while cluster.leader_of("orders", 1) != victim:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_java_idempotent_acks_all_across_the_death_of_the_leader(cluster: Cluster) -> None:
    create_topic(cluster, "java-orders", partitions=3)
    victim = not_the_controller(cluster, "java-orders", 2)
    args = [
        "produce",
        "--bootstrap",
        cluster.bootstrap_servers,
        "--topic",
        "java-orders",
        "--partition",
        "2",
        "--count",
        "3000",
        "--pace-ms",
        "2",
        "--idempotence",
        "true",
        "--acks",
        "all",
        *java.props_args({"delivery.timeout.ms": 60000, "request.timeout.ms": 5000}),
    ]
    with java.background(args) as producer:
        producer.wait_for(lambda line: line.get("sent", 0) >= 1000, timeout=60)
        cluster.kill(victim)
        lines = producer.finish(timeout=90)
    results = [line for line in lines if "index" in line]
    assert len(results) == 3000
    assert not [line for line in results if "error" in line][:3]
    offsets = [line["offset"] for line in sorted(results, key=lambda line: line["index"])]
    assert offsets == sorted(offsets) and len(set(offsets)) == 3000  # order kept, once each
    values = read_all(cluster, "java-orders", 2, 3000)
    assert [v.decode() for v in values] == [f"value-{i}" for i in range(3000)]


def test_aiokafka_idempotent_acks_all_across_the_death_of_the_leader(cluster: Cluster) -> None:
    create_topic(cluster, "aio-orders", partitions=3)
    victim = not_the_controller(cluster, "aio-orders", 0)

    async def produce() -> tuple[list[int], int]:
        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers,
            acks="all",
            enable_idempotence=True,
            request_timeout_ms=5000,
        )
        await producer.start()
        acked: list[int] = []
        pending = []
        try:
            for i in range(2000):
                if i == 600:
                    await asyncio.to_thread(cluster.kill, victim)
                pending.append(await producer.send("aio-orders", str(i).encode(), partition=0))
                await asyncio.sleep(0.002)
            for i, future in enumerate(pending):
                await future
                acked.append(i)
        finally:
            await producer.stop()
        return acked, 2000

    acked, sent = asyncio.run(produce())
    assert len(acked) == sent
    check_nothing_acknowledged_was_lost(acked, read_all(cluster, "aio-orders", 0, sent))


def test_a_follower_that_stops_fetching_leaves_the_isr_and_min_isr_holds_writes(
    tmp_path: Path,
) -> None:
    # sessions longer than the lag allowed: the ISR shrinks before anyone is fenced
    overrides = {"replica.lag.time.max.ms": 1000}
    with Cluster(3, tmp_path, overrides=overrides, session_timeout_ms=30000) as cluster:
        create_topic(cluster, "guarded", partitions=3, factor=2, **{"min.insync.replicas": "2"})
        partition = cluster.partition("guarded", 0)
        leader, follower = (
            partition.leader_id,
            next(n for n in partition.replica_nodes if n != partition.leader_id),
        )
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "retries": 0,
                "message.timeout.ms": 5000,
            }
        )
        assert send_one(producer, "guarded", b"both") is None
        cluster.node(follower).suspend()
        try:
            # the write waits for the silent follower until it leaves the ISR, which
            # then is too small for it
            error = send_one(producer, "guarded", b"waits")
            assert error is not None and error.name() == "NOT_ENOUGH_REPLICAS_AFTER_APPEND", error
            cluster.wait_for_isr("guarded", 0, [leader], timeout=15)
            error = send_one(producer, "guarded", b"alone")
            assert error is not None and error.name() == "NOT_ENOUGH_REPLICAS", error
        finally:
            cluster.node(follower).resume()
        cluster.wait_for_isr("guarded", 0, sorted([leader, follower]), timeout=15)
        assert send_one(producer, "guarded", b"again") is None


def send_one(producer: Producer, topic: str, value: bytes) -> Any:
    """The delivery error of one record to partition 0 (None: acknowledged)."""
    outcome: list[Any] = []
    producer.produce(topic, value, partition=0, on_delivery=lambda e, m: outcome.append(e))
    producer.flush(10)
    assert len(outcome) == 1
    return outcome[0]


def test_a_deposed_leaders_own_records_are_cut_and_acks_all_ones_kept(tmp_path: Path) -> None:
    overrides = {"replica.lag.time.max.ms": 60000, "replica.fetch.wait.max.ms": 200}
    with Cluster(3, tmp_path, overrides=overrides, session_timeout_ms=SESSION_MS) as cluster:
        create_topic(cluster, "diverge", partitions=3)
        leader = not_the_controller(cluster, "diverge", 1)
        followers = [n for n in cluster.nodes if n != leader]
        safe = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        for i in range(100):
            safe.produce("diverge", str(i).encode(), partition=1)
        assert safe.flush(10) == 0
        # the followers stop (after their last fetch was answered): what the leader now
        # takes with acks=1 is on the leader only
        for node in followers:
            cluster.node(node).suspend()
        time.sleep(0.5)
        risky = Producer({"bootstrap.servers": cluster.node(leader).bootstrap, "acks": 1})
        for i in range(100, 150):
            risky.produce("diverge", str(i).encode(), partition=1)
        assert risky.flush(10) == 0
        cluster.kill(leader)
        for node in followers:
            cluster.node(node).resume()
        cluster.wait_for_new_leader("diverge", 1, old=leader)
        for i in range(150, 200):
            safe.produce("diverge", str(i).encode(), partition=1)
        assert safe.flush(20) == 0
        cluster.restart(leader)
        cluster.wait_for_isr("diverge", 1, [1, 2, 3])
        assert "truncated a diverged log" in cluster.node(leader).log_text()
        values = [int(v) for v in read_all(cluster, "diverge", 1, 150)]
        assert values == [*range(100), *range(150, 200)]  # acks=all kept, the rest cut
        # the returned node's copy is the new leader's, byte for byte
        new_leader = cluster.leader_of("diverge", 1)
        files = {
            node: b"".join(
                f.read_bytes() for f in sorted(cluster.node(node).data_dir.glob("diverge-1/*.log"))
            )
            for node in (leader, new_leader)
        }
        assert files[leader] == files[new_leader]


def test_the_cluster_fixture_of_the_pytest_plugin(odradek_cluster: Cluster) -> None:
    create_topic(odradek_cluster, "plugin", partitions=1)
    leader = odradek_cluster.leader_of("plugin", 0)
    odradek_cluster.kill(leader)
    assert odradek_cluster.wait_for_new_leader("plugin", 0, old=leader) != leader
    done = threading.Event()
    producer = Producer({"bootstrap.servers": odradek_cluster.bootstrap_servers, "acks": "all"})
    producer.produce("plugin", b"after", on_delivery=lambda e, m: done.set() if e is None else None)
    producer.flush(15)
    assert done.is_set()


def test_consume_transform_produce_across_the_death_of_its_coordinators(cluster: Cluster) -> None:
    create_topic(cluster, "etl-in", partitions=3)
    create_topic(cluster, "etl-out", partitions=3)
    source = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(600):
        source.produce("etl-in", str(i).encode(), partition=i % 3)
    assert source.flush(10) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "etl",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(["etl-in"])
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "transactional.id": "etl-tx",
            # librdkafka (confluentinc/librdkafka#5511, open): once the dead group
            # coordinator leaves Metadata, send_offsets_to_transaction waits, past its
            # timeout, for some broker connection to change state. Closing idle
            # connections makes such changes happen; Kafka's brokers drop a dead one
            # from Metadata the same way.
            "connections.max.idle.ms": 1000,
        }
    )
    producer.init_transactions(30)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    done = killed = 0
    deadline = time.monotonic() + 90
    try:
        while done < 600 and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(50, 1.0) if m.error() is None]
            if not batch:
                continue
            try:
                producer.begin_transaction()
                for message in batch:
                    producer.produce("etl-out", message.value(), partition=message.partition())
                positions = consumer.position(consumer.assignment())
                producer.send_offsets_to_transaction(
                    positions, consumer.consumer_group_metadata(), 30
                )
                producer.commit_transaction(30)
            except KafkaException as exc:
                error = exc.args[0]
                if not error.txn_requires_abort():
                    raise
                producer.abort_transaction(30)
                _rewind(consumer)
                continue
            done += len(batch)
            if not killed and done >= 150:
                group = admin.describe_consumer_groups(["etl"])["etl"].result(10)
                killed = group.coordinator.id
                cluster.kill(killed)
    finally:
        consumer.close()
    assert killed in cluster.nodes
    assert done == 600
    out = [int(v) for p in range(3) for v in read_all(cluster, "etl-out", p, 200)]
    assert sorted(out) == list(range(600))  # every input once: exactly once
    check = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "etl"})
    try:
        committed = check.committed([TopicPartition("etl-in", p) for p in range(3)], 10)
    finally:
        check.close()
    assert [tp.offset for tp in committed] == [200, 200, 200]


def _rewind(consumer: Consumer) -> None:
    """After an aborted transaction: back to the committed offsets."""
    assignment = consumer.assignment()
    for tp in consumer.committed(assignment, 30):
        consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
