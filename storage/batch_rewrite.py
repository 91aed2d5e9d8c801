"""Records of one batch, decoded and written back: what the log cleaner needs.

A rebuilt batch keeps its base offset, last offset delta, producer id, epoch,
base sequence and leader epoch, and every kept record its offset delta, so no
offset moves and the producer state rebuilt from the headers stays the same
(magic 2 compaction, as in Kafka). Compressed batches are written back with
their codec when its module can compress, else uncompressed.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import crc32c

from odradek.protocol.batch import (
    ATTR_COMPRESSION_MASK,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatch,
    read_varint,
    varint,
)
from odradek.storage.records import GZIP, LZ4, SNAPPY, ZSTD, decompress

# KIP-534: the cleaner stamped the batch; its base timestamp is the delete horizon,
# the time after which its tombstones (or the control record) may be removed.
ATTR_DELETE_HORIZON = 0x40

_HEADER = struct.Struct(">qiibIhiqqqhii")
_UINT32 = struct.Struct(">I")
_INT32 = struct.Struct(">i")
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024


@dataclass(frozen=True, slots=True)
class Record:
    attributes: int
    timestamp_delta: int
    offset_delta: int
    key: bytes | None
    value: bytes | None
    headers: bytes  # the header count and headers, as encoded


def delete_horizon(header: BatchHeader) -> int | None:
    return header.base_timestamp if header.attributes & ATTR_DELETE_HORIZON else None


def decode_records(header: BatchHeader, batch: bytes) -> list[Record] | None:
    """The records of `batch` (header at position 0), or None if they cannot be
    decoded: codec module missing, or malformed data."""
    try:
        payload = decompress(header.compression, memoryview(batch)[HEADER_SIZE : header.size])
        if payload is None:
            return None
        return _parse(payload, header.records_count)
    except Exception:  # malformed data; codec modules raise their own error types
        return None


def _parse(payload: bytes | memoryview, count: int) -> list[Record]:
    view = memoryview(payload)
    records = []
    position = 0
    for _ in range(count):
        length, position = read_varint(view, position)
        end = position + length
        if length < 1 or end > len(view):
            raise InvalidBatch("record runs past the batch")
        attributes = view[position]
        timestamp_delta, position = read_varint(view, position + 1)
        offset_delta, position = read_varint(view, position)
        key, position = _read_bytes(view, position, end)
        value, position = _read_bytes(view, position, end)
        records.append(
            Record(attributes, timestamp_delta, offset_delta, key, value, bytes(view[position:end]))
        )
        position = end
    if position != len(view):
        raise InvalidBatch("bytes left after the last record")
    return records


def _read_bytes(view: memoryview, position: int, end: int) -> tuple[bytes | None, int]:
    size, position = read_varint(view, position)
    if size < 0:
        return None, position
    if position + size > end:
        raise InvalidBatch("key or value runs past its record")
    return bytes(view[position : position + size]), position + size


def encode_records(records: Sequence[Record], timestamp_shift: int = 0) -> bytes:
    """The records section; `timestamp_shift` is subtracted from every timestamp delta."""
    out = bytearray()
    for record in records:
        body = bytearray((record.attributes,))
        body += varint(record.timestamp_delta - timestamp_shift)
        body += varint(record.offset_delta)
        for part in (record.key, record.value):
            if part is None:
                body += varint(-1)
            else:
                body += varint(len(part))
                body += part
        body += record.headers
        out += varint(len(body))
        out += body
    return bytes(out)


def rebuild_batch(
    header: BatchHeader,
    records: Sequence[Record],
    *,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """`header`'s batch with only `records` (which keep their offsets).

    With `delete_horizon_ms` the batch is stamped with that horizon (base timestamp
    and attribute 0x40), and the records' timestamp deltas are moved to match.
    """
    attributes = header.attributes
    base_timestamp = header.base_timestamp
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
        base_timestamp = delete_horizon_ms
    shift = base_timestamp - header.base_timestamp
    if header.log_append_time or not records:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = header.base_timestamp + max(r.timestamp_delta for r in records)
    if not records:  # an empty batch: only the header, as Kafka writes it
        attributes &= ~(ATTR_COMPRESSION_MASK | ATTR_DELETE_HORIZON)
        base_timestamp = max_timestamp
    payload = encode_records(records, shift)
    codec = attributes & ATTR_COMPRESSION_MASK
    if codec:
        compressed = compress(codec, payload)
        if compressed is None:
            attributes &= ~ATTR_COMPRESSION_MASK
        else:
            payload = compressed
    batch = bytearray(
        _HEADER.pack(
            header.base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(payload),
            header.partition_leader_epoch,
            2,
            0,
            attributes,
            header.last_offset_delta,
            base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            len(records),
        )
    )
    batch += payload
    _UINT32.pack_into(batch, 17, crc32c.crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


# -- compression -------------------------------------------------------------------------


def compress(codec: int, data: bytes) -> bytes | None:
    """`data` compressed as Kafka clients expect it, or None if the codec's module is missing."""
    encoder = _ENCODERS.get(codec)
    if encoder is None:
        return None
    try:
        return encoder(data)
    except ImportError:
        return None


def _gzip(data: bytes) -> bytes:
    deflater = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)  # gzip header
    return deflater.compress(data) + deflater.flush()


def _snappy(data: bytes) -> bytes:
    raw = _snappy_raw()
    # The xerial framing of the Java clients, which every client reads.
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = raw(data[start : start + _XERIAL_BLOCK])
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _snappy_raw() -> Callable[[bytes], bytes]:
    try:
        import cramjam

        def raw(data: bytes) -> bytes:
            return bytes(cramjam.snappy.compress_raw(data))

        return raw
    except ImportError:
        import snappy

        return snappy.compress  # type: ignore[no-any-return]


def _lz4(data: bytes) -> bytes:
    import lz4.frame

    # Independent blocks and no content size: what the Java client's reader accepts.
    return lz4.frame.compress(data, block_linked=False, store_size=False)  # type: ignore[no-any-return]


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor().compress(data)  # type: ignore[no-any-return]


_ENCODERS: dict[int, Callable[[bytes], bytes]] = {
    GZIP: _gzip,
    SNAPPY: _snappy,
    LZ4: _lz4,
    ZSTD: _zstd,
}
