"""`__consumer_offsets` records in Kafka's own key/value schemas, so kcat or
Kafka's formatter can read the topic.

Keys (int16 version first):
    0, 1  OffsetCommitKey     group, topic, partition
    2     GroupMetadataKey    group
Values:
    OffsetCommitValue v3 written (v0-v4 read): offset, leader epoch, metadata,
        commit timestamp (v1 also an expire timestamp)
    GroupMetadataValue v3 written (v0-v4 read): protocol type, generation,
        protocol, leader, state timestamp, members
A null value is a tombstone: the offset or the group is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.codec import Reader, RecordFormatError, Writer


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupKey:
    group: str


@dataclass(frozen=True)
class OffsetValue:
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


def encode_key(key: OffsetKey | GroupKey) -> bytes:
    if isinstance(key, OffsetKey):
        return Writer().int16(1).string(key.group).string(key.topic).int32(key.partition).done()
    return Writer().int16(2).string(key.group).done()


def decode_key(raw: bytes) -> OffsetKey | GroupKey | None:
    """None for key versions this broker does not own (e.g. KIP-848 records)."""
    reader = Reader(raw)
    version = reader.int16()
    if version in (0, 1):
        group, topic = reader.string(), reader.string()
        partition = reader.int32()
        if group is None or topic is None:
            raise RecordFormatError("null group or topic in an offset key")
        return OffsetKey(group, topic, partition)
    if version == 2:
        group = reader.string()
        if group is None:
            raise RecordFormatError("null group in a group key")
        return GroupKey(group)
    return None


def encode_offset(value: OffsetValue) -> bytes:
    return (
        Writer()
        .int16(3)
        .int64(value.offset)
        .int32(value.leader_epoch)
        .string(value.metadata)
        .int64(value.commit_timestamp)
        .done()
    )


def decode_offset(raw: bytes) -> OffsetValue:
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


def encode_group(value: GroupValue) -> bytes:
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


def decode_group(raw: bytes) -> GroupValue:
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
