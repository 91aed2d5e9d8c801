"""What the `__consumer_offsets` records of every group type share: their keys (after
the int16 type id, the group id, then an offset's topic and partition or a member's
id) and pieces of their values. The values of consumer, share and streams groups are
version 0 and flexible (later versions only add fields): an int16 version, compact
strings and arrays, tagged fields.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from odradek.coordinator.registry import Codec
from odradek.protocol.codec import Reader, RecordFormatError, Writer

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

# topic id -> partitions
TopicPartitions = dict[uuid.UUID, frozenset[int]]
A = TypeVar("A")  # what a member holds, as the group type has it


# Named tuples, not frozen dataclasses: every offset commit makes and replays a key,
# and a frozen dataclass pays an attribute-set call per field.
class OffsetKey(NamedTuple):
    group: str
    topic: str
    partition: int


class GroupKey(NamedTuple):
    group: str


class MemberKey(NamedTuple):
    group: str
    member: str


def _string(text: str) -> bytes:
    raw = text.encode()
    return _I16.pack(len(raw)) + raw


def _string_at(raw: bytes, pos: int) -> tuple[str | None, int]:
    if pos + 2 > len(raw):
        raise RecordFormatError("record ends early")
    (length,) = _I16.unpack_from(raw, pos)
    pos += 2
    if length < 0:
        return None, pos
    if pos + length > len(raw):
        raise RecordFormatError("length runs past the record")
    return raw[pos : pos + length].decode(), pos + length


def _encode_offset_key(key: OffsetKey) -> bytes:
    return b"".join((_string(key.group), _string(key.topic), _I32.pack(key.partition)))


def _decode_offset_key(raw: bytes) -> OffsetKey:
    # the most common record by far, read in one pass: a shard's load is mostly these
    size = len(raw)
    if size < 10:
        raise RecordFormatError("record ends early")
    (group_length,) = _I16.unpack_from(raw, 2)
    group_end = 4 + group_length
    if group_length < 0 or group_end + 6 > size:
        raise RecordFormatError("null group or a length past the record in an offset key")
    (topic_length,) = _I16.unpack_from(raw, group_end)
    topic_end = group_end + 2 + topic_length
    if topic_length < 0 or topic_end + 4 > size:
        raise RecordFormatError("null topic or a length past the record in an offset key")
    return OffsetKey(
        raw[4:group_end].decode(),
        raw[group_end + 2 : topic_end].decode(),
        _I32.unpack_from(raw, topic_end)[0],
    )


def _encode_group_key(key: GroupKey) -> bytes:
    return _string(key.group)


def _decode_group_key(raw: bytes) -> GroupKey:
    group, _pos = _string_at(raw, 2)
    if group is None:
        raise RecordFormatError("null group in a group key")
    return GroupKey(group)


def _encode_member_key(key: MemberKey) -> bytes:
    return _string(key.group) + _string(key.member)


def _decode_member_key(raw: bytes) -> MemberKey:
    group, pos = _string_at(raw, 2)
    member, _pos = _string_at(raw, pos)
    if group is None or member is None:
        raise RecordFormatError("null group or member id in a member key")
    return MemberKey(group, member)


OFFSET_KEY = Codec(_encode_offset_key, _decode_offset_key)
GROUP_KEY = Codec(_encode_group_key, _decode_group_key)
MEMBER_KEY = Codec(_encode_member_key, _decode_member_key)


# -- values ------------------------------------------------------------------------


def start_value() -> Writer:
    return Writer().int16(0)


def read_value(raw: bytes) -> Reader:
    reader = Reader(raw)
    reader.int16()  # the value's version
    return reader


@dataclass(frozen=True)
class CurrentAssignment(Generic[A]):
    """A member's current assignment: its epoch, its previous epoch and its state, what
    it holds and (consumer and streams groups) what it still has to give up."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: A
    pending_revocation: A | None = None


def start_current(member_epoch: int, previous_member_epoch: int, state: int) -> Writer:
    """A member's current assignment: its epoch, its previous epoch and its state, then
    what it holds (as the group type has it)."""
    return start_value().int32(member_epoch).int32(previous_member_epoch).int8(state)


def read_current(raw: bytes) -> tuple[Reader, int, int, int]:
    """The reader past the start of a current assignment, and that start."""
    reader = read_value(raw)
    return reader, reader.int32(), reader.int32(), reader.int8()


def start_with_strings(*values: str | None) -> Writer:
    """A value whose first fields are these (nullable) compact strings, in this order."""
    writer = start_value()
    for value in values:
        writer.compact_string(value)
    return writer


def write_strings(writer: Writer, values: Sequence[str]) -> None:
    writer.compact_length(len(values))
    for value in values:
        writer.compact_string(value)


def read_strings(reader: Reader) -> tuple[str, ...]:
    return tuple(reader.compact_string() or "" for _ in range(reader.compact_length()))


def write_int32s(writer: Writer, values: Collection[int]) -> Writer:
    """A compact array of int32s, in order (partitions, task ids)."""
    writer.compact_length(len(values))
    for value in sorted(values):
        writer.int32(value)
    return writer


def write_partitions(writer: Writer, partitions: TopicPartitions) -> None:
    writer.compact_length(len(partitions))
    for topic_id, parts in sorted(partitions.items()):
        write_int32s(writer.uuid(topic_id), parts).no_tags()


def read_partitions(reader: Reader) -> TopicPartitions:
    partitions: TopicPartitions = {}
    for _ in range(reader.compact_length()):
        topic_id = reader.uuid()
        partitions[topic_id] = frozenset(reader.int32() for _ in range(reader.compact_length()))
        reader.skip_tags()
    return partitions


def _encode_epoch(epoch: int) -> bytes:
    return start_value().int32(epoch).no_tags().done()


def _decode_epoch(raw: bytes) -> int:
    return read_value(raw).int32()


def _encode_target(partitions: TopicPartitions) -> bytes:
    writer = start_value()
    write_partitions(writer, partitions)
    return writer.no_tags().done()


def _decode_target(raw: bytes) -> TopicPartitions:
    return read_partitions(read_value(raw))


# A group's epoch or its target assignment's (consumer and share groups)
EPOCH_VALUE = Codec(_encode_epoch, _decode_epoch)
# A member's target partitions (consumer and share groups)
TARGET_VALUE = Codec(_encode_target, _decode_target)
