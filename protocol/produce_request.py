"""Produce requests (v3-v13) read straight from bytes (v13 names topics by id).

Every batch a client writes arrives in one of these, so the body is read here
field by field instead of through the generic, class-driven decoder in
protocol/decoder.py, at a fraction of the cost. The checks are the same: every
length is compared with the bytes that are left, so a lying length is a
`DecodeError`, never an allocation, and the result equals the generic
decoder's (tests/unit/test_protocol.py compares the two on generated and
damaged requests).

Each partition's records stay a view into the request buffer, so Produce can
patch and append them without a copy.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, NamedTuple

from odradek.protocol.decoder import DecodeError, read_uvarint

FIRST_FLEXIBLE = 9
FIRST_BY_ID = 13
ZERO_ID = bytes(16)

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_new = tuple.__new__  # skips the named tuples' argument parsing


class PartitionData(NamedTuple):
    partition: int  # `index` in Kafka's schema, a name tuples already use
    records: memoryview | None


class TopicData(NamedTuple):
    name: str  # "" from v13, which names the topic by its id
    partition_data: tuple[PartitionData, ...]
    topic_id: uuid.UUID | None = None  # v13+


class ProduceRequest(NamedTuple):
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: tuple[TopicData, ...]


class _Cursor:
    """Reads one request body; `flexible` picks varint lengths and tagged fields."""

    __slots__ = ("buf", "pos", "end", "flexible")

    def __init__(self, buf: memoryview, pos: int, flexible: bool) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)
        self.flexible = flexible

    def fixed(self, fmt: struct.Struct) -> tuple[Any, ...]:
        pos = self.pos
        if pos + fmt.size > self.end:
            raise DecodeError("buffer ends inside a fixed-size field")
        self.pos = pos + fmt.size
        return fmt.unpack_from(self.buf, pos)

    def uvarint(self) -> int:
        buf, pos = self.buf, self.pos
        if pos < self.end and buf[pos] < 0x80:  # most are one byte
            self.pos = pos + 1
            return buf[pos]
        value, self.pos = read_uvarint(buf, pos)
        return value

    def length(self, wide: bool) -> int:
        """Length of a string, bytes or array; below zero means null."""
        if self.flexible:
            return self.uvarint() - 1
        return int(self.fixed(_INT32 if wide else _INT16)[0])

    def view(self, length: int) -> memoryview:
        pos = self.pos
        if pos + length > self.end:
            raise DecodeError(f"length {length} runs past the end of the request")
        self.pos = pos + length
        return self.buf[pos : pos + length]

    def string(self, nullable: bool) -> str | None:
        length = self.length(wide=False)
        if length < 0:
            if not nullable:
                raise DecodeError("null in a non-nullable string")
            return None
        try:
            return str(self.view(length), "utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError("string is not UTF-8") from exc

    def array_count(self) -> int:
        count = self.length(wide=True)
        if count < 0:
            raise DecodeError("null in a non-nullable array")
        if count > self.end - self.pos:  # every element takes at least one byte
            raise DecodeError(f"array of {count} elements in {self.end - self.pos} bytes")
        return count

    def skip_tagged_fields(self) -> None:
        """Produce requests define no tagged fields: every one is skipped."""
        if not self.flexible:
            return
        if self.pos < self.end and self.buf[self.pos] == 0:  # none, as usual
            self.pos += 1
            return
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.view(self.uvarint())


def _partition(cursor: _Cursor) -> PartitionData:
    (index,) = cursor.fixed(_INT32)
    length = cursor.length(wide=True)
    records = None if length < 0 else cursor.view(length)
    cursor.skip_tagged_fields()
    return _new(PartitionData, (index, records))


def _topic(cursor: _Cursor) -> TopicData:
    name = cursor.string(nullable=False)
    assert name is not None
    partitions = tuple([_partition(cursor) for _ in range(cursor.array_count())])
    cursor.skip_tagged_fields()
    return _new(TopicData, (name, partitions, None))


def _topic_by_id(cursor: _Cursor) -> TopicData:
    pos = cursor.pos
    if pos + 16 > cursor.end:
        raise DecodeError("a topic id runs past the end of the request")
    raw = bytes(cursor.buf[pos : pos + 16])
    topic_id = None if raw == ZERO_ID else uuid.UUID(bytes=raw)  # as kio reads it
    cursor.pos = pos + 16
    partitions = tuple([_partition(cursor) for _ in range(cursor.array_count())])
    cursor.skip_tagged_fields()
    return _new(TopicData, ("", partitions, topic_id))


def decode_produce_request(
    version: int, buf: bytes | bytearray | memoryview, offset: int
) -> ProduceRequest:
    """The Produce body starting at `offset`; bytes after it are ignored."""
    cursor = _Cursor(memoryview(buf), offset, version >= FIRST_FLEXIBLE)
    transactional_id = cursor.string(nullable=True)
    acks, timeout_ms = cursor.fixed(_ACKS_TIMEOUT)
    read_topic = _topic_by_id if version >= FIRST_BY_ID else _topic
    topics = tuple([read_topic(cursor) for _ in range(cursor.array_count())])
    cursor.skip_tagged_fields()
    return ProduceRequest(transactional_id, acks, timeout_ms, topics)
