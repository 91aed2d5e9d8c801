"""A bounds-checked request decoder driven by kio's generated classes.

kio's native reader trusts array lengths and reserves memory for them before
reading, so a frame claiming 2^31 elements aborts the process. This decoder
walks the same class definitions (field order, `kafka_type`, tags, flexible
or not) but checks every length against the bytes that are left, so a lying
length is a `DecodeError`, never an allocation.

Every request runs through it, so each class's reader is compiled once into
straight-line Python (`entity_reader`): fields read into locals, runs of
fixed-size fields with one struct call, no per-field loop.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import struct
import typing
import uuid
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.protocol.kio_types import declared_default, entity_in, is_array, is_nullable


class DecodeError(ValueError):
    pass


Reader = Callable[[memoryview, int], tuple[Any, int]]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_F64 = struct.Struct(">d")


def _fixed(fmt: struct.Struct) -> Reader:
    size = fmt.size
    unpack = fmt.unpack_from

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise DecodeError("buffer ends inside a fixed-size field")
        return unpack(buf, pos)[0], pos + size

    return read


read_int8 = _fixed(_I8)
read_int16 = _fixed(_I16)
read_int32 = _fixed(_I32)
read_int64 = _fixed(_I64)
read_uint16 = _fixed(_U16)
read_float64 = _fixed(_F64)


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("buffer ends inside a varint")
        if shift > 28:
            raise DecodeError("varint longer than 5 bytes")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def read_bool(buf: memoryview, pos: int) -> tuple[bool, int]:
    value, pos = read_int8(buf, pos)
    return value != 0, pos


def _take(buf: memoryview, pos: int, length: int) -> tuple[bytes, int]:
    end = pos + length
    if end > len(buf):
        raise DecodeError(f"length {length} runs past the end of the request")
    return bytes(buf[pos:end]), end


def _length(buf: memoryview, pos: int, flexible: bool, wide: bool) -> tuple[int, int]:
    """Length of a string, bytes or array; -1 means null."""
    if flexible:
        raw, pos = read_uvarint(buf, pos)
        return raw - 1, pos
    if wide:
        return read_int32(buf, pos)
    return read_int16(buf, pos)


def _string_reader(flexible: bool, nullable: bool) -> Reader:
    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if flexible and pos < len(buf) and buf[pos] < 0x80:  # a one-byte length
            length = buf[pos] - 1
            pos += 1
        else:
            length, pos = _length(buf, pos, flexible, wide=False)
        if length < 0:
            if not nullable:
                raise DecodeError("null in a non-nullable string")
            return None, pos
        end = pos + length
        if end > len(buf):
            raise DecodeError(f"length {length} runs past the end of the request")
        try:
            return str(buf[pos:end], "utf-8"), end
        except UnicodeDecodeError as exc:
            raise DecodeError("string is not UTF-8") from exc

    return read


def _bytes_reader(flexible: bool, nullable: bool) -> Reader:
    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        length, pos = _length(buf, pos, flexible, wide=True)
        if length < 0:
            if not nullable:
                raise DecodeError("null in non-nullable bytes")
            return None, pos
        return _take(buf, pos, length)

    return read


def _records_reader(flexible: bool, nullable: bool) -> Reader:
    """Record batches stay a view into the request buffer: Produce appends them uncopied."""

    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        length, pos = _length(buf, pos, flexible, wide=True)
        if length < 0:
            if not nullable:
                raise DecodeError("null in non-nullable records")
            return None, pos
        end = pos + length
        if end > len(buf):
            raise DecodeError(f"length {length} runs past the end of the request")
        return buf[pos:end], end

    return read


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID | None, int]:
    raw, pos = _take(buf, pos, 16)
    value = uuid.UUID(bytes=raw)
    return (None if value.int == 0 else value), pos


def _mapped(reader: Reader, convert: Callable[[Any], Any]) -> Reader:
    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        value, pos = reader(buf, pos)
        return convert(value), pos

    return read


def _error_code(value: int) -> ErrorCode:
    try:
        return ErrorCode(value)
    except ValueError as exc:
        raise DecodeError(f"unknown error code {value}") from exc


def _datetime(value: int) -> datetime.datetime | None:
    if value < 0:
        return None
    return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)


def _scalar_reader(kafka_type: str, flexible: bool, nullable: bool) -> Reader:
    match kafka_type:
        case "bool":
            return read_bool
        case "int8":
            return read_int8
        case "int16":
            return read_int16
        case "int32":
            return read_int32
        case "int64":
            return read_int64
        case "uint16":
            return read_uint16
        case "float64":
            return read_float64
        case "string":
            return _string_reader(flexible, nullable)
        case "bytes":
            return _bytes_reader(flexible, nullable)
        case "records":
            return _records_reader(flexible, nullable)
        case "uuid":
            return read_uuid
        case "error_code":
            return _mapped(read_int16, _error_code)
        case "timedelta_i32":
            return _mapped(read_int32, lambda ms: datetime.timedelta(milliseconds=ms))
        case "timedelta_i64":
            return _mapped(read_int64, lambda ms: datetime.timedelta(milliseconds=ms))
        case "datetime_i64":
            return _mapped(read_int64, _datetime)
    raise LookupError(f"no reader for kafka type {kafka_type}")


def _array_reader(element: Reader, flexible: bool, nullable: bool) -> Reader:
    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        if flexible and pos < len(buf) and buf[pos] < 0x80:  # a one-byte length
            count = buf[pos] - 1
            pos += 1
        else:
            count, pos = _length(buf, pos, flexible, wide=True)
        if count < 0:
            if not nullable:
                raise DecodeError("null in a non-nullable array")
            return None, pos
        if count > len(buf) - pos:  # every element takes at least one byte
            raise DecodeError(f"array of {count} elements in {len(buf) - pos} bytes")
        items = []
        for _ in range(count):
            item, pos = element(buf, pos)
            items.append(item)
        return tuple(items), pos

    return read


def _field_reader(hint: Any, kafka_type: str | None, flexible: bool) -> Reader:
    nullable = is_nullable(hint)
    array = is_array(hint)
    entity = entity_in(hint)
    if entity is not None:
        element = entity_reader(entity)
        if array:
            return _array_reader(element, flexible, nullable)
        if nullable:
            return _nullable_struct(element)
        return element
    assert kafka_type is not None, hint
    scalar = _scalar_reader(kafka_type, flexible, nullable=False)
    if array:
        return _array_reader(scalar, flexible, nullable)
    return _scalar_reader(kafka_type, flexible, nullable)


def _nullable_struct(element: Reader) -> Reader:
    def read(buf: memoryview, pos: int) -> tuple[Any, int]:
        marker, pos = read_int8(buf, pos)
        if marker < 0:
            return None, pos
        return element(buf, pos)

    return read


@cache
def light_class(cls: type) -> type:
    """A named tuple with the fields of kio class `cls`: what requests decode to.

    Handlers only read fields, and building a tuple costs a fraction of a frozen
    dataclass's __init__ (one attribute set per field)."""
    names = [f.name for f in dataclasses.fields(cls)]
    return collections.namedtuple(cls.__name__, names)  # type: ignore[misc]


# Fixed-size fields that follow one another are read with one struct.
_FIXED_FORMATS = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H"}
_FIXED_FORMATS |= {"float64": "d", "timedelta_i32": "i", "timedelta_i64": "q"}
_FIXED_FORMATS |= {"error_code": "h", "bool": "b", "datetime_i64": "q"}
_CONVERT: dict[str, Callable[[Any], Any]] = {
    "bool": lambda value: value != 0,
    "error_code": _error_code,
    "timedelta_i32": lambda ms: datetime.timedelta(milliseconds=ms),
    "timedelta_i64": lambda ms: datetime.timedelta(milliseconds=ms),
    "datetime_i64": _datetime,
}


def _fixed_format(hint: Any, kafka_type: str | None) -> str | None:
    """The struct format of a plain fixed-size field, None for anything else."""
    if kafka_type not in _FIXED_FORMATS or is_nullable(hint) or is_array(hint):
        return None
    return _FIXED_FORMATS[kafka_type]


def _field_plan(cls: type, hints: dict[str, Any], flexible: bool) -> list[Any]:
    """The plain fields in order: ("one", index, reader) for a field read on its own,
    ("run", indexes, struct, converts) for fixed-size fields that follow one another,
    read with one struct."""
    plan: list[Any] = []
    run: list[tuple[int, str, Any]] = []

    def close_run() -> None:
        if run:
            fmt = struct.Struct(">" + "".join(code for _, code, _ in run))
            plan.append(("run", [i for i, _, _ in run], fmt, [c for _, _, c in run]))
            run.clear()

    for index, f in enumerate(dataclasses.fields(cls)):
        if f.metadata.get("tag") is not None:
            continue
        kafka_type = f.metadata.get("kafka_type")
        code = _fixed_format(hints[f.name], kafka_type)
        if code is not None:
            run.append((index, code, _CONVERT.get(kafka_type or "")))
            continue
        close_run()
        plan.append(("one", index, _field_reader(hints[f.name], kafka_type, flexible)))
    close_run()
    return plan


def _read_tagged(
    buf: memoryview, pos: int, tagged: dict[int, tuple[int, Reader]]
) -> tuple[dict[int, Any], int]:
    """The tagged-field section: {field index: value} for the tags the class knows;
    others are skipped."""
    found: dict[int, Any] = {}
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise DecodeError("tagged field runs past the end of the request")
        known = tagged.get(tag)
        if known is not None:
            index, reader = known
            found[index], _ = reader(buf[:end], pos)
        pos = end
    return found, pos


@cache
def entity_reader(cls: type) -> Reader:
    """A reader of `cls`, compiled once: straight-line code that reads the fields in
    order into locals and builds the named tuple (no per-field loop or list; this
    runs for every request)."""
    hints = typing.get_type_hints(cls)
    flexible = bool(cls.__flexible__)  # type: ignore[attr-defined]
    fields = dataclasses.fields(cls)
    tagged: dict[int, tuple[int, Reader]] = {}
    scope: dict[str, Any] = {
        "DecodeError": DecodeError,
        "make": tuple.__new__,
        "light": light_class(cls),
        "read_tagged": _read_tagged,
        "tagged": tagged,
    }
    body = ["end = len(buf)"]
    for index, f in enumerate(fields):
        tag = f.metadata.get("tag")
        if tag is not None:
            kafka_type = f.metadata.get("kafka_type")
            tagged[tag] = (index, _field_reader(hints[f.name], kafka_type, True))
            scope[f"default{index}"] = declared_default(f, None)
            body.append(f"v{index} = default{index}")
    for step_number, step in enumerate(_field_plan(cls, hints, flexible)):
        if step[0] == "one":
            _, index, reader = step
            scope[f"read{index}"] = reader
            body.append(f"v{index}, pos = read{index}(buf, pos)")
            continue
        _, indexes, fmt, converts = step
        scope[f"run{step_number}"] = fmt.unpack_from
        body += [
            f"if pos + {fmt.size} > end:",
            "    raise DecodeError('buffer ends inside a fixed-size field')",
            f"{''.join(f'v{i}, ' for i in indexes)}= run{step_number}(buf, pos)",
            f"pos += {fmt.size}",
        ]
        for index, convert in zip(indexes, converts, strict=True):
            if convert is not None:
                scope[f"convert{index}"] = convert
                body.append(f"v{index} = convert{index}(v{index})")
    if flexible:
        body += [
            "if pos < end and buf[pos] == 0:  # no tagged fields, the usual case",
            "    pos += 1",
            "else:",
            "    found, pos = read_tagged(buf, pos, tagged)",
        ]
        body += [f"    v{index} = found.get({index}, v{index})" for index, _ in tagged.values()]
    values = "".join(f"v{index}, " for index in range(len(fields)))
    body.append(f"return make(light, ({values})), pos")
    source = "def read(buf, pos):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(source, f"<reader of {cls.__module__}.{cls.__name__}>", "exec"), scope)
    return scope["read"]  # type: ignore[no-any-return]


def decode(cls: type, buf: bytes | bytearray | memoryview, offset: int) -> Any:
    value, _ = entity_reader(cls)(memoryview(buf), offset)
    return value
