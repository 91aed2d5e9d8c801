"""Request decoding and response encoding on top of kio's generated message types.

kio has one class per API version (protocol/schemas/ adds those of versions it
lacks). Handlers are written once for all versions: they read requests with
`getattr(request, name, default)` for fields that only some versions carry, and
describe responses as plain nested dicts that `build(cls, data)` turns into the class
of the negotiated version, dropping fields that version does not have and filling the
ones it has but the dict does not with Kafka's zero values.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from odradek.protocol import decoder, encoder
from odradek.protocol.kio_types import entity_in, is_array, is_nullable
from odradek.protocol.produce_request import decode_produce_request
from odradek.protocol.schemas import payload_module

PRODUCE_KEY = 0

ZERO_UUID = uuid.UUID(int=0)

Converter = Callable[[Any], Any]


@cache
def request_class(api_key: int, version: int) -> type:
    return _payload_class(_module(api_key, version, EntityType.request), "Request")


@cache
def response_class(api_key: int, version: int) -> type:
    return _payload_class(_module(api_key, version, EntityType.response), "Response")


def _module(
    api_key: int, version: int, entity_type: Literal[EntityType.request, EntityType.response]
) -> types.ModuleType:
    """Our own classes (protocol/schemas/) where kio lacks the version, else kio's."""
    module = payload_module(api_key, version, entity_type)
    return module or load_payload_module(api_key, version, entity_type)


def _payload_class(module: types.ModuleType, suffix: str) -> type:
    for name in dir(module):
        value = getattr(module, name)
        if (
            isinstance(value, type)
            and name.endswith(suffix)
            and getattr(value, "__type__", None) in (EntityType.request, EntityType.response)
            and value.__module__ == module.__name__
        ):
            return value
    raise LookupError(f"no {suffix} class in {module.__name__}")


def is_flexible(api_key: int, version: int) -> bool:
    return bool(request_class(api_key, version).__flexible__)  # type: ignore[attr-defined]


@cache
def _reader(cls: type) -> Callable[[Any, int], tuple[Any, int]]:
    return entity_reader(cls)  # type: ignore[no-any-return]


@cache
def _writer(cls: type) -> Callable[[Any, Any], None]:
    return entity_writer(cls)  # type: ignore[no-any-return]


class MalformedRequest(ValueError):
    """The body does not decode as the request it claims to be."""


def decode_request(
    api_key: int, version: int, buf: bytes | bytearray | memoryview, offset: int
) -> Any:
    """Decode the request body that starts at `offset`."""
    try:
        if api_key == PRODUCE_KEY:  # every write: read by hand, the same result
            return decode_produce_request(version, buf, offset)
        return decoder.decode(request_class(api_key, version), buf, offset)
    except decoder.DecodeError as exc:
        raise MalformedRequest(str(exc)) from exc


def encode(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_type: type = type(entity)
    _writer(entity_type)(out, entity)
    return out.getvalue()


class FileRegion(typing.Protocol):
    """Bytes still in a file (record batches in a segment): sent with sendfile."""

    position: int

    def __len__(self) -> int: ...

    def fileno(self) -> int: ...

    def read(self, skip: int = 0) -> bytes: ...


Chunk = bytes | bytearray | memoryview | FileRegion


def build(cls: type, data: Mapping[str, Any]) -> Any:
    """Make an instance of the kio class `cls` from a plain nested dict."""
    kwargs = {}
    for name, converter, zero in _field_plan(cls):
        if name in data:
            kwargs[name] = converter(data[name])
        elif zero is not _HAS_DEFAULT:
            kwargs[name] = zero() if callable(zero) else zero
    return cls(**kwargs)


def build_response(api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    return build(response_class(api_key, version), data)


def encode_response(api_key: int, version: int, data: Mapping[str, Any]) -> tuple[list[Any], int]:
    """The wire form of a response described by `data`: (chunks, total size)."""
    return encoder.encode_dict(response_class(api_key, version), data)


def convert_field(cls: type, name: str, value: Any) -> Any:
    """`value` as `build` would store it in field `name` of `cls`."""
    for field_name, converter, _zero in _field_plan(cls):
        if field_name == name:
            return converter(value)
    raise KeyError(name)


_HAS_DEFAULT = object()


@cache
def _field_plan(cls: type) -> tuple[tuple[str, Converter, Any], ...]:
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        kafka_type = f.metadata.get("kafka_type")
        hint = hints[f.name]
        converter = _converter(hint, kafka_type)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            zero: Any = _HAS_DEFAULT
        else:
            zero = _zero(hint, kafka_type)
        plan.append((f.name, converter, zero))
    return tuple(plan)


def _identity(value: Any) -> Any:
    return value


def _millis_delta(value: Any) -> Any:
    if isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(milliseconds=value)


def _millis_datetime(value: Any) -> Any:
    if value is None or isinstance(value, datetime.datetime):
        return value
    if value < 0:
        return None
    return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)


def _as_uuid(value: Any) -> Any:
    if value is None or isinstance(value, uuid.UUID):
        return value
    return uuid.UUID(value)


_SCALAR_CONVERTERS: dict[str, Converter] = {
    "timedelta_i32": _millis_delta,
    "timedelta_i64": _millis_delta,
    "datetime_i64": _millis_datetime,
    "error_code": ErrorCode,
    "uuid": _as_uuid,
}


def _converter(hint: Any, kafka_type: str | None) -> Converter:
    entity = entity_in(hint)
    if entity is not None:

        def one(value: Any) -> Any:
            if value is None or dataclasses.is_dataclass(value):
                return value
            return build(entity, value)

        if is_array(hint):
            return lambda values: None if values is None else tuple(one(v) for v in values)
        return one
    scalar = _SCALAR_CONVERTERS.get(kafka_type or "", _identity)
    if is_array(hint):
        return lambda values: None if values is None else tuple(scalar(v) for v in values)
    return scalar


def _zero(hint: Any, kafka_type: str | None) -> Any:
    if is_nullable(hint):
        return None
    if is_array(hint):
        return ()
    entity = entity_in(hint)
    if entity is not None:
        return lambda: build(entity, {})
    return {
        "bool": False,
        "string": "",
        "bytes": b"",
        "records": b"",
        "uuid": ZERO_UUID,
        "error_code": ErrorCode.none,
        "timedelta_i32": datetime.timedelta(0),
        "timedelta_i64": datetime.timedelta(0),
        "float64": 0.0,
    }.get(kafka_type or "", 0)
