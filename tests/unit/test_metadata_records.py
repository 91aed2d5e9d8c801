"""Kafka's metadata records (coordinator/cluster/kafka_format.py): every type Odradek
declares reads back what it wrote, tagged fields are written only when they differ
from their default, and bad bytes are refused with RecordFormatError."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.coordinator.cluster import kafka_format as kf
from odradek.protocol.codec import RecordFormatError

SAMPLES: dict[str, Any] = {
    "int8": 3,
    "int16": 7,
    "int32": 42,
    "int64": 1 << 40,
    "uint16": 65000,
    "float64": 1024.5,
    "bool": True,
    "uuid": uuid.UUID(int=12345),
    "string": "héllo",
    "bytes": b"\x00\xff",
}


def sample(fields: tuple[kf.Field, ...], version: int) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for f in fields:
        if version < f.since:
            values[f.name] = f.default
        elif f.kind == "[]struct":
            values[f.name] = [sample(f.fields, version), sample(f.fields, version)]
        elif f.kind.startswith("[]"):
            values[f.name] = (SAMPLES[f.kind[2:]],) * 2
        else:
            values[f.name] = SAMPLES[f.kind]
    return values


@pytest.mark.parametrize("schema", list(kf.SCHEMAS.values()), ids=lambda s: s.name)
def test_every_type_reads_back_what_it_wrote(schema: kf.Schema) -> None:
    values = sample(schema.fields, schema.version)
    encoded = kf.encode(kf.MetadataRecord(schema.api_key, values))
    assert encoded[:2] == bytes([kf.FRAME_VERSION, schema.api_key])
    decoded = kf.decode(encoded)
    assert (decoded.api_key, decoded.version) == (schema.api_key, schema.version)
    assert decoded.fields == values


def test_a_tagged_field_at_its_default_is_left_out() -> None:
    unchanged = kf.record(
        kf.PARTITION_CHANGE, partition_id=0, topic_id=uuid.UUID(int=1), isr=None, leader=-2
    )
    moved = kf.record(
        kf.PARTITION_CHANGE, partition_id=0, topic_id=uuid.UUID(int=1), isr=(1,), leader=1
    )
    short, longer = kf.encode(unchanged), kf.encode(moved)
    assert short.endswith(b"\x00") and len(short) == 3 + 4 + 16 + 1
    decoded = kf.decode(longer)
    assert decoded["isr"] == (1,) and decoded["leader"] == 1 and decoded["replicas"] is None
    assert kf.decode(short)["leader"] == -2


def test_an_unknown_type_reads_as_its_type_and_version() -> None:
    record = kf.decode(bytes([1, 99, 4, 0]))
    assert (record.api_key, record.version, record.fields) == (99, 4, {})


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x02\x02\x00",
        b"\x01\x02\x00\x05ab",
        b"\x01\x02\x00\x03\xff\xfe" + bytes(16) + b"\x00",
    ],
)
def test_bad_bytes_are_refused(raw: bytes) -> None:
    with pytest.raises(RecordFormatError):
        kf.decode(raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_decode_or_are_refused(raw: bytes) -> None:
    with contextlib.suppress(RecordFormatError):
        kf.decode(raw)
