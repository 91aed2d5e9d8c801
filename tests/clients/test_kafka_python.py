"""Round trips and admin operations through kafka-python 3.0 (pure Python)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.broker import Broker
from helpers.env import require_module

require_module("kafka")

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import (  # noqa: E402
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
)
from kafka.errors import (  # noqa: E402
    InvalidPartitionsError,
    MessageSizeTooLargeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)

pytestmark = pytest.mark.timeout(120)

ONE_MIB = 1024 * 1024
TIMEOUT = 20.0


@pytest.fixture
def admin(shared_broker: Broker) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap, request_timeout_ms=15000)
    try:
        yield client
    finally:
        client.close()


def create_topic(
    admin: KafkaAdminClient, topic: str, partitions: int = 1, **configs: object
) -> None:
    cfg = {k.replace("_", "."): str(v) for k, v in configs.items()}
    admin.create_topics(
        {topic: {"num_partitions": partitions, "replication_factor": 1, "configs": cfg}},
        timeout_ms=15000,
    )


def produce(b: Broker, topic: str, records: list[dict[str, Any]], **conf: Any) -> list[Any]:
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, request_timeout_ms=15000, **conf)
    try:
        futures = [producer.send(topic, **rec) for rec in records]
        producer.flush(TIMEOUT)
        return [f.get(timeout=TIMEOUT) for f in futures]
    finally:
        producer.close(timeout=5)


def group_consumer(b: Broker, topic: str, group: str, **conf: Any) -> KafkaConsumer:
    """A consumer in `group` subscribed to `topic`, which it knows the partitions of
    before it joins. kafka-python, joining first, assigns nothing, rebalances once the
    metadata comes; if a poll times out during that second join, kafka-python 3.0.12
    never applies the assignment the join brought and the consumer fetches nothing."""
    consumer = KafkaConsumer(
        bootstrap_servers=b.bootstrap, group_id=group, request_timeout_ms=15000, **conf
    )
    assert consumer.partitions_for_topic(topic), f"no metadata for {topic}"
    consumer.subscribe([topic])
    return consumer


def poll_n(consumer: KafkaConsumer, count: int, timeout: float = TIMEOUT) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        for recs in consumer.poll(timeout_ms=200).values():
            out.extend(recs)
    assert len(out) == count, f"got {len(out)} of {count} records within {timeout}s"
    return out


def consume_from_start(b: Broker, topic: str, count: int, partition: int = 0) -> list[Any]:
    consumer = KafkaConsumer(
        bootstrap_servers=b.bootstrap, enable_auto_commit=False, request_timeout_ms=15000
    )
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        return poll_n(consumer, count)
    finally:
        consumer.close()


def test_round_trip_keys_null_values_headers(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str
) -> None:
    create_topic(admin, unique_topic)
    ts = int(time.time() * 1000) - 60_000
    sent: list[dict[str, Any]] = [
        {"key": b"k1", "value": b"v1", "headers": [("h", b"x"), ("h", b"y")]},
        {"key": None, "value": b"no key"},
        {"key": b"tombstone", "value": None},
        {"key": b"\x00\xff", "value": b"\x80\x81", "timestamp_ms": ts},
    ]
    meta = produce(shared_broker, unique_topic, sent)
    assert [m.offset for m in meta] == [0, 1, 2, 3]
    got = consume_from_start(shared_broker, unique_topic, len(sent))
    assert [r.offset for r in got] == [0, 1, 2, 3]
    assert [(r.key, r.value) for r in got] == [(s["key"], s["value"]) for s in sent]
    assert list(got[0].headers) == [("h", b"x"), ("h", b"y")]
    assert not got[1].headers
    assert got[3].timestamp == ts


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str, codec: str
) -> None:
    create_topic(admin, unique_topic)
    sent = [
        {"key": f"k{i}".encode(), "value": (f"value-{i}-" + "w" * (i % 70)).encode()}
        for i in range(300)
    ]
    meta = produce(shared_broker, unique_topic, sent, compression_type=codec, linger_ms=50)
    assert sorted(m.offset for m in meta) == list(range(300))
    got = consume_from_start(shared_broker, unique_topic, 300)
    assert [(r.key, r.value) for r in got] == [(s["key"], s["value"]) for s in sent]


def test_one_mib_record(shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str) -> None:
    create_topic(admin, unique_topic, max_message_bytes=2 * ONE_MIB)
    value = os.urandom(ONE_MIB)
    produce(
        shared_broker,
        unique_topic,
        [{"key": b"big", "value": value}, {"key": b"small", "value": b"after"}],
        max_request_size=2 * ONE_MIB,
    )
    got = consume_from_start(shared_broker, unique_topic, 2)
    assert len(got[0].value) == ONE_MIB
    assert hashlib.sha256(got[0].value).digest() == hashlib.sha256(value).digest()
    assert got[1].value == b"after"


def test_record_over_topic_limit_is_rejected(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str
) -> None:
    create_topic(admin, unique_topic)
    with pytest.raises(MessageSizeTooLargeError):
        produce(
            shared_broker,
            unique_topic,
            [{"value": os.urandom(ONE_MIB + 1000)}],
            max_request_size=2 * ONE_MIB,
        )


def test_list_offsets_by_time(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str
) -> None:
    create_topic(admin, unique_topic)
    base = int(time.time() * 1000) - 3_600_000
    produce(
        shared_broker,
        unique_topic,
        [{"value": f"v{i}".encode(), "timestamp_ms": base + i * 1000} for i in range(10)],
    )
    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap, request_timeout_ms=15000)
    try:
        tp = TopicPartition(unique_topic, 0)
        assert consumer.beginning_offsets([tp])[tp] == 0
        assert consumer.end_offsets([tp])[tp] == 10
        found = consumer.offsets_for_times({tp: base + 2500})[tp]
        assert found is not None and (found.offset, found.timestamp) == (3, base + 3000)
        assert consumer.offsets_for_times({tp: base + 60_000})[tp] is None
    finally:
        consumer.close()


def test_auto_offset_reset_earliest(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str, unique_group: str
) -> None:
    create_topic(admin, unique_topic)
    produce(shared_broker, unique_topic, [{"value": f"old-{i}".encode()} for i in range(5)])
    consumer = group_consumer(
        shared_broker,
        unique_topic,
        unique_group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        got = poll_n(consumer, 5, timeout=30)
    finally:
        consumer.close()
    assert [r.value for r in got] == [f"old-{i}".encode() for i in range(5)]


def test_auto_offset_reset_latest(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str, unique_group: str
) -> None:
    create_topic(admin, unique_topic)
    produce(shared_broker, unique_topic, [{"value": f"old-{i}".encode()} for i in range(5)])
    consumer = group_consumer(
        shared_broker,
        unique_topic,
        unique_group,
        auto_offset_reset="latest",
        enable_auto_commit=False,
    )
    try:
        tp = TopicPartition(unique_topic, 0)
        deadline = time.monotonic() + 30
        while tp not in consumer.assignment():
            assert time.monotonic() < deadline, "no assignment within 30 s"
            assert not consumer.poll(timeout_ms=200)
        assert consumer.position(tp) == 5
        produce(shared_broker, unique_topic, [{"value": f"new-{i}".encode()} for i in range(3)])
        got = poll_n(consumer, 3)
    finally:
        consumer.close()
    assert [r.value for r in got] == [b"new-0", b"new-1", b"new-2"]
    assert [r.offset for r in got] == [5, 6, 7]


def topic_configs(admin: KafkaAdminClient, topic: str) -> dict[str, dict[str, Any]]:
    res = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
    )
    configs: dict[str, dict[str, Any]] = res["topic"][topic]
    return configs


def test_admin_topics_lifecycle(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str
) -> None:
    create_topic(admin, unique_topic, 3, retention_ms=3_600_000)
    assert unique_topic in admin.list_topics()

    (desc,) = admin.describe_topics([unique_topic])
    assert desc["error_code"] == 0
    assert sorted(p["partition_index"] for p in desc["partitions"]) == [0, 1, 2]
    for p in desc["partitions"]:
        assert p["replica_nodes"] == [p["leader_id"]]

    configs = topic_configs(admin, unique_topic)
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["cleanup.policy"]["value"] == "delete"

    with pytest.raises(TopicAlreadyExistsError):
        create_topic(admin, unique_topic)

    admin.delete_topics([unique_topic], timeout_ms=15000)
    deadline = time.monotonic() + 10
    while unique_topic in admin.list_topics():
        assert time.monotonic() < deadline, "deleted topic still listed after 10 s"
        time.sleep(0.3)
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics([unique_topic], timeout_ms=15000)


def test_incremental_alter_configs(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str
) -> None:
    create_topic(admin, unique_topic)
    admin.alter_configs(
        [
            ConfigResource(
                ConfigResourceType.TOPIC,
                unique_topic,
                configs={"retention.ms": (AlterConfigOp.SET, "1234567")},
            )
        ],
        incremental=True,
    )
    assert topic_configs(admin, unique_topic)["retention.ms"]["value"] == "1234567"
    admin.alter_configs(
        [
            ConfigResource(
                ConfigResourceType.TOPIC,
                unique_topic,
                configs={"retention.ms": (AlterConfigOp.DELETE, None)},
            )
        ],
        incremental=True,
    )
    entry = topic_configs(admin, unique_topic)["retention.ms"]
    assert entry["value"] == "604800000"
    assert entry["config_source"] != "DYNAMIC_TOPIC_CONFIG"


def test_create_partitions(
    shared_broker: Broker, admin: KafkaAdminClient, unique_topic: str
) -> None:
    create_topic(admin, unique_topic, 1)
    admin.create_partitions({unique_topic: 3}, timeout_ms=15000)
    (desc,) = admin.describe_topics([unique_topic])
    assert sorted(p["partition_index"] for p in desc["partitions"]) == [0, 1, 2]
    with pytest.raises(InvalidPartitionsError):
        admin.create_partitions({unique_topic: 2}, timeout_ms=15000)
