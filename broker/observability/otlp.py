"""The metrics clients push (KIP-714): an OpenTelemetry MetricsData message in protobuf,
read here without a protobuf library. Only what is turned into Prometheus samples is
read: each metric's name, and the number data points of its gauges and sums (their
attributes, value, and whether a sum is monotonic). Histograms and the rest are
skipped."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


class OtlpError(ValueError):
    pass


@dataclass(frozen=True)
class Point:
    metric: str
    attributes: tuple[tuple[str, str], ...]
    value: float
    monotonic_sum: bool  # a counter: its deltas add up


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise OtlpError("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of one message: ints for varints and fixed
    fields, bytes for length-delimited ones."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == VARINT:
            value, position = _varint(data, position)
        elif wire == FIXED64:
            if position + 8 > len(data):
                raise OtlpError("truncated fixed64")
            value = int.from_bytes(data[position : position + 8], "little")
            position += 8
        elif wire == FIXED32:
            if position + 4 > len(data):
                raise OtlpError("truncated fixed32")
            value = int.from_bytes(data[position : position + 4], "little")
            position += 4
        elif wire == LENGTH:
            length, position = _varint(data, position)
            if position + length > len(data):
                raise OtlpError("truncated field")
            value = data[position : position + length]
            position += length
        else:
            raise OtlpError(f"wire type {wire}")
        yield number, wire, value


def _submessages(data: bytes, number: int) -> Iterator[bytes]:
    for field_number, wire, value in fields(data):
        if field_number == number and wire == LENGTH and isinstance(value, bytes):
            yield value


def _any_value(data: bytes) -> str:
    for number, wire, value in fields(data):
        if number == 1 and isinstance(value, bytes):  # string_value
            return value.decode("utf-8", "replace")
        if number in (2, 3) and isinstance(value, int):  # bool, int
            return str(value)
        if number == 4 and isinstance(value, int) and wire == FIXED64:  # double
            return repr(struct.unpack("<d", value.to_bytes(8, "little"))[0])
    return ""


def _attributes(point: bytes) -> tuple[tuple[str, str], ...]:
    found = []
    for key_value in _submessages(point, 7):
        key, value = "", ""
        for number, _wire, item in fields(key_value):
            if number == 1 and isinstance(item, bytes):
                key = item.decode("utf-8", "replace")
            elif number == 2 and isinstance(item, bytes):
                value = _any_value(item)
        found.append((key, value))
    return tuple(sorted(found))


def _number(point: bytes) -> float | None:
    for number, _wire, value in fields(point):
        if number == 4 and isinstance(value, int):  # as_double
            return float(struct.unpack("<d", value.to_bytes(8, "little"))[0])
        if number == 6 and isinstance(value, int):  # as_int (sfixed64)
            return float(struct.unpack("<q", value.to_bytes(8, "little"))[0])
    return None


def points(payload: bytes) -> list[Point]:
    """Every number data point of the MetricsData message."""
    found = []
    for resource_metrics in _submessages(payload, 1):
        for scope_metrics in _submessages(resource_metrics, 2):
            for metric in _submessages(scope_metrics, 2):
                name = ""
                for number, _wire, value in fields(metric):
                    if number == 1 and isinstance(value, bytes):
                        name = value.decode("utf-8", "replace")
                for number, _wire, value in fields(metric):
                    if number not in (5, 7) or not isinstance(value, bytes):
                        continue  # gauge (5) and sum (7) only
                    monotonic = number == 7 and any(n == 3 and v == 1 for n, _w, v in fields(value))
                    for point in _submessages(value, 1):
                        number_value = _number(point)
                        if number_value is not None:
                            found.append(Point(name, _attributes(point), number_value, monotonic))
    return found
