"""A view over Kafka record batches (magic 2) that never decodes the records.

Layout of the 61-byte header, offsets in bytes:

    0  base_offset            int64
    8  batch_length           int32   (bytes after this field)
   12  partition_leader_epoch int32
   16  magic                  int8
   17  crc                    uint32  (CRC32C of bytes 21..end)
   21  attributes             int16
   23  last_offset_delta      int32
   27  base_timestamp         int64
   35  max_timestamp          int64
   43  producer_id            int64
   51  producer_epoch         int16
   53  base_sequence          int32
   57  records_count          int32
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

import crc32c

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base_offset + batch_length
CRC_START = 21

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08  # set: LogAppendTime
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

NO_PRODUCER_ID = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")


class InvalidBatch(ValueError):
    """A batch that cannot be stored: bad length, magic, CRC or record count."""


class TruncatedBatch(InvalidBatch):
    """The buffer ends before the batch its header announces."""


class BatchHeader(NamedTuple):
    """The header of one batch; a tuple because every appended batch makes one."""

    position: int  # where the batch starts in the buffer it was read from
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & ATTR_TIMESTAMP_TYPE)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)


def read_header(buf: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Parse the header at `position`; checks sizes and magic, not the CRC."""
    available = len(buf) - position
    if available < LOG_OVERHEAD:
        raise TruncatedBatch(f"{available} bytes left, a batch needs at least {HEADER_SIZE}")
    batch_length = _INT32.unpack_from(buf, position + 8)[0]
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatch(f"batch length {batch_length} is below the header size")
    if available < HEADER_SIZE:
        raise TruncatedBatch(f"{available} bytes left, a batch needs at least {HEADER_SIZE}")
    header = BatchHeader._make((position, *_HEADER.unpack_from(buf, position)))
    if header.magic != 2:
        raise InvalidBatch(f"magic {header.magic} is not supported, only 2")
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise InvalidBatch("negative record count or offset delta")
    if header.size > available:
        raise TruncatedBatch(f"batch of {header.size} bytes, only {available} left")
    return header


def crc_matches(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    start = header.position + CRC_START
    end = header.position + header.size
    return crc32c.crc32c(memoryview(buf)[start:end]) == header.crc


def iter_batches(
    buf: bytes | bytearray | memoryview, *, check_crc: bool = True
) -> Iterator[BatchHeader]:
    """Every batch in `buf`, in order; raises at the first bad or partial one."""
    position = 0
    end = len(buf)
    while position < end:
        header = read_header(buf, position)
        if check_crc and not crc_matches(buf, header):
            raise InvalidBatch(f"CRC mismatch in the batch at byte {position}")
        yield header
        position += header.size


def set_base_offset(buf: bytearray | memoryview, position: int, base_offset: int) -> None:
    _INT64.pack_into(buf, position, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, position: int, epoch: int) -> None:
    _INT32.pack_into(buf, position + 12, epoch)


def set_max_timestamp(buf: bytearray | memoryview, header: BatchHeader, timestamp: int) -> None:
    """Stamp LogAppendTime: the max timestamp changes, so the CRC is computed again."""
    position = header.position
    _INT64.pack_into(buf, position + 35, timestamp)
    attributes = header.attributes | ATTR_TIMESTAMP_TYPE
    struct.pack_into(">h", buf, position + CRC_START, attributes)
    crc = crc32c.crc32c(memoryview(buf)[position + CRC_START : position + header.size])
    _UINT32.pack_into(buf, position + 17, crc)


def build_batch(
    records: list[tuple[bytes | None, bytes | None]],
    *,
    base_offset: int = 0,
    timestamp: int = 0,
    attributes: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = 0,
) -> bytes:
    """An uncompressed batch of (key, value) records, without headers.

    Used for control batches and internal topics, and by tests.
    """
    body = bytearray()
    for delta, (key, value) in enumerate(records):
        # attributes 0, timestamp delta 0, offset delta, key, value, no headers
        record = bytearray(b"\x00\x00")
        record += _SMALL_VARINTS[delta] if delta < 64 else varint(delta)
        for part in (key, value):
            if part is None:
                record += b"\x01"  # varint(-1)
            else:
                length = len(part)
                record += _SMALL_VARINTS[length] if length < 64 else varint(length)
                record += part
        record += b"\x00"
        length = len(record)
        body += _SMALL_VARINTS[length] if length < 64 else varint(length)
        body += record
    count = len(records)
    header = bytearray(
        _HEADER.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(body),
            partition_leader_epoch,
            2,
            0,
            attributes,
            max(count - 1, 0),
            timestamp,
            timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    )
    batch = header + body
    _UINT32.pack_into(batch, 17, crc32c.crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


_SMALL_VARINTS = [bytes((n << 1,)) for n in range(64)]  # varint(n) for 0 <= n < 64


def uvarint(value: int) -> bytes:
    """An unsigned varint (compact lengths and tag counts of flexible messages)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """A signed (zigzag) varint, as in record fields."""
    return uvarint((value << 1) ^ (value >> 63))


def read_varint(buf: bytes | memoryview, position: int) -> tuple[int, int]:
    """Decode a zigzag varint; returns (value, next position)."""
    shift = 0
    result = 0
    while True:
        if position >= len(buf) or shift > 63:
            raise InvalidBatch("malformed varint")
        byte = buf[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), position


def iter_records(batch: bytes | memoryview) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset delta, key, value) for each record of an uncompressed batch.

    Only for internal topics and control batches, never on the Produce/Fetch path; but
    a coordinator's load reads millions of records through it, so the one-byte varints
    that make up most of a record's fields are read inline.
    """
    header = read_header(batch)
    if header.compression:
        raise InvalidBatch("compressed internal batches are not supported")
    data = batch if isinstance(batch, bytes) else bytes(batch)
    size = len(data)
    position = HEADER_SIZE
    for _ in range(header.records_count):
        if position >= size:
            raise InvalidBatch("malformed varint")
        byte = data[position]
        if byte < 0x80:
            length, position = (byte >> 1) ^ -(byte & 1), position + 1
        else:
            length, position = read_varint(data, position)
        end = position + length
        position += 1  # attributes
        if position < size and data[position] < 0x80:  # timestamp delta
            position += 1
        else:
            _, position = read_varint(data, position)
        byte = data[position] if position < size else 0x80
        if byte < 0x80:
            offset_delta, position = (byte >> 1) ^ -(byte & 1), position + 1
        else:
            offset_delta, position = read_varint(data, position)
        byte = data[position] if position < size else 0x80
        if byte < 0x80:
            key_size, position = (byte >> 1) ^ -(byte & 1), position + 1
        else:
            key_size, position = read_varint(data, position)
        key = None
        if key_size >= 0:
            key = data[position : position + key_size]
            position += key_size
        byte = data[position] if position < size else 0x80
        if byte < 0x80:
            value_size, position = (byte >> 1) ^ -(byte & 1), position + 1
        else:
            value_size, position = read_varint(data, position)
        value = None
        if value_size >= 0:
            value = data[position : position + value_size]
        if end > size or position + max(value_size, 0) > end:
            raise InvalidBatch("a record runs past its batch")
        yield offset_delta, key, value
        position = end


def control_batch(producer_id: int, epoch: int, commit: bool, now_ms: int) -> bytes:
    """A transaction marker: key = (version 0, type), value = (version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)
    return build_batch(
        [(key, value)],
        timestamp=now_ms,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        producer_id=producer_id,
        producer_epoch=epoch,
    )
