"""The values of `__consumer_offsets` records of consumer-protocol groups (KIP-848), in
Kafka's own schemas (their record types: consumer.py; keys and common pieces:
record_codecs.py):

    3  ConsumerGroupMetadata                 group epoch (record_codecs.EPOCH_VALUE)
    4  ConsumerGroupPartitionMetadata        the subscribed topics: id, name, partitions
    5  ConsumerGroupMemberMetadata           a member's subscription and settings
    6  ConsumerGroupTargetAssignmentMetadata the target assignment's epoch (EPOCH_VALUE)
    7  ConsumerGroupTargetAssignmentMember   a member's target partitions (TARGET_VALUE)
    8  ConsumerGroupCurrentMemberAssignment  a member's epoch, state, owned and revoking

A null value is a tombstone. Partitions are given per topic id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from odradek.coordinator.group import record_codecs as rc
from odradek.coordinator.registry import Codec
from odradek.protocol.codec import Writer


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


# a member's current assignment: partitions it owns and (pending_revocation) must give up
CurrentAssignment = rc.CurrentAssignment


def _encode_partition_metadata(topics: list[TopicMetadata]) -> bytes:
    writer = rc.start_value().compact_length(len(topics))
    for topic in topics:
        writer.uuid(topic.topic_id).compact_string(topic.name).int32(topic.partitions)
        writer.compact_length(0).no_tags()  # no racks
    return writer.no_tags().done()


def _decode_partition_metadata(raw: bytes) -> list[TopicMetadata]:
    reader = rc.read_value(raw)
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


def _encode_member(value: MemberMetadata) -> bytes:
    writer = rc.start_with_strings(
        value.instance_id, value.rack_id, value.client_id, value.client_host
    )
    rc.write_strings(writer, value.subscribed_topic_names)
    writer.compact_string(value.subscribed_topic_regex)
    writer.int32(value.rebalance_timeout_ms).compact_string(value.server_assignor)
    if value.classic is None:
        return writer.no_tags().done()
    # ClassicMemberMetadata: tagged field 0, a nullable struct (int8 1 = present)
    classic = Writer().int8(1).int32(value.classic.session_timeout_ms)
    classic.compact_length(len(value.classic.protocols))
    for name, metadata in value.classic.protocols:
        classic.compact_string(name).compact_bytes(metadata).no_tags()
    body = classic.no_tags().done()
    return writer.uvarint(1).uvarint(0).uvarint(len(body)).done() + body


def _decode_member(raw: bytes) -> MemberMetadata:
    reader = rc.read_value(raw)
    instance_id, rack_id = reader.compact_string(), reader.compact_string()
    client_id, client_host = reader.compact_string() or "", reader.compact_string() or ""
    names = rc.read_strings(reader)
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


def _encode_current(value: CurrentAssignment[rc.TopicPartitions]) -> bytes:
    writer = rc.start_current(value.member_epoch, value.previous_member_epoch, value.state)
    rc.write_partitions(writer, value.assigned)
    rc.write_partitions(writer, value.pending_revocation or {})
    return writer.no_tags().done()


def _decode_current(raw: bytes) -> CurrentAssignment[rc.TopicPartitions]:
    reader, member_epoch, previous, state = rc.read_current(raw)
    assigned = rc.read_partitions(reader)
    pending = rc.read_partitions(reader)
    return CurrentAssignment(member_epoch, previous, state, assigned, pending)


TOPICS_VALUE = Codec(_encode_partition_metadata, _decode_partition_metadata)
MEMBER_VALUE = Codec(_encode_member, _decode_member)
CURRENT_VALUE = Codec(_encode_current, _decode_current)
