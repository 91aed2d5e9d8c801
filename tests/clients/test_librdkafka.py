"""Round trips and admin operations through librdkafka (confluent-kafka 2.16)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.broker import Broker
from helpers.env import require_module

require_module("confluent_kafka")

from confluent_kafka import (  # noqa: E402
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

pytestmark = pytest.mark.timeout(120)

ONE_MIB = 1024 * 1024
TIMEOUT = 15.0


def admin_for(b: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap})


def create_topic(b: Broker, topic: str, partitions: int = 1, **configs: object) -> None:
    cfg = {k.replace("_", "."): str(v) for k, v in configs.items()}
    admin = admin_for(b)  # must outlive the future
    fs = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=cfg)],
        operation_timeout=TIMEOUT,
    )
    fs[topic].result(timeout=TIMEOUT)


def produce_all(
    b: Broker, topic: str, records: list[dict[str, Any]], **conf: object
) -> list[Message]:
    """Produce and wait for every delivery report; raises on any delivery error."""
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5, **conf})
    reports: list[tuple[KafkaError | None, Message]] = []
    for rec in records:
        p.produce(topic, on_delivery=lambda err, msg: reports.append((err, msg)), **rec)
        p.poll(0)
    remaining = p.flush(TIMEOUT)
    assert remaining == 0, f"{remaining} messages not delivered within {TIMEOUT}s"
    errors = [err for err, _ in reports if err is not None]
    if errors:
        raise KafkaException(errors[0])
    return [msg for _, msg in reports]


def source_of(entry: ConfigEntry) -> int:
    """ConfigEntry.source is an int from the C layer, a ConfigSource elsewhere."""
    return int(getattr(entry.source, "value", entry.source))


@pytest.fixture
def consumer_conf(shared_broker: Broker, unique_group: str) -> dict[str, object]:
    return {
        "bootstrap.servers": shared_broker.bootstrap,
        "group.id": unique_group,
        "enable.auto.commit": False,
        "session.timeout.ms": 10000,
    }


def consume_from_start(
    conf: dict[str, object], topic: str, count: int, partition: int = 0
) -> list[Message]:
    c = Consumer(conf)
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        return poll_n(c, count)
    finally:
        c.close()


def poll_n(c: Consumer, count: int, timeout: float = TIMEOUT) -> list[Message]:
    out: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        msg = c.poll(0.2)
        if msg is None:
            continue
        if msg.error() is not None:
            if msg.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise KafkaException(msg.error())
        out.append(msg)
    assert len(out) == count, f"got {len(out)} of {count} messages within {timeout}s"
    return out


def test_round_trip_keys_null_values_headers(
    shared_broker: Broker, unique_topic: str, consumer_conf: dict[str, object]
) -> None:
    create_topic(shared_broker, unique_topic)
    ts = int(time.time() * 1000) - 60_000
    sent: list[dict[str, Any]] = [
        {"key": b"k1", "value": b"v1", "headers": [("h", b"x"), ("h", b"y"), ("none", None)]},
        {"key": None, "value": b"no key"},
        {"key": b"tombstone", "value": None},
        {"key": b"\x00\xff", "value": b"\x80\x81\x82"},
        {"key": b"ts", "value": b"explicit", "timestamp": ts},
    ]
    delivered = produce_all(shared_broker, unique_topic, sent)
    assert sorted(m.offset() for m in delivered) == list(range(len(sent)))

    got = consume_from_start(consumer_conf, unique_topic, len(sent))
    assert [m.offset() for m in got] == list(range(len(sent)))
    for want, have in zip(sent, got, strict=True):
        assert have.key() == want["key"]
        assert have.value() == want["value"]
    assert got[0].headers() == [("h", b"x"), ("h", b"y"), ("none", None)]
    assert not got[1].headers()
    assert got[4].timestamp() == (1, ts)  # TIMESTAMP_CREATE_TIME


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression_round_trip(
    shared_broker: Broker, unique_topic: str, codec: str, consumer_conf: dict[str, object]
) -> None:
    create_topic(shared_broker, unique_topic)
    sent = [
        {"key": f"k{i}".encode(), "value": (f"value-{i} " + "xyz" * (i % 40)).encode()}
        for i in range(300)
    ]
    produce_all(shared_broker, unique_topic, sent, **{"compression.type": codec, "linger.ms": 50})
    got = consume_from_start(consumer_conf, unique_topic, len(sent))
    assert [(m.key(), m.value()) for m in got] == [(s["key"], s["value"]) for s in sent]
    assert [m.offset() for m in got] == list(range(300))


def test_one_mib_record(
    shared_broker: Broker, unique_topic: str, consumer_conf: dict[str, object]
) -> None:
    create_topic(shared_broker, unique_topic, max_message_bytes=2 * ONE_MIB)
    value = os.urandom(ONE_MIB)
    produce_all(
        shared_broker,
        unique_topic,
        [{"key": b"big", "value": value}, {"key": b"small", "value": b"after"}],
        **{"message.max.bytes": 2 * ONE_MIB},
    )
    got = consume_from_start(consumer_conf, unique_topic, 2)
    big = got[0].value()
    assert big is not None and len(big) == ONE_MIB
    assert hashlib.sha256(big).digest() == hashlib.sha256(value).digest()
    assert got[1].value() == b"after"


def test_record_over_topic_limit_is_rejected(shared_broker: Broker, unique_topic: str) -> None:
    create_topic(shared_broker, unique_topic)
    with pytest.raises(KafkaException) as info:
        produce_all(
            shared_broker,
            unique_topic,
            [{"key": b"big", "value": os.urandom(ONE_MIB + 1000)}],
            **{"message.max.bytes": 2 * ONE_MIB},
        )
    assert info.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_list_offsets_by_time(
    shared_broker: Broker, unique_topic: str, consumer_conf: dict[str, object]
) -> None:
    create_topic(shared_broker, unique_topic)
    base = int(time.time() * 1000) - 3_600_000
    produce_all(
        shared_broker,
        unique_topic,
        [{"value": f"v{i}".encode(), "timestamp": base + i * 1000} for i in range(10)],
    )
    c = Consumer(consumer_conf)
    try:
        assert c.get_watermark_offsets(TopicPartition(unique_topic, 0), timeout=TIMEOUT) == (0, 10)
        res = c.offsets_for_times([TopicPartition(unique_topic, 0, base + 2500)], timeout=TIMEOUT)
        assert res[0].error is None and res[0].offset == 3
        res = c.offsets_for_times([TopicPartition(unique_topic, 0, base)], timeout=TIMEOUT)
        assert res[0].offset == 0
        res = c.offsets_for_times([TopicPartition(unique_topic, 0, base + 60_000)], timeout=TIMEOUT)
        assert res[0].offset == -1  # OFFSET_END: no record at or after the timestamp
    finally:
        c.close()

    admin = admin_for(shared_broker)
    tp = TopicPartition(unique_topic, 0)
    specs = {
        "earliest": (OffsetSpec.earliest(), 0),
        "latest": (OffsetSpec.latest(), 10),
        "time": (OffsetSpec.for_timestamp(base + 7000), 7),
        "max": (OffsetSpec.max_timestamp(), 9),
    }
    for name, (spec, want) in specs.items():
        info = admin.list_offsets({tp: spec})[tp].result(timeout=TIMEOUT)
        assert info.offset == want, f"ListOffsets {name}: {info.offset} != {want}"


def test_auto_offset_reset_earliest(
    shared_broker: Broker, unique_topic: str, consumer_conf: dict[str, object]
) -> None:
    create_topic(shared_broker, unique_topic)
    produce_all(shared_broker, unique_topic, [{"value": f"old-{i}".encode()} for i in range(5)])
    c = Consumer({**consumer_conf, "auto.offset.reset": "earliest"})
    try:
        c.subscribe([unique_topic])
        got = poll_n(c, 5, timeout=30)
    finally:
        c.close()
    assert [m.value() for m in got] == [f"old-{i}".encode() for i in range(5)]
    assert [m.offset() for m in got] == list(range(5))


def test_auto_offset_reset_latest(
    shared_broker: Broker, unique_topic: str, consumer_conf: dict[str, object]
) -> None:
    create_topic(shared_broker, unique_topic)
    produce_all(shared_broker, unique_topic, [{"value": f"old-{i}".encode()} for i in range(5)])
    assigned: list[TopicPartition] = []
    c = Consumer({**consumer_conf, "auto.offset.reset": "latest"})
    p = Producer({"bootstrap.servers": shared_broker.bootstrap})
    try:
        c.subscribe([unique_topic], on_assign=lambda _c, parts: assigned.extend(parts))
        deadline = time.monotonic() + 30
        while not assigned:
            assert time.monotonic() < deadline, "no partition assigned within 30 s"
            assert c.poll(0.2) is None
        # Until the consumer has resolved "latest", a new record may land before its
        # start position; keep producing until one arrives, then check it is a new one.
        first: Message | None = None
        i = 0
        while first is None:
            assert time.monotonic() < deadline, "no new record consumed within 30 s"
            p.produce(unique_topic, value=f"new-{i}".encode())
            p.flush(TIMEOUT)
            i += 1
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                first = msg
    finally:
        c.close()
    value = first.value()
    assert value is not None and value.startswith(b"new-"), value
    assert first.offset() >= 5


@pytest.fixture
def admin(shared_broker: Broker) -> Iterator[AdminClient]:
    yield admin_for(shared_broker)


def test_admin_topics_lifecycle(
    shared_broker: Broker, admin: AdminClient, unique_topic: str
) -> None:
    create_topic(shared_broker, unique_topic, 3, retention_ms=3_600_000)
    md = admin.list_topics(timeout=TIMEOUT)
    assert unique_topic in md.topics
    assert sorted(md.topics[unique_topic].partitions) == [0, 1, 2]

    desc = admin.describe_topics(TopicCollection([unique_topic]))[unique_topic].result(
        timeout=TIMEOUT
    )
    assert desc.name == unique_topic and not desc.is_internal
    assert [p.id for p in desc.partitions] == [0, 1, 2]
    for p in desc.partitions:
        assert p.leader is not None and p.leader.port == shared_broker.port
        assert [r.id for r in p.replicas] == [p.leader.id]
        assert [r.id for r in p.isr] == [p.leader.id]

    res = ConfigResource(ResourceType.TOPIC, unique_topic)
    entries = admin.describe_configs([res])[res].result(timeout=TIMEOUT)
    assert entries["retention.ms"].value == "3600000"
    assert source_of(entries["retention.ms"]) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["cleanup.policy"].value == "delete"

    dup = admin.create_topics([NewTopic(unique_topic, 1, 1)], operation_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as info:
        dup[unique_topic].result(timeout=TIMEOUT)
    assert info.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS

    admin.delete_topics([unique_topic], operation_timeout=TIMEOUT)[unique_topic].result(
        timeout=TIMEOUT
    )
    deadline = time.monotonic() + 10
    while unique_topic in admin.list_topics(timeout=TIMEOUT).topics:
        assert time.monotonic() < deadline, "deleted topic still listed after 10 s"
        time.sleep(0.3)
    again = admin.delete_topics([unique_topic], operation_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as info:
        again[unique_topic].result(timeout=TIMEOUT)
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_incremental_alter_configs(
    shared_broker: Broker, admin: AdminClient, unique_topic: str
) -> None:
    create_topic(shared_broker, unique_topic)
    res = ConfigResource(
        ResourceType.TOPIC,
        unique_topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "1234567", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    admin.incremental_alter_configs([res])[res].result(timeout=TIMEOUT)
    plain = ConfigResource(ResourceType.TOPIC, unique_topic)
    entries = admin.describe_configs([plain])[plain].result(timeout=TIMEOUT)
    assert entries["retention.ms"].value == "1234567"
    assert entries["cleanup.policy"].value == "compact"

    res = ConfigResource(
        ResourceType.TOPIC,
        unique_topic,
        incremental_configs=[
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)
        ],
    )
    admin.incremental_alter_configs([res])[res].result(timeout=TIMEOUT)
    entries = admin.describe_configs([plain])[plain].result(timeout=TIMEOUT)
    assert entries["retention.ms"].value == "604800000"
    assert source_of(entries["retention.ms"]) != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert entries["cleanup.policy"].value == "compact"


def test_create_partitions(shared_broker: Broker, admin: AdminClient, unique_topic: str) -> None:
    create_topic(shared_broker, unique_topic, 1)
    fs = admin.create_partitions([NewPartitions(unique_topic, 4)], operation_timeout=TIMEOUT)
    fs[unique_topic].result(timeout=TIMEOUT)
    desc = admin.describe_topics(TopicCollection([unique_topic]))[unique_topic].result(
        timeout=TIMEOUT
    )
    assert [p.id for p in desc.partitions] == [0, 1, 2, 3]

    delivered = produce_all(shared_broker, unique_topic, [{"value": b"to-3", "partition": 3}])
    assert (delivered[0].partition(), delivered[0].offset()) == (3, 0)

    fs = admin.create_partitions([NewPartitions(unique_topic, 2)], operation_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as info:
        fs[unique_topic].result(timeout=TIMEOUT)
    assert info.value.args[0].code() == KafkaError.INVALID_PARTITIONS


def test_parked_fetch_returns_soon_after_produce(
    shared_broker: Broker, unique_topic: str, consumer_conf: dict[str, object]
) -> None:
    """A Fetch waiting at the log end (fetch.wait.max.ms 5 s) answers as soon as a record
    arrives, not at max wait."""
    create_topic(shared_broker, unique_topic)
    c = Consumer({**consumer_conf, "fetch.wait.max.ms": 5000, "fetch.min.bytes": 1})
    p = Producer({"bootstrap.servers": shared_broker.bootstrap, "linger.ms": 0})
    try:
        c.assign([TopicPartition(unique_topic, 0, 0)])
        assert c.poll(1.0) is None  # the consumer's fetch is now parked at offset 0
        latencies = []
        for i in range(3):
            time.sleep(0.3)
            start = time.monotonic()
            p.produce(unique_topic, value=f"m{i}".encode())
            p.flush(TIMEOUT)
            msg = c.poll(4.5)
            latencies.append(time.monotonic() - start)
            assert msg is not None and msg.error() is None, "record not delivered before 4.5 s"
            assert msg.value() == f"m{i}".encode()
        # well under the 5 s max wait, with room for a busy machine
        assert max(latencies) < 2.5, f"parked fetch woke late: {latencies}"
    finally:
        c.close()
