"""Consumer-protocol group records: Kafka's byte layout, and round trips."""

from __future__ import annotations

import uuid

import pytest

from odradek.coordinator.group import consumer
from odradek.coordinator.group import consumer_records as cr
from odradek.coordinator.group.record_codecs import (
    EPOCH_VALUE,
    TARGET_VALUE,
    GroupKey,
    MemberKey,
)
from odradek.coordinator.group.record_types import REGISTRY
from odradek.protocol.codec import RecordFormatError

TOPIC = uuid.UUID("12345678-1234-5678-1234-567812345678")


def test_keys_and_an_epoch_value_byte_for_byte() -> None:
    assert consumer.GROUP_EPOCH.key_bytes(GroupKey("g")) == b"\x00\x03\x00\x01g"
    assert consumer.CURRENT_ASSIGNMENT.key_bytes(MemberKey("g", "m")) == (
        b"\x00\x08\x00\x01g\x00\x01m"
    )
    # version 0, int32 epoch, no tagged fields
    assert EPOCH_VALUE.encode(5) == b"\x00\x00\x00\x00\x00\x05\x00"
    # version 0; one topic: uuid, 1 partition array of [0, 2]; struct and value tags
    assert TARGET_VALUE.encode({TOPIC: frozenset({2, 0})}) == (
        b"\x00\x00\x02" + TOPIC.bytes + b"\x03\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00"
    )


def test_round_trips() -> None:
    for record_type, key in (
        (consumer.GROUP_EPOCH, GroupKey("group")),
        (consumer.MEMBER_METADATA, MemberKey("group", "member")),
        (consumer.TARGET_EPOCH, GroupKey("group")),
    ):
        assert REGISTRY.decode(record_type.key_bytes(key), None) == (record_type, key, None)
    offset_key = b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00"
    assert REGISTRY.decode(offset_key, None)[0] is not consumer.GROUP_EPOCH  # type: ignore[index]
    topics = [cr.TopicMetadata(TOPIC, "orders", 6)]
    assert cr.TOPICS_VALUE.decode(cr.TOPICS_VALUE.encode(topics)) == topics
    member = cr.MemberMetadata(
        "instance", None, "client", "/127.0.0.1", ("a", "b"), None, 300000, "uniform"
    )
    assert cr.MEMBER_VALUE.decode(cr.MEMBER_VALUE.encode(member)) == member
    current = cr.CurrentAssignment(
        7, 6, 1, {TOPIC: frozenset({0, 1})}, {uuid.UUID(int=1): frozenset({3})}
    )
    assert cr.CURRENT_VALUE.decode(cr.CURRENT_VALUE.encode(current)) == current
    assert EPOCH_VALUE.decode(EPOCH_VALUE.encode(-1)) == -1


def test_truncated_values_are_format_errors() -> None:
    raw = cr.CURRENT_VALUE.encode(cr.CurrentAssignment(1, 0, 0, {TOPIC: frozenset({1})}))
    for cut in range(2, len(raw) - 1):
        with pytest.raises(RecordFormatError):
            cr.CURRENT_VALUE.decode(raw[:cut])
