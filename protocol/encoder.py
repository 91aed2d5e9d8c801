"""Responses encoded straight from the handlers' plain dicts.

Handlers describe a response as nested dicts (see protocol/messages.py). Turning
those into kio objects and handing them to kio's writer costs more than the rest
of a small request; this module compiles, once per response class, a writer
that walks the dict and packs each field into a bytearray, with the same bytes
kio would write (tests/unit/test_encoder.py compares the two on every response
class). A field missing from the dict gets the class default, or Kafka's zero
value, as `messages.build` gives it. Tagged fields, rare in responses, go
through kio's own writers.

Record data (and file regions, sent with sendfile) of 4 KiB or more is kept by
reference as a chunk of its own, never copied.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import typing
import uuid
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._serialize import entity_writer, get_field_writer

from odradek.protocol.batch import uvarint
from odradek.protocol.kio_types import declared_default, entity_in, is_array, is_nullable

LARGE = 4096

_I8 = struct.Struct(">b").pack
_I16 = struct.Struct(">h").pack
_I32 = struct.Struct(">i").pack
_I64 = struct.Struct(">q").pack
_U8 = struct.Struct(">B").pack
_U16 = struct.Struct(">H").pack
_U32 = struct.Struct(">I").pack
_U64 = struct.Struct(">Q").pack
_F64 = struct.Struct(">d").pack
_BOOL = struct.Struct(">?").pack
_ZERO_UUID = bytes(16)
_NULL_I16 = _I16(-1)
_NULL_I32 = _I32(-1)


class Out:
    """Small fields gathered in one bytearray; large pieces kept as chunks."""

    __slots__ = ("buf", "chunks")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.chunks: list[Any] = []

    def large(self, piece: Any) -> None:
        if self.buf:
            self.chunks.append(self.buf)
            self.buf = bytearray()
        self.chunks.append(piece)

    def finish(self) -> tuple[list[Any], int]:
        if self.buf:
            self.chunks.append(self.buf)
        return self.chunks, sum(len(chunk) for chunk in self.chunks)


Write = Callable[[Out, Any], None]


class EncodedArray:
    """The elements of an array field, already written (by `element_writer`): the
    array's writer adds the length prefix and the bytes. A handler with a large
    answer writes it a slice at a time this way, serving others in between."""

    __slots__ = ("count", "out")

    def __init__(self) -> None:
        self.count = 0
        self.out = Out()

    def __len__(self) -> int:
        return self.count

    def write_into(self, out: Out) -> None:
        for chunk in self.out.chunks:
            out.large(chunk)
        out.buf += self.out.buf


def _millis(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def _epoch_millis(value: Any) -> int:
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    return int(value)


def _fixed(pack: Callable[[Any], bytes]) -> Write:
    def write(out: Out, value: Any) -> None:
        out.buf += pack(value)

    return write


def _timedelta(pack: Callable[[Any], bytes]) -> Write:
    def write(out: Out, value: Any) -> None:
        out.buf += pack(_millis(value))

    return write


def _write_datetime(out: Out, value: Any) -> None:
    out.buf += _I64(_epoch_millis(value))


def _write_uuid(out: Out, value: Any) -> None:
    if value is None:
        out.buf += _ZERO_UUID
    elif isinstance(value, uuid.UUID):
        out.buf += value.bytes
    else:
        out.buf += uuid.UUID(value).bytes


def _data(value: Any, length: int, out: Out) -> None:
    if length >= LARGE or not isinstance(value, bytes | bytearray | memoryview):
        out.large(value)
    else:
        out.buf += value


def _compact_bytes(out: Out, value: Any) -> None:
    if value is None:
        out.buf.append(0)
        return
    if isinstance(value, str):
        value = value.encode()
    length = len(value)
    out.buf += uvarint(length + 1)
    _data(value, length, out)


def _compact_string(out: Out, value: Any) -> None:
    if value is None:
        out.buf.append(0)
        return
    raw = value.encode() if isinstance(value, str) else value
    length = len(raw) + 1
    if length < 0x80:
        out.buf.append(length)
    else:
        out.buf += uvarint(length)
    out.buf += raw


def _legacy_string(out: Out, value: Any) -> None:
    if value is None:
        out.buf += _NULL_I16
        return
    raw = value.encode()
    out.buf += _I16(len(raw))
    out.buf += raw


def _legacy_bytes(out: Out, value: Any) -> None:
    if value is None:
        out.buf += _NULL_I32
        return
    length = len(value)
    out.buf += _I32(length)
    _data(value, length, out)


def _scalar(kafka_type: str, flexible: bool) -> Write:
    match kafka_type:
        case "int8":
            return _fixed(_I8)
        case "int16" | "error_code":
            return _fixed(_I16)
        case "int32":
            return _fixed(_I32)
        case "int64":
            return _fixed(_I64)
        case "uint8":
            return _fixed(_U8)
        case "uint16":
            return _fixed(_U16)
        case "uint32":
            return _fixed(_U32)
        case "uint64":
            return _fixed(_U64)
        case "float64":
            return _fixed(_F64)
        case "bool":
            return _fixed(_BOOL)
        case "uuid":
            return _write_uuid
        case "timedelta_i32":
            return _timedelta(_I32)
        case "timedelta_i64":
            return _timedelta(_I64)
        case "datetime_i64":
            return _write_datetime
        case "string":
            return _compact_string if flexible else _legacy_string
        case "bytes" | "records":
            return _compact_bytes if flexible else _legacy_bytes
    raise LookupError(f"no writer for kafka type {kafka_type}")


def _array_length(out: Out, values: Any, flexible: bool) -> bool:
    """An array's length prefix (null when `values` is None); False: nothing follows."""
    if values is None:
        out.buf += b"\x00" if flexible else _NULL_I32
        return False
    count = len(values)
    if not flexible:
        out.buf += _I32(count)
    elif count < 0x7F:
        out.buf.append(count + 1)
    else:
        out.buf += uvarint(count + 1)
    return True


def _array(element: Write, flexible: bool) -> Write:
    def write(out: Out, values: Any) -> None:
        if not _array_length(out, values, flexible):
            return
        if isinstance(values, EncodedArray):
            values.write_into(out)
            return
        for value in values:
            element(out, value)

    return write


def _nullable(element: Write) -> Write:
    def write(out: Out, value: Any) -> None:
        if value is None:
            out.buf += b"\xff"
            return
        out.buf.append(1)
        element(out, value)

    return write


def _field_writer(hint: Any, kafka_type: str | None, flexible: bool) -> Write:
    entity = entity_in(hint)
    nullable = is_nullable(hint)
    if entity is not None:
        element = dict_writer(entity)
        if is_array(hint):
            return _array(element, flexible)
        return _nullable(element) if nullable else element
    assert kafka_type is not None, hint
    if is_array(hint) and kafka_type in _PACKED_ARRAYS:
        return _packed_array(_PACKED_ARRAYS[kafka_type], flexible)
    scalar = _scalar(kafka_type, flexible)
    return _array(scalar, flexible) if is_array(hint) else scalar


_PACKED_ARRAYS = {"int8": "b", "int16": "h", "int32": "i", "int64": "q"}


_SHORT_ARRAY = 32  # arrays of integers up to this long have their packer made ahead


@cache
def _short_packers(code: str) -> tuple[Callable[..., bytes], ...]:
    """The packers of arrays of 0 to _SHORT_ARRAY integers of `code`, made once for
    every field of every class."""
    return tuple(struct.Struct(f">{count}{code}").pack for count in range(_SHORT_ARRAY + 1))


def _packed_array(code: str, flexible: bool) -> Write:
    """An array of plain integers (partition ids, replica ids), packed in one call (a
    full Metadata answer writes three per partition: their packers are made once)."""
    packers = _short_packers(code)

    def write(out: Out, values: Any) -> None:
        if _array_length(out, values, flexible) and values:
            count = len(values)
            if count <= _SHORT_ARRAY:
                out.buf += packers[count](*values)
            else:
                out.buf += struct.pack(f">{count}{code}", *values)

    return write


def _zero(f: dataclasses.Field[Any], hint: Any, kafka_type: str | None) -> Any:
    zero: Any
    if is_nullable(hint):
        zero = None
    elif is_array(hint):
        zero = ()
    elif entity_in(hint) is not None:
        zero = {}
    else:
        zero = {"string": "", "bytes": b"", "records": b"", "uuid": None, "float64": 0.0}.get(
            kafka_type or "", 0
        )
    return declared_default(f, zero)


# Fixed-size fields that follow one another are packed with one struct: the format
# code and what turns the dict's value into the number packed.
_RUN_CODES: dict[str, tuple[str, str]] = {
    "int8": ("b", ""), "int16": ("h", ""), "error_code": ("h", ""), "int32": ("i", ""),
    "int64": ("q", ""), "uint8": ("B", ""), "uint16": ("H", ""), "uint32": ("I", ""),
    "uint64": ("Q", ""), "float64": ("d", ""), "bool": ("?", ""),
    "timedelta_i32": ("i", "millis"), "timedelta_i64": ("q", "millis"),
    "datetime_i64": ("q", "epoch_millis"),
}  # fmt: skip


def _run_code(hint: Any, kafka_type: str | None) -> tuple[str, str] | None:
    if kafka_type not in _RUN_CODES or is_array(hint) or is_nullable(hint):
        return None
    return _RUN_CODES[kafka_type]


@cache
def dict_writer(cls: type) -> Write:
    """A writer of `cls`'s wire form from a dict (or from an instance of `cls`),
    compiled once: straight-line code that packs runs of fixed-size fields with one
    struct each and calls a writer for every other field."""
    hints = typing.get_type_hints(cls)
    flexible = bool(cls.__flexible__)  # type: ignore[attr-defined]
    tagged: list[tuple[int, dataclasses.Field[Any]]] = []
    kio_writer: Callable[[Any, Any], None] = entity_writer(cls)
    scope: dict[str, Any] = {
        "Mapping": Mapping,
        "kio_object": lambda out, data: _write_kio(out, kio_writer, data),
        "millis": _millis,
        "epoch_millis": _epoch_millis,
        "write_tagged": _write_tagged,
        "cls": cls,
        "tagged": tagged,
    }
    body = [
        "if type(data) is not dict and not isinstance(data, Mapping):  # a kio object",
        "    return kio_object(out, data)",
        "get = data.get",
    ]
    run: list[tuple[str, str]] = []  # (format code, value expression)

    def close_run() -> None:
        if run:
            name = f"pack{len(body)}"
            scope[name] = struct.Struct(">" + "".join(code for code, _ in run)).pack
            body.append(f"out.buf += {name}({', '.join(value for _, value in run)})")
            run.clear()

    for index, f in enumerate(dataclasses.fields(cls)):
        tag = f.metadata.get("tag")
        if tag is not None:
            tagged.append((tag, f))
            continue
        kafka_type = f.metadata.get("kafka_type")
        scope[f"zero{index}"] = _zero(f, hints[f.name], kafka_type)
        value = f"get({f.name!r}, zero{index})"
        code = _run_code(hints[f.name], kafka_type)
        if code is not None:
            run.append((code[0], f"{code[1]}({value})" if code[1] else value))
            continue
        close_run()
        scope[f"write{index}"] = _field_writer(hints[f.name], kafka_type, flexible)
        body.append(f"write{index}(out, {value})")
    close_run()
    tagged.sort(key=lambda item: item[0])
    if flexible and not tagged:
        body.append("out.buf.append(0)")
    elif flexible:
        body += [
            "present = [(tag, f) for tag, f in tagged if get(f.name) is not None]",
            "if present:",
            "    write_tagged(out, cls, data, present)",
            "else:",
            "    out.buf.append(0)",
        ]
    source = "def write(out, data):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(source, f"<writer of {cls.__module__}.{cls.__name__}>", "exec"), scope)
    return scope["write"]  # type: ignore[no-any-return]


def _write_kio(out: Out, kio_writer: Callable[[Any, Any], None], data: Any) -> None:
    raw = io.BytesIO()
    kio_writer(raw, data)
    out.buf += raw.getvalue()


def _write_tagged(
    out: Out, cls: type, data: Mapping[str, Any], present: list[tuple[int, Any]]
) -> None:
    """Tagged fields whose values differ from their defaults, through kio's writers."""
    from odradek.protocol.messages import convert_field

    written = []
    for tag, f in present:
        value = convert_field(cls, f.name, data[f.name])
        default = f.default if f.default is not dataclasses.MISSING else None
        if value == default or (
            f.default is dataclasses.MISSING and value == get_tagged_field_default(f)
        ):
            continue
        raw = io.BytesIO()
        get_field_writer(f, flexible=True, is_request_header=False, is_tag=True)(raw, value)
        encoded = raw.getvalue()
        written.append(uvarint(tag) + uvarint(len(encoded)) + encoded)
    out.buf += uvarint(len(written))
    for piece in written:
        out.buf += piece


@cache
def element_writer(cls: type, field_name: str) -> Callable[[EncodedArray, Any], None]:
    """What appends one element (a dict) to an `EncodedArray` of `cls`'s array field
    `field_name`."""
    hint = typing.get_type_hints(cls)[field_name]
    entity = entity_in(hint)
    assert entity is not None and is_array(hint), field_name
    write = dict_writer(entity)

    def append(array: EncodedArray, value: Any) -> None:
        write(array.out, value)
        array.count += 1

    return append


def encode_dict(cls: type, data: Mapping[str, Any]) -> tuple[list[Any], int]:
    """The chunks of `cls`'s wire form for `data`, and their total size."""
    out = Out()
    dict_writer(cls)(out, data)
    return out.finish()
