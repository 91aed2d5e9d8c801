"""The values of `__consumer_offsets` offset and classic group records, in Kafka's own
schemas, so kcat or Kafka's formatter can read the topic (their keys: record_codecs.py).

    OffsetCommitValue v3 written (v0-v4 read): offset, leader epoch, metadata,
        commit timestamp (v1 also an expire timestamp)
    GroupMetadataValue v3 written (v0-v4 read): protocol type, generation,
        protocol, leader, state timestamp, members
A null value is a tombstone: the offset or the group is gone.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import NamedTuple

from odradek.coordinator.registry import Codec
from odradek.protocol.codec import Reader, RecordFormatError, Writer

_I64 = struct.Struct(">q")
_OFFSET_V3_HEAD = struct.Struct(">hqih")  # version, offset, leader epoch, metadata length


# A named tuple, not a frozen dataclass: every offset commit makes and replays one, and
# a frozen dataclass pays an attribute-set call per field.
class OffsetValue(NamedTuple):
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


@dataclass(frozen=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: list[MemberValue] = field(default_factory=list)


def _encode_offset(value: OffsetValue) -> bytes:
    metadata = value.metadata.encode()
    return b"".join(
        (
            _OFFSET_V3_HEAD.pack(3, value.offset, value.leader_epoch, len(metadata)),
            metadata,
            _I64.pack(value.commit_timestamp),
        )
    )


def _decode_offset(raw: bytes) -> OffsetValue:
    if len(raw) >= _OFFSET_V3_HEAD.size and raw[:2] == b"\x00\x03":  # what this broker writes
        _version, offset, epoch, length = _OFFSET_V3_HEAD.unpack_from(raw, 0)
        end = _OFFSET_V3_HEAD.size + max(length, 0)
        if end + 8 != len(raw):
            raise RecordFormatError("offset value v3 of the wrong length")
        metadata = raw[_OFFSET_V3_HEAD.size : end].decode() if length > 0 else ""
        return OffsetValue(offset, epoch, metadata, _I64.unpack_from(raw, end)[0])
    reader = Reader(raw)
    version = reader.int16()
    if version == 4:
        offset = reader.int64()
        epoch = reader.int32()
        metadata = reader.compact_string() or ""
        return OffsetValue(offset, epoch, metadata, reader.int64())
    offset = reader.int64()
    epoch = reader.int32() if version == 3 else -1
    metadata = reader.string() or ""
    commit = reader.int64()
    expire = reader.int64() if version == 1 else -1
    if version > 4:
        raise RecordFormatError(f"unknown offset value version {version}")
    return OffsetValue(offset, epoch, metadata, commit, expire)


def _encode_group(value: GroupValue) -> bytes:
    writer = (
        Writer()
        .int16(3)
        .string(value.protocol_type)
        .int32(value.generation)
        .string(value.protocol)
        .string(value.leader)
        .int64(value.state_timestamp)
        .int32(len(value.members))
    )
    for m in value.members:
        writer.string(m.member_id).string(m.group_instance_id).string(m.client_id)
        writer.string(m.client_host).int32(m.rebalance_timeout).int32(m.session_timeout)
        writer.bytes_(m.subscription).bytes_(m.assignment)
    return writer.done()


def _decode_group(raw: bytes) -> GroupValue:
    reader = Reader(raw)
    version = reader.int16()
    if version > 4:
        raise RecordFormatError(f"unknown group value version {version}")
    flexible = version >= 4
    text = reader.compact_string if flexible else reader.string
    blob = reader.compact_bytes if flexible else reader.bytes_
    protocol_type = text() or ""
    generation = reader.int32()
    protocol = text()
    leader = text()
    state_timestamp = reader.int64() if version >= 2 else -1
    count = reader.uvarint() - 1 if flexible else reader.int32()
    members = []
    for _ in range(max(count, 0)):
        member_id = text() or ""
        instance = text() if version >= 3 else None
        client_id = text() or ""
        client_host = text() or ""
        rebalance = reader.int32() if version >= 1 else -1
        session = reader.int32()
        subscription = blob() or b""
        assignment = blob() or b""
        if flexible:
            reader.skip_tags()
        if rebalance < 0:
            rebalance = session
        members.append(
            MemberValue(
                member_id,
                instance,
                client_id,
                client_host,
                rebalance,
                session,
                subscription,
                assignment,
            )
        )
    return GroupValue(protocol_type, generation, protocol, leader, state_timestamp, members)


OFFSET_VALUE = Codec(_encode_offset, _decode_offset)
GROUP_VALUE = Codec(_encode_group, _decode_group)
