"""Consumer-protocol group records: Kafka's byte layout, and round trips."""

from __future__ import annotations

import uuid

import pytest

from odradek.coordinator.group import consumer_records as cr
from odradek.protocol.codec import RecordFormatError

TOPIC = uuid.UUID("12345678-1234-5678-1234-567812345678")


def test_keys_and_an_epoch_value_byte_for_byte() -> None:
    assert cr.encode_key(cr.ConsumerKey(cr.GROUP_EPOCH, "g")) == b"\x00\x03\x00\x01g"
    assert cr.encode_key(cr.ConsumerKey(cr.CURRENT_ASSIGNMENT, "g", "m")) == (
        b"\x00\x08\x00\x01g\x00\x01m"
    )
    # version 0, int32 epoch, no tagged fields
    assert cr.encode_epoch(5) == b"\x00\x00\x00\x00\x00\x05\x00"
    # version 0; one topic: uuid, 1 partition array of [0, 2]; struct and value tags
    assert cr.encode_target({TOPIC: frozenset({2, 0})}) == (
        b"\x00\x00\x02" + TOPIC.bytes + b"\x03\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00"
    )


def test_round_trips() -> None:
    for key in (
        cr.ConsumerKey(cr.GROUP_EPOCH, "group"),
        cr.ConsumerKey(cr.MEMBER_METADATA, "group", "member"),
        cr.ConsumerKey(cr.TARGET_EPOCH, "group"),
    ):
        assert cr.decode_key(cr.encode_key(key)) == key
    assert cr.decode_key(b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00") is None  # an offset key
    topics = [cr.TopicMetadata(TOPIC, "orders", 6)]
    assert cr.decode_partition_metadata(cr.encode_partition_metadata(topics)) == topics
    member = cr.MemberMetadata(
        "instance", None, "client", "/127.0.0.1", ("a", "b"), None, 300000, "uniform"
    )
    assert cr.decode_member(cr.encode_member(member)) == member
    current = cr.CurrentAssignment(
        7, 6, 1, {TOPIC: frozenset({0, 1})}, {uuid.UUID(int=1): frozenset({3})}
    )
    assert cr.decode_current(cr.encode_current(current)) == current
    assert cr.decode_epoch(cr.encode_epoch(-1)) == -1


def test_truncated_values_are_format_errors() -> None:
    raw = cr.encode_current(cr.CurrentAssignment(1, 0, 0, {TOPIC: frozenset({1})}))
    for cut in range(2, len(raw) - 1):
        with pytest.raises(RecordFormatError):
            cr.decode_current(raw[:cut])
