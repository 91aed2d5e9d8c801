"""Share-partition state survives the broker: acknowledged records are never delivered
again after a kill -9, acquired ones are; group configs persist; read_committed share
groups never see aborted or open transactions."""

from __future__ import annotations

import time

from confluent_kafka import AcknowledgeType, Consumer, Producer, TopicPartition
from helpers.broker import BrokerFactory
from helpers.group_configs import set_group_configs
from helpers.topics import create_topic

from share.sharing import (
    FAST,
    Delivery,
    describe_group_configs,
    earliest_group,
    poll_once,
    poll_until,
    produce,
    share_consumer,
)

GROUP_CONFIG_SOURCE, DEFAULT_SOURCE = 8, 5
PRUNE_OFTEN = {
    "share.coordinator.state.topic.num.partitions": 1,
    "share.coordinator.snapshot.update.records.per.snapshot": 3,
    "share.coordinator.state.topic.prune.interval.ms": 200,
}


def state_log_start(bootstrap: str) -> int:
    """The log start offset of `__share_group_state` (one partition), once pruned."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        deadline = time.monotonic() + 10
        while True:
            low, _high = consumer.get_watermark_offsets(
                TopicPartition("__share_group_state", 0), timeout=10
            )
            if low > 0 or time.monotonic() > deadline:
                return int(low)
            time.sleep(0.2)
    finally:
        consumer.close()


def test_kill_minus_9_redelivers_only_what_was_not_accepted(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    """... also when `__share_group_state` was pruned below the latest snapshots."""
    settings = {k: v for k, v in FAST.items() if "lock" not in k}
    settings.update(PRUNE_OFTEN)
    broker = broker_factory(settings)
    create_topic(broker.bootstrap, unique_topic, 2)
    group = earliest_group(broker.bootstrap, unique_group)
    for index in (0, 1):  # 100 on each partition: both share-partitions get updates
        values = [f"v{i}".encode() for i in range(index, 200, 2)]
        produce(broker.bootstrap, unique_topic, values, partition=index, batch_records=7)
    consumer = share_consumer(
        broker.bootstrap,
        group,
        [unique_topic],
        share_acknowledgement_mode="explicit",
        max_poll_records=20,
    )
    accepted: set[tuple[int, int]] = set()
    deadline = time.monotonic() + 30

    def enough() -> bool:
        # Pruning stops at the oldest state any share-partition still needs: each of
        # the two must have had updates past its first snapshot, not just one of them.
        per_partition = [sum(1 for p, _o in accepted if p == index) for index in (0, 1)]
        return len(accepted) >= 100 and min(per_partition) >= 20

    while not enough() and time.monotonic() < deadline:
        batch = poll_once(consumer)
        for message, _d in batch:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        consumer.commit_sync()  # answered once the acknowledgements are written
        accepted |= {(d.partition, d.offset) for _m, d in batch}
    assert len(accepted) >= 100
    assert state_log_start(broker.bootstrap) > 0  # pruned: older records are gone
    held: list[Delivery] = []
    while not held and time.monotonic() < deadline:
        held = [d for _m, d in poll_once(consumer)]
    assert held
    broker.restart(hard=True)
    consumer.close()
    rest = share_consumer(broker.bootstrap, group, [unique_topic])
    try:
        got = poll_until(rest, 200 - len(accepted), timeout=60)
        got += poll_until(rest, 1, timeout=2)  # anything more would be a redelivery
    finally:
        rest.close()
    again = {(d.partition, d.offset) for d in got}
    assert not again & accepted
    assert len(again | accepted) == 200
    assert len(got) == len(again)  # none twice
    # acquired only: delivered again (acquisitions are not written, as on Kafka, so the
    # delivery count after the crash is the one last written)
    assert {(d.partition, d.offset) for d in held} <= again


def test_group_configs_are_described_validated_and_survive_a_restart(
    broker_factory: BrokerFactory, unique_group: str
) -> None:
    broker = broker_factory(FAST)
    before = describe_group_configs(broker.bootstrap, unique_group)
    assert before["share.auto.offset.reset"] == ("latest", DEFAULT_SOURCE)
    assert before["share.isolation.level"] == ("read_uncommitted", DEFAULT_SOURCE)
    assert before["share.record.lock.duration.ms"] == ("3000", DEFAULT_SOURCE)
    assert {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"} <= set(before)
    settings = {
        "share.auto.offset.reset": "by_duration:PT1H",
        "share.record.lock.duration.ms": 2000,
        "share.isolation.level": "read_committed",
        "share.session.timeout.ms": 5000,
        "share.heartbeat.interval.ms": 400,
        "consumer.session.timeout.ms": 50000,
    }
    set_group_configs(broker.bootstrap, unique_group, settings)
    broker.restart(hard=True)
    after = describe_group_configs(broker.bootstrap, unique_group)
    for name, value in settings.items():
        assert after[name] == (str(value), GROUP_CONFIG_SOURCE), name
    for name, value in [
        ("share.record.lock.duration.ms", 500),  # under group.share.min.record.lock.duration.ms
        ("share.auto.offset.reset", "sometimes"),
        ("share.isolation.level", "read_mostly"),
        ("consumer.session.timeout.ms", 1),
        ("no.such.config", 1),
    ]:
        try:
            set_group_configs(broker.bootstrap, unique_group, {name: value})
        except Exception as exc:  # KafkaException carrying INVALID_CONFIG
            assert "INVALID_CONFIG" in str(exc), exc
        else:
            raise AssertionError(f"{name}={value} was accepted")
    assert describe_group_configs(broker.bootstrap, unique_group) == after


def test_read_committed_share_group_skips_aborted_and_waits_for_open(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    broker = broker_factory(FAST)
    create_topic(broker.bootstrap, unique_topic, 1)
    group = earliest_group(broker.bootstrap, unique_group)
    set_group_configs(broker.bootstrap, group, {"share.isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": group})
    producer.init_transactions(15)

    def transaction(prefix: str, end: str | None) -> None:
        producer.begin_transaction()
        for i in range(5):
            producer.produce(unique_topic, f"{prefix}{i}".encode())
        producer.flush(15)
        if end == "commit":
            producer.commit_transaction(15)
        elif end == "abort":
            producer.abort_transaction(15)

    transaction("committed", "commit")
    transaction("aborted", "abort")
    transaction("later", "commit")
    transaction("open", None)
    consumer = share_consumer(broker.bootstrap, group, [unique_topic])
    try:
        got = poll_until(consumer, 10, timeout=30)
        got += poll_until(consumer, 1, timeout=3)  # the open transaction stays unseen
        values = [d.value.decode() for d in got]
        assert values == [f"committed{i}" for i in range(5)] + [f"later{i}" for i in range(5)]
        producer.commit_transaction(15)
        opened = poll_until(consumer, 5, timeout=30)
        assert [d.value.decode() for d in opened] == [f"open{i}" for i in range(5)]
    finally:
        consumer.close()
