"""Record timestamps inside one batch, for ListOffsets by timestamp, and the
decompression of a batch's records (also used by the log cleaner).

Never used on the Produce or Fetch path. Codecs other than gzip need their
Python modules; without them (or on malformed data) the answer is None and the
caller falls back to the batch's own offsets and max timestamp.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable

from odradek.protocol.batch import HEADER_SIZE, BatchHeader, InvalidBatch, read_varint

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16  # magic, int32 version, int32 compatible version
_INT32 = struct.Struct(">i")
# A corrupt or hostile batch must not make us inflate without bound.
MAX_DECOMPRESSED = 256 << 20


def record_timestamps(header: BatchHeader, batch: bytes) -> list[tuple[int, int]] | None:
    """(offset, timestamp) of every record in `batch`, or None if it cannot be decoded."""
    whole = header.records_count == header.last_offset_delta + 1  # not compacted
    if header.log_append_time and whole:
        return [(header.base_offset + i, header.max_timestamp) for i in range(header.records_count)]
    body = memoryview(batch)[HEADER_SIZE : header.size]
    try:
        payload = decompress(header.compression, body)
        if payload is None:
            return None
        found = _walk(header, payload)
    except Exception:  # malformed data; codec modules raise their own error types
        return None
    if header.log_append_time:
        return [(offset, header.max_timestamp) for offset, _stamp in found]
    return found


def _walk(header: BatchHeader, payload: bytes | memoryview) -> list[tuple[int, int]]:
    out = []
    position = 0
    for _ in range(header.records_count):
        length, position = read_varint(payload, position)
        end = position + length
        if length < 0 or end > len(payload):
            raise InvalidBatch("record runs past the batch")
        position += 1  # record attributes
        timestamp_delta, position = read_varint(payload, position)
        offset_delta, position = read_varint(payload, position)
        out.append((header.base_offset + offset_delta, header.base_timestamp + timestamp_delta))
        position = end
    return out


def decompress(codec: int, body: memoryview) -> bytes | memoryview | None:
    """The records section of a batch, or None if the codec's module is missing."""
    if codec == 0:
        return body
    decoder = _DECODERS.get(codec)
    return decoder(bytes(body)) if decoder is not None else None


def _gunzip(data: bytes) -> bytes:
    inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 32)  # gzip or zlib header
    out = inflater.decompress(data, MAX_DECOMPRESSED)
    if inflater.unconsumed_tail:
        raise ValueError("decompressed batch too large")
    return out


def _snappy(data: bytes) -> bytes | None:
    raw = _snappy_raw()
    if raw is None:
        return None
    if not data.startswith(_XERIAL_MAGIC):
        return raw(data)
    # Java clients frame snappy the xerial way: blocks of int32 length + raw snappy.
    out = bytearray()
    position = _XERIAL_HEADER
    while position < len(data):
        (length,) = _INT32.unpack_from(data, position)
        position += 4
        out += raw(data[position : position + length])
        position += length
        if len(out) > MAX_DECOMPRESSED:
            raise ValueError("decompressed batch too large")
    return bytes(out)


def _snappy_raw() -> Callable[[bytes], bytes] | None:
    try:
        import cramjam

        def raw(data: bytes) -> bytes:
            return bytes(cramjam.snappy.decompress_raw(data))

        return raw
    except ImportError:
        pass
    try:
        import snappy
    except ImportError:
        return None
    return snappy.decompress  # type: ignore[no-any-return]


def _lz4(data: bytes) -> bytes | None:
    try:
        import lz4.frame
    except ImportError:
        return None
    return lz4.frame.decompress(data)  # type: ignore[no-any-return]


def _zstd(data: bytes) -> bytes | None:
    try:
        import zstandard
    except ImportError:
        return None
    # Frames from streaming compressors carry no content size: read as a stream.
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    out = reader.read(MAX_DECOMPRESSED + 1)
    if len(out) > MAX_DECOMPRESSED:
        raise ValueError("decompressed batch too large")
    return out  # type: ignore[no-any-return]


_DECODERS: dict[int, Callable[[bytes], bytes | None]] = {
    GZIP: _gunzip,
    SNAPPY: _snappy,
    LZ4: _lz4,
    ZSTD: _zstd,
}
