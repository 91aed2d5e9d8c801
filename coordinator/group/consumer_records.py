"""`__consumer_offsets` records of consumer-protocol groups (KIP-848), in Kafka's own
schemas. Keys (int16 version first, then the group id and, for members, the member id)
and values (version 0, flexible: compact strings and arrays, tagged fields):

    3  ConsumerGroupMetadata                 group epoch
    4  ConsumerGroupPartitionMetadata        the subscribed topics: id, name, partitions
    5  ConsumerGroupMemberMetadata           a member's subscription and settings
    6  ConsumerGroupTargetAssignmentMetadata the target assignment's epoch
    7  ConsumerGroupTargetAssignmentMember   a member's target partitions
    8  ConsumerGroupCurrentMemberAssignment  a member's epoch, state, owned and revoking

A null value is a tombstone. Partitions are given per topic id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from odradek.coordinator.group import record_keys
from odradek.coordinator.group.record_keys import GroupKey
from odradek.protocol.codec import Reader, Writer

GROUP_EPOCH, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
KINDS = range(GROUP_EPOCH, CURRENT_ASSIGNMENT + 1)
_MEMBER_KINDS = (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT)

# topic id -> partitions
TopicPartitions = dict[uuid.UUID, frozenset[int]]


ConsumerKey = GroupKey


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: uuid.UUID
    name: str
    partitions: int


@dataclass(frozen=True)
class ClassicMetadata:
    """What a member using the classic protocol (JoinGroup) inside a consumer group
    sent: its session timeout and its protocols, (name, metadata) in its order."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class MemberMetadata:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMetadata | None = None


@dataclass(frozen=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicPartitions = field(default_factory=dict)
    pending_revocation: TopicPartitions = field(default_factory=dict)


def encode_key(key: ConsumerKey) -> bytes:
    return record_keys.encode_key(key, _MEMBER_KINDS)


def decode_key(raw: bytes) -> ConsumerKey | None:
    """None for keys of other kinds (offsets, classic groups)."""
    return record_keys.decode_key(raw, KINDS, _MEMBER_KINDS, "consumer group")


def _value(writer: Writer) -> bytes:
    return writer.no_tags().done()


_start = record_keys.start_value


_read = record_keys.read_value


def encode_epoch(epoch: int) -> bytes:
    """ConsumerGroupMetadataValue and ConsumerGroupTargetAssignmentMetadataValue."""
    return _value(_start().int32(epoch))


def decode_epoch(raw: bytes) -> int:
    return _read(raw).int32()


def encode_partition_metadata(topics: list[TopicMetadata]) -> bytes:
    writer = _start().compact_length(len(topics))
    for topic in topics:
        writer.uuid(topic.topic_id).compact_string(topic.name).int32(topic.partitions)
        writer.compact_length(0).no_tags()  # no racks
    return _value(writer)


def decode_partition_metadata(raw: bytes) -> list[TopicMetadata]:
    reader = _read(raw)
    topics = []
    for _ in range(reader.compact_length()):
        topic_id, name, partitions = reader.uuid(), reader.compact_string(), reader.int32()
        for _ in range(reader.compact_length()):
            reader.int32()
            for _ in range(reader.compact_length()):
                reader.compact_string()
            reader.skip_tags()
        reader.skip_tags()
        topics.append(TopicMetadata(topic_id, name or "", partitions))
    return topics


def encode_member(value: MemberMetadata) -> bytes:
    writer = (
        _start()
        .compact_string(value.instance_id)
        .compact_string(value.rack_id)
        .compact_string(value.client_id)
        .compact_string(value.client_host)
        .compact_length(len(value.subscribed_topic_names))
    )
    for name in value.subscribed_topic_names:
        writer.compact_string(name)
    writer.compact_string(value.subscribed_topic_regex)
    writer.int32(value.rebalance_timeout_ms).compact_string(value.server_assignor)
    if value.classic is None:
        return _value(writer)
    # ClassicMemberMetadata: tagged field 0, a nullable struct (int8 1 = present)
    classic = Writer().int8(1).int32(value.classic.session_timeout_ms)
    classic.compact_length(len(value.classic.protocols))
    for name, metadata in value.classic.protocols:
        classic.compact_string(name).compact_bytes(metadata).no_tags()
    body = classic.no_tags().done()
    return writer.uvarint(1).uvarint(0).uvarint(len(body)).done() + body


def decode_member(raw: bytes) -> MemberMetadata:
    reader = _read(raw)
    instance_id, rack_id = reader.compact_string(), reader.compact_string()
    client_id, client_host = reader.compact_string() or "", reader.compact_string() or ""
    names = tuple(reader.compact_string() or "" for _ in range(reader.compact_length()))
    regex = reader.compact_string()
    rebalance_timeout_ms = reader.int32()
    assignor = reader.compact_string()
    classic = None
    for _ in range(reader.uvarint()):
        tag, size = reader.uvarint(), reader.uvarint()
        if tag != 0:
            reader.bytes_exactly(size)
        elif reader.int8() == 1:
            session_timeout_ms = reader.int32()
            protocols = []
            for _ in range(reader.compact_length()):
                name, metadata = reader.compact_string() or "", reader.compact_bytes() or b""
                reader.skip_tags()
                protocols.append((name, metadata))
            reader.skip_tags()
            classic = ClassicMetadata(session_timeout_ms, tuple(protocols))
    return MemberMetadata(
        instance_id,
        rack_id,
        client_id,
        client_host,
        names,
        regex,
        rebalance_timeout_ms,
        assignor,
        classic,
    )


def _write_partitions(writer: Writer, partitions: TopicPartitions) -> None:
    writer.compact_length(len(partitions))
    for topic_id, parts in sorted(partitions.items()):
        writer.uuid(topic_id).compact_length(len(parts))
        for partition in sorted(parts):
            writer.int32(partition)
        writer.no_tags()


def _read_partitions(reader: Reader) -> TopicPartitions:
    partitions: TopicPartitions = {}
    for _ in range(reader.compact_length()):
        topic_id = reader.uuid()
        partitions[topic_id] = frozenset(reader.int32() for _ in range(reader.compact_length()))
        reader.skip_tags()
    return partitions


def encode_target(partitions: TopicPartitions) -> bytes:
    writer = _start()
    _write_partitions(writer, partitions)
    return _value(writer)


def decode_target(raw: bytes) -> TopicPartitions:
    return _read_partitions(_read(raw))


def encode_current(value: CurrentAssignment) -> bytes:
    writer = _start().int32(value.member_epoch).int32(value.previous_member_epoch)
    writer.int8(value.state)
    _write_partitions(writer, value.assigned)
    _write_partitions(writer, value.pending_revocation)
    return _value(writer)


def decode_current(raw: bytes) -> CurrentAssignment:
    reader = _read(raw)
    member_epoch, previous = reader.int32(), reader.int32()
    state = reader.int8()
    assigned = _read_partitions(reader)
    pending = _read_partitions(reader)
    return CurrentAssignment(member_epoch, previous, state, assigned, pending)
