"""`__consumer_offsets` offset and group keys and offset values: Kafka's byte layout."""

from __future__ import annotations

import struct

import pytest

from odradek.coordinator.group import records as rec
from odradek.coordinator.group.classic import GROUP_METADATA
from odradek.coordinator.group.offsets import OFFSET_COMMIT
from odradek.coordinator.group.record_codecs import GroupKey, OffsetKey
from odradek.coordinator.group.record_types import REGISTRY
from odradek.protocol.codec import RecordFormatError


def test_offset_key_bytes_are_kafkas_offset_commit_key_v1() -> None:
    raw = OFFSET_COMMIT.key_bytes(OffsetKey("grp", "orders", 7))
    assert raw == b"\x00\x01" + b"\x00\x03grp" + b"\x00\x06orders" + b"\x00\x00\x00\x07"
    assert OFFSET_COMMIT.key.decode(raw) == OffsetKey("grp", "orders", 7)


def test_group_key_bytes_are_kafkas_group_metadata_key_v2() -> None:
    raw = GROUP_METADATA.key_bytes(GroupKey("gé"))
    assert raw == b"\x00\x02\x00\x03" + "gé".encode()
    assert GROUP_METADATA.key.decode(raw) == GroupKey("gé")


def test_offset_value_bytes_are_kafkas_offset_commit_value_v3() -> None:
    value = rec.OffsetValue(123456789012, 5, "meta", 1_700_000_000_000)
    raw = rec.OFFSET_VALUE.encode(value)
    assert raw == struct.pack(">hqih", 3, 123456789012, 5, 4) + b"meta" + struct.pack(
        ">q", 1_700_000_000_000
    )
    assert rec.OFFSET_VALUE.decode(raw) == value
    empty = rec.OffsetValue(0)
    assert rec.OFFSET_VALUE.decode(rec.OFFSET_VALUE.encode(empty)) == empty


def test_older_offset_value_versions_are_read() -> None:
    v1 = struct.pack(">hqh", 1, 42, 2) + b"md" + struct.pack(">qq", 10, 20)
    assert rec.OFFSET_VALUE.decode(v1) == rec.OffsetValue(42, -1, "md", 10, 20)
    v0 = struct.pack(">hqh", 0, 42, -1) + struct.pack(">q", 10)
    assert rec.OFFSET_VALUE.decode(v0) == rec.OffsetValue(42, -1, "", 10)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00",
        b"\x00\x01\x00\x05ab",  # group runs past the end
        b"\x00\x01\x00\x01a\x00\x01b\x00",  # partition cut short
        b"\x00\x01\xff\xff\x00\x01b\x00\x00\x00\x01",  # null group
        b"\x00\x01\x00\x01a\xff\xff\x00\x00\x00\x01",  # null topic
        b"\x00\x01\x00\x01a\x00\x09b\x00\x00\x00\x01",  # topic runs past the end
    ],
)
def test_damaged_keys_are_format_errors(raw: bytes) -> None:
    with pytest.raises(RecordFormatError):
        REGISTRY.decode(raw, None)


@pytest.mark.parametrize(
    "raw",
    [
        struct.pack(">hqih", 3, 1, 0, 10) + b"short" + b"\x00" * 8,  # metadata cut short
        struct.pack(">hqih", 3, 1, 0, 0) + b"\x00" * 4,  # timestamp cut short
        struct.pack(">hq", 3, 1),
    ],
)
def test_damaged_offset_values_are_format_errors(raw: bytes) -> None:
    with pytest.raises(RecordFormatError):
        rec.OFFSET_VALUE.decode(raw)
