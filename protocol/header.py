"""Frame sizes and request/response headers, sans-IO.

A request frame is a 4-byte big-endian size followed by the request header and
body. Header v1 is (api_key int16, api_version int16, correlation_id int32,
client_id nullable int16-string); v2 adds tagged fields. Which one a request
uses depends on whether its API version is flexible.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from odradek.protocol.decoder import DecodeError, read_uvarint

SIZE_PREFIX = struct.Struct(">i")
_FIXED = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_CORRELATION = struct.Struct(">i")


class FrameError(ValueError):
    """The peer sent something that is not a Kafka frame; close the connection."""


def frame_size(prefix: bytes, max_size: int, setting: str = "socket.request.max.bytes") -> int:
    """The size announced by a 4-byte prefix, checked before anything is allocated
    against ``max_size``, the value of ``setting``."""
    (size,) = SIZE_PREFIX.unpack(prefix)
    if size < _FIXED.size + _INT16.size:
        raise FrameError(f"frame size {size} is too small for a request header")
    if size > max_size:
        raise FrameError(f"frame size {size} exceeds {setting} {max_size}")
    return size


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the request body starts in the frame


def peek_fixed(frame: bytes | bytearray) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): readable from any frame of 8+ bytes."""
    if len(frame) < _FIXED.size:
        raise FrameError("frame shorter than a request header")
    api_key, api_version, correlation_id = _FIXED.unpack_from(frame, 0)
    return api_key, api_version, correlation_id


def parse_request_header(frame: bytes | bytearray, flexible: bool) -> RequestHeader:
    api_key, api_version, correlation_id = peek_fixed(frame)
    position = _FIXED.size
    if len(frame) < position + 2:
        raise FrameError("request header ends before the client id")
    (length,) = _INT16.unpack_from(frame, position)
    position += 2
    client_id: str | None = None
    if length >= 0:
        if position + length > len(frame):
            raise FrameError("client id runs past the end of the frame")
        try:
            client_id = frame[position : position + length].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FrameError("client id is not UTF-8") from exc
        position += length
    elif length != -1:
        raise FrameError(f"negative client id length {length}")
    if flexible:
        position = skip_tagged_fields(frame, position)
    return RequestHeader(api_key, api_version, correlation_id, client_id, position)


def skip_tagged_fields(buf: bytes | bytearray, position: int) -> int:
    view = memoryview(buf)
    try:
        count, position = read_uvarint(view, position)
        for _ in range(count):
            _tag, position = read_uvarint(view, position)
            size, position = read_uvarint(view, position)
            position += size
            if position > len(buf):
                raise FrameError("tagged field runs past the end of the frame")
    except DecodeError as exc:
        raise FrameError(f"bad tagged fields in the request header: {exc}") from exc
    return position


def response_header(correlation_id: int, flexible: bool) -> bytes:
    """Header v0 is the correlation id; v1 adds an empty tagged-field section."""
    header = _CORRELATION.pack(correlation_id)
    return header + b"\x00" if flexible else header


def frame(header: bytes, body: bytes) -> bytes:
    return SIZE_PREFIX.pack(len(header) + len(body)) + header + body
