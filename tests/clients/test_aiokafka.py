"""Round trips and admin operations through aiokafka 0.14 (asyncio)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers.broker import Broker
from helpers.env import require_module

require_module("aiokafka")

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic  # noqa: E402
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType  # noqa: E402
from aiokafka.errors import InvalidPartitionsError, MessageSizeTooLargeError  # noqa: E402
from aiokafka.structs import ConsumerRecord  # noqa: E402

pytestmark = pytest.mark.timeout(120)

ONE_MIB = 1024 * 1024
TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3


@pytest.fixture
async def admin(shared_broker: Broker) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(
        bootstrap_servers=shared_broker.bootstrap, request_timeout_ms=15000
    )
    await client.start()
    try:
        yield client
    finally:
        await client.close()


async def create_topic(
    admin: AIOKafkaAdminClient, topic: str, partitions: int = 1, **configs: object
) -> None:
    cfg = {k.replace("_", "."): str(v) for k, v in configs.items()}
    resp = await admin.create_topics(
        [NewTopic(topic, partitions, 1, topic_configs=cfg)], timeout_ms=15000
    )
    errors = [(t[0], t[1]) for t in resp.topic_errors if t[1] != 0]
    assert not errors, f"CreateTopics failed: {errors}"


async def produce(b: Broker, topic: str, records: list[dict[str, Any]], **conf: Any) -> list[Any]:
    producer = AIOKafkaProducer(bootstrap_servers=b.bootstrap, request_timeout_ms=15000, **conf)
    await producer.start()
    try:
        futures = [await producer.send(topic, **rec) for rec in records]
        return list(await asyncio.wait_for(asyncio.gather(*futures), 30))
    finally:
        await producer.stop()


async def consume_from_start(
    b: Broker, topic: str, count: int, partition: int = 0
) -> list[ConsumerRecord[Any, Any]]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=b.bootstrap, enable_auto_commit=False, request_timeout_ms=15000
    )
    await consumer.start()
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        return await get_n(consumer, count)
    finally:
        await consumer.stop()


async def get_n(
    consumer: AIOKafkaConsumer, count: int, timeout: float = 20
) -> list[ConsumerRecord[Any, Any]]:
    out: list[ConsumerRecord[Any, Any]] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=200)
        for recs in batches.values():
            out.extend(recs)
    assert len(out) == count, f"got {len(out)} of {count} records within {timeout}s"
    return out


async def test_round_trip_keys_null_values_headers(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str
) -> None:
    await create_topic(admin, unique_topic)
    ts = int(time.time() * 1000) - 60_000
    sent: list[dict[str, Any]] = [
        {"key": b"k1", "value": b"v1", "headers": [("h", b"x"), ("h", b"y")]},
        {"key": None, "value": b"no key"},
        {"key": b"tombstone", "value": None},
        {"key": b"\x00\xff", "value": b"\x80\x81", "timestamp_ms": ts},
    ]
    meta = await produce(shared_broker, unique_topic, sent)
    assert [m.offset for m in meta] == [0, 1, 2, 3]
    got = await consume_from_start(shared_broker, unique_topic, len(sent))
    assert [r.offset for r in got] == [0, 1, 2, 3]
    assert [(r.key, r.value) for r in got] == [(s["key"], s["value"]) for s in sent]
    assert list(got[0].headers) == [("h", b"x"), ("h", b"y")]
    assert not got[1].headers
    assert got[3].timestamp == ts


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
async def test_compression_round_trip(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str, codec: str
) -> None:
    await create_topic(admin, unique_topic)
    sent = [
        {"key": f"k{i}".encode(), "value": (f"value-{i}-" + "z" * (i % 70)).encode()}
        for i in range(300)
    ]
    meta = await produce(shared_broker, unique_topic, sent, compression_type=codec, linger_ms=50)
    assert sorted(m.offset for m in meta) == list(range(300))
    got = await consume_from_start(shared_broker, unique_topic, 300)
    assert [(r.key, r.value) for r in got] == [(s["key"], s["value"]) for s in sent]


async def test_one_mib_record(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str
) -> None:
    await create_topic(admin, unique_topic, max_message_bytes=2 * ONE_MIB)
    value = os.urandom(ONE_MIB)
    await produce(
        shared_broker,
        unique_topic,
        [{"key": b"big", "value": value}, {"key": b"small", "value": b"after"}],
        max_request_size=2 * ONE_MIB,
    )
    got = await consume_from_start(shared_broker, unique_topic, 2)
    assert len(got[0].value) == ONE_MIB
    assert hashlib.sha256(got[0].value).digest() == hashlib.sha256(value).digest()
    assert got[1].value == b"after"


async def test_record_over_topic_limit_is_rejected(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str
) -> None:
    await create_topic(admin, unique_topic)
    with pytest.raises(MessageSizeTooLargeError):
        await produce(
            shared_broker,
            unique_topic,
            [{"value": os.urandom(ONE_MIB + 1000)}],
            max_request_size=2 * ONE_MIB,
        )


async def test_list_offsets_by_time(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str
) -> None:
    await create_topic(admin, unique_topic)
    base = int(time.time() * 1000) - 3_600_000
    await produce(
        shared_broker,
        unique_topic,
        [{"value": f"v{i}".encode(), "timestamp_ms": base + i * 1000} for i in range(10)],
    )
    consumer = AIOKafkaConsumer(bootstrap_servers=shared_broker.bootstrap, request_timeout_ms=15000)
    await consumer.start()
    try:
        tp = TopicPartition(unique_topic, 0)
        assert (await consumer.beginning_offsets([tp]))[tp] == 0
        assert (await consumer.end_offsets([tp]))[tp] == 10
        found = (await consumer.offsets_for_times({tp: base + 2500}))[tp]
        assert found is not None and (found.offset, found.timestamp) == (3, base + 3000)
        found = (await consumer.offsets_for_times({tp: base}))[tp]
        assert found is not None and found.offset == 0
        assert (await consumer.offsets_for_times({tp: base + 60_000}))[tp] is None
    finally:
        await consumer.stop()


async def test_auto_offset_reset_earliest(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str, unique_group: str
) -> None:
    await create_topic(admin, unique_topic)
    await produce(shared_broker, unique_topic, [{"value": f"old-{i}".encode()} for i in range(5)])
    consumer = AIOKafkaConsumer(
        unique_topic,
        bootstrap_servers=shared_broker.bootstrap,
        group_id=unique_group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        request_timeout_ms=15000,
    )
    await consumer.start()
    try:
        got = await get_n(consumer, 5, timeout=30)
    finally:
        await consumer.stop()
    assert [r.value for r in got] == [f"old-{i}".encode() for i in range(5)]


async def test_auto_offset_reset_latest(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str, unique_group: str
) -> None:
    await create_topic(admin, unique_topic)
    await produce(shared_broker, unique_topic, [{"value": f"old-{i}".encode()} for i in range(5)])
    consumer = AIOKafkaConsumer(
        unique_topic,
        bootstrap_servers=shared_broker.bootstrap,
        group_id=unique_group,
        auto_offset_reset="latest",
        enable_auto_commit=False,
        request_timeout_ms=15000,
    )
    await consumer.start()
    try:
        tp = TopicPartition(unique_topic, 0)
        deadline = time.monotonic() + 30
        while tp not in consumer.assignment():
            assert time.monotonic() < deadline, "no assignment within 30 s"
            assert not await consumer.getmany(timeout_ms=200)
        assert await asyncio.wait_for(consumer.position(tp), 15) == 5
        await produce(
            shared_broker, unique_topic, [{"value": f"new-{i}".encode()} for i in range(3)]
        )
        got = await get_n(consumer, 3)
    finally:
        await consumer.stop()
    assert [r.value for r in got] == [b"new-0", b"new-1", b"new-2"]
    assert [r.offset for r in got] == [5, 6, 7]


def config_entries(responses: list[Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for resp in responses:
        for res in resp.to_object()["resources"]:
            assert res["error_code"] == 0, res
            for entry in res["config_entries"]:
                out[entry["config_names"]] = entry
    return out


async def test_admin_topics_lifecycle(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str
) -> None:
    await create_topic(admin, unique_topic, 3, retention_ms=3_600_000)
    assert unique_topic in await admin.list_topics()

    (desc,) = await admin.describe_topics([unique_topic])
    assert desc["error_code"] == 0
    assert sorted(p["partition"] for p in desc["partitions"]) == [0, 1, 2]
    for p in desc["partitions"]:
        assert p["error_code"] == 0
        assert p["replicas"] == [p["leader"]]

    entries = config_entries(
        await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, unique_topic)])
    )
    assert entries["retention.ms"]["config_value"] == "3600000"
    assert entries["cleanup.policy"]["config_value"] == "delete"

    resp = await admin.create_topics([NewTopic(unique_topic, 1, 1)], timeout_ms=15000)
    assert [t[1] for t in resp.topic_errors] == [TOPIC_ALREADY_EXISTS]

    resp = await admin.delete_topics([unique_topic], timeout_ms=15000)
    assert [t[1] for t in resp.topic_error_codes] == [0]
    deadline = time.monotonic() + 10
    while unique_topic in await admin.list_topics():
        assert time.monotonic() < deadline, "deleted topic still listed after 10 s"
        await asyncio.sleep(0.3)
    resp = await admin.delete_topics([unique_topic], timeout_ms=15000)
    assert [t[1] for t in resp.topic_error_codes] == [UNKNOWN_TOPIC_OR_PARTITION]


async def test_alter_configs(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str
) -> None:
    await create_topic(admin, unique_topic)
    res = ConfigResource(
        ConfigResourceType.TOPIC, unique_topic, configs={"retention.ms": "1234567"}
    )
    for resp in await admin.alter_configs([res]):
        for r in resp.to_object()["resources"]:
            assert r["error_code"] == 0, r
    entries = config_entries(
        await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, unique_topic)])
    )
    assert entries["retention.ms"]["config_value"] == "1234567"


async def test_create_partitions(
    shared_broker: Broker, admin: AIOKafkaAdminClient, unique_topic: str
) -> None:
    await create_topic(admin, unique_topic, 1)
    resp = await admin.create_partitions({unique_topic: NewPartitions(3)}, timeout_ms=15000)
    assert [r[1] for r in resp.topic_errors] == [0]
    (desc,) = await admin.describe_topics([unique_topic])
    assert sorted(p["partition"] for p in desc["partitions"]) == [0, 1, 2]
    with pytest.raises(InvalidPartitionsError):  # aiokafka raises this one
        await admin.create_partitions({unique_topic: NewPartitions(2)}, timeout_ms=15000)
