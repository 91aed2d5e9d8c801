"""Big-endian primitives for the internal topics' key and value schemas."""

from __future__ import annotations

import struct
import uuid

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordFormatError(ValueError):
    pass


class Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def int16(self, value: int) -> Writer:
        self.out += _I16.pack(value)
        return self

    def int32(self, value: int) -> Writer:
        self.out += _I32.pack(value)
        return self

    def int64(self, value: int) -> Writer:
        self.out += _I64.pack(value)
        return self

    def string(self, value: str | None) -> Writer:
        if value is None:
            return self.int16(-1)
        raw = value.encode()
        self.int16(len(raw))
        self.out += raw
        return self

    def bytes_(self, value: bytes | None) -> Writer:
        if value is None:
            return self.int32(-1)
        self.int32(len(value))
        self.out += value
        return self

    def int8(self, value: int) -> Writer:
        self.out += _I8.pack(value)
        return self

    # Flexible (compact) forms, for value versions that use them.
    def uvarint(self, value: int) -> Writer:
        while value >= 0x80:
            self.out.append((value & 0x7F) | 0x80)
            value >>= 7
        self.out.append(value)
        return self

    def compact_string(self, value: str | None) -> Writer:
        if value is None:
            return self.uvarint(0)
        raw = value.encode()
        self.uvarint(len(raw) + 1)
        self.out += raw
        return self

    def compact_bytes(self, value: bytes | None) -> Writer:
        if value is None:
            return self.uvarint(0)
        self.uvarint(len(value) + 1)
        self.out += value
        return self

    def compact_length(self, count: int) -> Writer:
        """The length of a compact array that follows (never null here)."""
        return self.uvarint(count + 1)

    def uuid(self, value: uuid.UUID) -> Writer:
        self.out += value.bytes
        return self

    def no_tags(self) -> Writer:
        return self.uvarint(0)

    def done(self) -> bytes:
        return bytes(self.out)


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _unpack(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise RecordFormatError("record ends early")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return int(value)

    def int8(self) -> int:
        return self._unpack(_I8)

    def int16(self) -> int:
        return self._unpack(_I16)

    def int32(self) -> int:
        return self._unpack(_I32)

    def int64(self) -> int:
        return self._unpack(_I64)

    def _take(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise RecordFormatError("length runs past the record")
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw

    def bytes_exactly(self, length: int) -> bytes:
        return self._take(length)

    def string(self) -> str | None:
        length = self.int16()
        return None if length < 0 else self._take(length).decode()

    def bytes_(self) -> bytes | None:
        length = self.int32()
        return None if length < 0 else self._take(length)

    # Flexible (compact) forms, for value versions that use them.
    def uvarint(self) -> int:
        result = shift = 0
        while True:
            byte = self._take(1)[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 28:
                raise RecordFormatError("varint too long")

    def compact_string(self) -> str | None:
        length = self.uvarint() - 1
        return None if length < 0 else self._take(length).decode()

    def compact_bytes(self) -> bytes | None:
        length = self.uvarint() - 1
        return None if length < 0 else self._take(length)

    def compact_length(self) -> int:
        """The length of a compact array (a null array reads as empty)."""
        return max(self.uvarint() - 1, 0)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16))

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())
