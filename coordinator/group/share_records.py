"""`__consumer_offsets` records of share groups (KIP-932), in Kafka's own schemas.
Keys are an int16 record type, the group id and, for members, the member id; values
are version 0, flexible:

    10  ShareGroupMemberMetadata            a member's rack, client and subscription
    11  ShareGroupMetadata                  the group epoch
    12  ShareGroupTargetAssignmentMetadata  the target assignment's epoch
    13  ShareGroupTargetAssignmentMember    a member's target partitions
    14  ShareGroupCurrentMemberAssignment   a member's epoch and assigned partitions
    15  ShareGroupStatePartitionMetadata    the share-partitions whose state exists

A null value is a tombstone. Partitions are given per topic id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from odradek.coordinator.group import record_keys
from odradek.coordinator.group.consumer_records import (
    TopicPartitions,
    _read_partitions,
    _write_partitions,
)
from odradek.coordinator.group.record_keys import GroupKey
from odradek.protocol.codec import Reader, Writer

MEMBER_METADATA, GROUP_EPOCH, TARGET_EPOCH, TARGET_MEMBER, CURRENT_ASSIGNMENT = 10, 11, 12, 13, 14
STATE_PARTITIONS = 15
KINDS = range(MEMBER_METADATA, STATE_PARTITIONS + 1)
_MEMBER_KINDS = (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT)


ShareKey = GroupKey


@dataclass(frozen=True)
class MemberMetadata:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: TopicPartitions = field(default_factory=dict)


@dataclass(frozen=True)
class TopicPartitionsNamed:
    topic_id: uuid.UUID
    name: str
    partitions: frozenset[int]


@dataclass(frozen=True)
class StatePartitions:
    """The share-partitions whose state the share coordinator has been asked to make
    (initializing) and has made (initialized), per topic; topics being deleted."""

    initializing: tuple[TopicPartitionsNamed, ...] = ()
    initialized: tuple[TopicPartitionsNamed, ...] = ()
    deleting: tuple[tuple[uuid.UUID, str], ...] = ()


def encode_key(key: ShareKey) -> bytes:
    return record_keys.encode_key(key, _MEMBER_KINDS)


def decode_key(raw: bytes) -> ShareKey | None:
    """None for keys of other kinds."""
    return record_keys.decode_key(raw, KINDS, _MEMBER_KINDS, "share group")


_start = record_keys.start_value


_read = record_keys.read_value


def encode_group_epoch(epoch: int, metadata_hash: int = 0) -> bytes:
    """ShareGroupMetadataValue: the epoch and the hash of the subscribed topics' metadata."""
    return _start().int32(epoch).int64(metadata_hash).no_tags().done()


def decode_group_epoch(raw: bytes) -> tuple[int, int]:
    """(epoch, metadata hash)."""
    reader = _read(raw)
    return reader.int32(), reader.int64()


def encode_assignment_epoch(epoch: int) -> bytes:
    return _start().int32(epoch).no_tags().done()


def decode_assignment_epoch(raw: bytes) -> int:
    return _read(raw).int32()


def encode_member(value: MemberMetadata) -> bytes:
    writer = (
        _start()
        .compact_string(value.rack_id)
        .compact_string(value.client_id)
        .compact_string(value.client_host)
        .compact_length(len(value.subscribed_topic_names))
    )
    for name in value.subscribed_topic_names:
        writer.compact_string(name)
    return writer.no_tags().done()


def decode_member(raw: bytes) -> MemberMetadata:
    reader = _read(raw)
    rack_id = reader.compact_string()
    client_id, client_host = reader.compact_string() or "", reader.compact_string() or ""
    names = tuple(reader.compact_string() or "" for _ in range(reader.compact_length()))
    return MemberMetadata(rack_id, client_id, client_host, names)


def encode_target(partitions: TopicPartitions) -> bytes:
    writer = _start()
    _write_partitions(writer, partitions)
    return writer.no_tags().done()


def decode_target(raw: bytes) -> TopicPartitions:
    return _read_partitions(_read(raw))


def encode_current(value: CurrentAssignment) -> bytes:
    writer = _start().int32(value.member_epoch).int32(value.previous_member_epoch)
    writer.int8(value.state)
    _write_partitions(writer, value.assigned)
    return writer.no_tags().done()


def decode_current(raw: bytes) -> CurrentAssignment:
    reader = _read(raw)
    member_epoch, previous = reader.int32(), reader.int32()
    state = reader.int8()
    return CurrentAssignment(member_epoch, previous, state, _read_partitions(reader))


def _write_named(writer: Writer, topics: tuple[TopicPartitionsNamed, ...]) -> None:
    writer.compact_length(len(topics))
    for topic in topics:
        writer.uuid(topic.topic_id).compact_string(topic.name)
        writer.compact_length(len(topic.partitions))
        for partition in sorted(topic.partitions):
            writer.int32(partition)
        writer.no_tags()


def _read_named(reader: Reader) -> tuple[TopicPartitionsNamed, ...]:
    topics = []
    for _ in range(reader.compact_length()):
        topic_id, name = reader.uuid(), reader.compact_string() or ""
        parts = frozenset(reader.int32() for _ in range(reader.compact_length()))
        reader.skip_tags()
        topics.append(TopicPartitionsNamed(topic_id, name, parts))
    return tuple(topics)


def encode_state_partitions(value: StatePartitions) -> bytes:
    writer = _start()
    _write_named(writer, value.initializing)
    _write_named(writer, value.initialized)
    writer.compact_length(len(value.deleting))
    for topic_id, name in value.deleting:
        writer.uuid(topic_id).compact_string(name).no_tags()
    return writer.no_tags().done()


def decode_state_partitions(raw: bytes) -> StatePartitions:
    reader = _read(raw)
    initializing, initialized = _read_named(reader), _read_named(reader)
    deleting = []
    for _ in range(reader.compact_length()):
        topic_id, name = reader.uuid(), reader.compact_string() or ""
        reader.skip_tags()
        deleting.append((topic_id, name))
    return StatePartitions(initializing, initialized, tuple(deleting))
