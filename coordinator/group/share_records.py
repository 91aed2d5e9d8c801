"""The values of `__consumer_offsets` records of share groups (KIP-932), in Kafka's own
schemas (their record types: share.py; keys and common pieces: record_codecs.py):

    10  ShareGroupMemberMetadata            a member's rack, client and subscription
    11  ShareGroupMetadata                  the group epoch and the topics' hash
    12  ShareGroupTargetAssignmentMetadata  the target assignment's epoch (EPOCH_VALUE)
    13  ShareGroupTargetAssignmentMember    a member's target partitions (TARGET_VALUE)
    14  ShareGroupCurrentMemberAssignment   a member's epoch and assigned partitions
    15  ShareGroupStatePartitionMetadata    the share-partitions whose state exists

A null value is a tombstone. Partitions are given per topic id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import NamedTuple

from odradek.coordinator.group import record_codecs as rc
from odradek.coordinator.registry import Codec
from odradek.protocol.codec import Reader, Writer


class GroupEpoch(NamedTuple):
    epoch: int
    metadata_hash: int = 0  # of the subscribed topics' metadata


@dataclass(frozen=True)
class MemberMetadata:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


# a member's current assignment: the partitions it reads (nothing to give up)
CurrentAssignment = rc.CurrentAssignment


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


def _encode_group_epoch(value: GroupEpoch) -> bytes:
    return rc.start_value().int32(value.epoch).int64(value.metadata_hash).no_tags().done()


def _decode_group_epoch(raw: bytes) -> GroupEpoch:
    reader = rc.read_value(raw)
    return GroupEpoch(reader.int32(), reader.int64())


def _encode_member(value: MemberMetadata) -> bytes:
    writer = rc.start_with_strings(value.rack_id, value.client_id, value.client_host)
    rc.write_strings(writer, value.subscribed_topic_names)
    return writer.no_tags().done()


def _decode_member(raw: bytes) -> MemberMetadata:
    reader = rc.read_value(raw)
    rack_id = reader.compact_string()
    client_id, client_host = reader.compact_string() or "", reader.compact_string() or ""
    names = rc.read_strings(reader)
    return MemberMetadata(rack_id, client_id, client_host, names)


def _encode_current(value: CurrentAssignment[rc.TopicPartitions]) -> bytes:
    writer = rc.start_current(value.member_epoch, value.previous_member_epoch, value.state)
    rc.write_partitions(writer, value.assigned)
    return writer.no_tags().done()


def _decode_current(raw: bytes) -> CurrentAssignment[rc.TopicPartitions]:
    reader, member_epoch, previous, state = rc.read_current(raw)
    return CurrentAssignment(member_epoch, previous, state, rc.read_partitions(reader))


def _write_named(writer: Writer, topics: tuple[TopicPartitionsNamed, ...]) -> None:
    writer.compact_length(len(topics))
    for topic in topics:
        writer.uuid(topic.topic_id).compact_string(topic.name)
        rc.write_int32s(writer, topic.partitions).no_tags()


def _read_named(reader: Reader) -> tuple[TopicPartitionsNamed, ...]:
    topics = []
    for _ in range(reader.compact_length()):
        topic_id, name = reader.uuid(), reader.compact_string() or ""
        parts = frozenset(reader.int32() for _ in range(reader.compact_length()))
        reader.skip_tags()
        topics.append(TopicPartitionsNamed(topic_id, name, parts))
    return tuple(topics)


def _encode_state_partitions(value: StatePartitions) -> bytes:
    writer = rc.start_value()
    _write_named(writer, value.initializing)
    _write_named(writer, value.initialized)
    writer.compact_length(len(value.deleting))
    for topic_id, name in value.deleting:
        writer.uuid(topic_id).compact_string(name).no_tags()
    return writer.no_tags().done()


def _decode_state_partitions(raw: bytes) -> StatePartitions:
    reader = rc.read_value(raw)
    initializing, initialized = _read_named(reader), _read_named(reader)
    deleting = []
    for _ in range(reader.compact_length()):
        topic_id, name = reader.uuid(), reader.compact_string() or ""
        reader.skip_tags()
        deleting.append((topic_id, name))
    return StatePartitions(initializing, initialized, tuple(deleting))


GROUP_EPOCH_VALUE = Codec(_encode_group_epoch, _decode_group_epoch)
MEMBER_VALUE = Codec(_encode_member, _decode_member)
CURRENT_VALUE = Codec(_encode_current, _decode_current)
STATE_PARTITIONS_VALUE = Codec(_encode_state_partitions, _decode_state_partitions)
