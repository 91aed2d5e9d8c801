"""A streams group's records on `__consumer_offsets`, read back from Apache Kafka 4.4 and
from Odradek: each decodes through the record registry (its types: coordinator/group/
streams.py) and encodes again to the very bytes the broker wrote (so Odradek writes
Kafka's layout, tagged fields included), and replaying them gives the group the broker
describes."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from helpers.wire import WireClient

from odradek.coordinator.group import streams
from odradek.coordinator.group.record_types import REGISTRY
from odradek.coordinator.group.streams import StreamsGroup
from streams.test_streams_bad_input import HEARTBEAT, body, described, owning, prepared

pytestmark = pytest.mark.timeout(120)


def records_of(bootstrap: str, group: str) -> list[tuple[bytes, bytes | None]]:
    """Every record of `group`'s streams group on __consumer_offsets, in log order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{group}-reader",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        metadata = consumer.list_topics("__consumer_offsets", timeout=15)
        partitions = metadata.topics["__consumer_offsets"].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition("__consumer_offsets", p), timeout=10)[
                1
            ]
            for p in partitions
        }
        consumer.assign(
            [TopicPartition("__consumer_offsets", p, 0) for p, end in ends.items() if end]
        )
        found: list[tuple[bytes, bytes | None]] = []
        done: set[int] = set()
        deadline = time.monotonic() + 30
        while len(done) < sum(1 for end in ends.values() if end) and time.monotonic() < deadline:
            for message in consumer.consume(500, timeout=0.5):
                if message.error() is not None:
                    continue
                key = message.key()
                if message.offset() + 1 >= ends[message.partition()]:
                    done.add(message.partition())
                if key is None:
                    continue
                decoded = REGISTRY.decode(key, None)
                if decoded is None or decoded[0] not in streams.RECORD_TYPES:
                    continue
                if decoded[1].group == group:
                    found.append((key, message.value()))
        return found
    finally:
        consumer.close()


def test_the_records_are_kafkas(either_broker: str) -> None:
    with WireClient(either_broker) as client:
        group, _source, member, epoch = prepared(client)
        extras = {
            "user_endpoint": {"host": "iq.example", "port": 8080},
            "client_tags": [{"key": "zone", "value": "z1"}],
        }
        again = client.call(HEARTBEAT, 0, body(group, member, epoch, **owning(0, 1), **extras))
        assert again.error_code == 0, again
        state = described(client, group)
    found = records_of(either_broker, group)
    types = {REGISTRY.decode(key, None)[0] for key, _ in found}  # type: ignore[index]
    assert {
        streams.GROUP_METADATA,
        streams.TOPOLOGY,
        streams.MEMBER_METADATA,
        streams.TARGET_EPOCH,
        streams.TARGET_MEMBER,
        streams.CURRENT_ASSIGNMENT,
    } <= types
    replayed = StreamsGroup(group)
    for key, value in found:
        decoded = REGISTRY.decode(key, value)
        assert decoded is not None
        record_type, decoded_key, decoded_value = decoded
        assert record_type.key_bytes(decoded_key) == key
        if value is not None:
            assert record_type.value.encode(decoded_value) == value, (decoded, value)
        record_type.apply(replayed, decoded_key, decoded_value)
    assert _summary(replayed) == _described_summary(state)
    replayed_member = replayed.members[member]
    assert replayed_member.user_endpoint == ("iq.example", 8080)
    assert replayed_member.client_tags == (("zone", "z1"),)


def _summary(group: StreamsGroup) -> Any:
    return (
        group.group_epoch,
        group.assignment_epoch,
        group.topology.epoch if group.topology is not None else None,
        sorted(
            (
                m.member_id,
                m.member_epoch,
                m.process_id,
                sorted(m.assigned.active_ids().get("0", ())),
            )
            for m in group.members.values()
        ),
    )


def _described_summary(state: Any) -> Any:
    return (
        state.group_epoch,
        state.assignment_epoch,
        state.topology.epoch,
        sorted(
            (
                m.member_id,
                m.member_epoch,
                m.process_id,
                sorted(p for t in m.assignment.active_tasks for p in t.partitions),
            )
            for m in state.members
        ),
    )
