"""`__share_group_state` records, in Kafka's own schemas.

Keys: int16 record type, then the group id, topic id and partition:

    0  ShareSnapshot  the whole state of one share-partition
    1  ShareUpdate    a change to it, applied on top of the last snapshot

Values are version 0 and flexible (compact strings and arrays, tagged fields). A state
batch is (first offset, last offset, delivery state, delivery count). A null value
is a tombstone: the share-partition's state is deleted.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass

from odradek.coordinator.share.partition import StateBatch
from odradek.protocol.codec import Reader, RecordFormatError, Writer

SNAPSHOT, UPDATE = 0, 1


@dataclass(frozen=True)
class ShareKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int

    def text(self) -> str:
        """How Kafka names it to find its coordinator (and hashes it onto a
        `__share_group_state` partition): the topic id as Kafka prints ids, URL-safe
        base64 without padding."""
        topic = base64.urlsafe_b64encode(self.topic_id.bytes).rstrip(b"=").decode()
        return f"{self.group_id}:{topic}:{self.partition}"


@dataclass(frozen=True)
class Snapshot:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    batches: tuple[StateBatch, ...]


@dataclass(frozen=True)
class Update:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]


def encode_key(kind: int, key: ShareKey) -> bytes:
    return Writer().int16(kind).string(key.group_id).uuid(key.topic_id).int32(key.partition).done()


def decode_key(raw: bytes) -> tuple[int, ShareKey]:
    reader = Reader(raw)
    kind = reader.int16()
    if kind not in (SNAPSHOT, UPDATE):
        raise RecordFormatError(f"unknown share state record type {kind}")
    group_id = reader.string()
    if group_id is None:
        raise RecordFormatError("null group id in a share state key")
    return kind, ShareKey(group_id, reader.uuid(), reader.int32())


def _write_batches(writer: Writer, batches: tuple[StateBatch, ...]) -> None:
    writer.compact_length(len(batches))
    for b in batches:
        writer.int64(b.first_offset).int64(b.last_offset)
        writer.int8(b.state).int16(b.delivery_count).no_tags()


def _read_batches(reader: Reader) -> tuple[StateBatch, ...]:
    batches = []
    for _ in range(reader.compact_length()):
        first, last = reader.int64(), reader.int64()
        state, count = reader.int8(), reader.int16()
        reader.skip_tags()
        batches.append(StateBatch(first, last, state, count))
    return tuple(batches)


def encode_snapshot(value: Snapshot) -> bytes:
    writer = Writer().int16(0).int32(value.snapshot_epoch).int32(value.state_epoch)
    writer.int32(value.leader_epoch).int64(value.start_offset)
    writer.int64(value.create_timestamp).int64(value.write_timestamp)
    _write_batches(writer, value.batches)
    return writer.no_tags().done()


def decode_snapshot(raw: bytes) -> Snapshot:
    reader = Reader(raw)
    reader.int16()
    snapshot_epoch, state_epoch, leader_epoch = reader.int32(), reader.int32(), reader.int32()
    start = reader.int64()
    created, written = reader.int64(), reader.int64()
    return Snapshot(
        snapshot_epoch, state_epoch, leader_epoch, start, created, written, _read_batches(reader)
    )


def encode_update(value: Update) -> bytes:
    writer = Writer().int16(0).int32(value.snapshot_epoch).int32(value.leader_epoch)
    writer.int64(value.start_offset)
    _write_batches(writer, value.batches)
    return writer.no_tags().done()


def decode_update(raw: bytes) -> Update:
    reader = Reader(raw)
    reader.int16()
    snapshot_epoch, leader_epoch, start = reader.int32(), reader.int32(), reader.int64()
    return Update(snapshot_epoch, leader_epoch, start, _read_batches(reader))
