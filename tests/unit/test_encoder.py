"""protocol/encoder.py writes every response class as kio does, from the same dicts;
protocol/decoder.py reads every request class as kio wrote it."""

from __future__ import annotations

import dataclasses
import datetime
import random
import types
import typing
import uuid
from typing import Any

import pytest
from helpers.messages import plain

from odradek.protocol import messages
from odradek.protocol.encoder import EncodedArray, element_writer, encode_dict
from odradek.protocol.kio_types import entity_in


def _classes(of: Any) -> list[tuple[int, int, type]]:
    found = []
    for api_key in range(100):
        for version in range(20):
            try:
                found.append((api_key, version, of(api_key, version)))
            except Exception:
                continue
    return found


CLASSES = _classes(messages.response_class)
# Produce has a reader of its own, compared with this one in test_protocol.py
REQUESTS = [(k, v, cls) for k, v, cls in _classes(messages.request_class) if k != 0]

_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "timedelta_i32": (0, 2**31 - 1),
    "timedelta_i64": (0, 2**40),
    "datetime_i64": (0, 2**41),
}


def _scalar(rng: random.Random, kafka_type: str) -> Any:
    if kafka_type in _RANGES:
        low, high = _RANGES[kafka_type]
        return rng.choice([0, -1 if low < 0 else 1, rng.randint(low, high), high])
    if kafka_type == "error_code":
        return rng.choice([0, 3, 15, 16, 79])
    if kafka_type == "bool":
        return rng.random() < 0.5
    if kafka_type == "float64":
        return rng.uniform(-1e9, 1e9)
    if kafka_type == "string":
        return "".join(rng.choice("ab-é_9") for _ in range(rng.randint(0, 12)))
    if kafka_type in ("bytes", "records"):
        return rng.randbytes(rng.choice([0, 3, 70, 5000]))
    if kafka_type == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(kafka_type)


def _sample(rng: random.Random, cls: type, depth: int = 0) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    data: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        # left to its default or zero value (kio cannot write a datetime left out)
        if rng.random() < 0.15 and f.metadata.get("kafka_type") != "datetime_i64":
            continue
        hint = hints[f.name]
        nullable = types.NoneType in typing.get_args(hint)
        if nullable and rng.random() < 0.2:
            data[f.name] = None
            continue
        is_array = typing.get_origin(hint) is tuple or any(
            typing.get_origin(a) is tuple for a in typing.get_args(hint)
        )
        entity = entity_in(hint)
        kafka_type = f.metadata.get("kafka_type")
        if entity is not None:

            def one(entity: type = entity) -> Any:
                return _sample(rng, entity, depth + 1)
        else:

            def one(kafka_type: Any = kafka_type) -> Any:
                return _scalar(rng, kafka_type)

        if is_array:
            data[f.name] = [one() for _ in range(rng.randint(0, 3 if depth < 2 else 1))]
        else:
            data[f.name] = one()
    return data


def _kio_bytes(cls: type, data: dict[str, Any]) -> bytes:
    return messages.encode(messages.build(cls, data))


def test_every_response_class_is_covered() -> None:
    assert len(CLASSES) > 300


@pytest.mark.parametrize(("api_key", "version", "cls"), CLASSES, ids=lambda v: str(v))
def test_encoder_writes_what_kio_writes(api_key: int, version: int, cls: type) -> None:
    rng = random.Random(api_key * 100 + version)
    for _ in range(12):
        data = _sample(rng, cls)
        chunks, size = encode_dict(cls, data)
        ours = b"".join(bytes(chunk) for chunk in chunks)
        assert ours == _kio_bytes(cls, data), data
        assert size == len(ours)


def test_large_records_stay_a_chunk_of_their_own() -> None:
    cls = messages.response_class(1, 12)
    records = b"r" * 10_000
    data = {
        "responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": records}]}]
    }
    chunks, size = encode_dict(cls, data)
    assert any(chunk is records for chunk in chunks)
    assert size == len(_kio_bytes(cls, data))


@pytest.mark.parametrize("version", [0, 1, 8, 9, 12, 13])
def test_an_array_written_ahead_gives_the_same_bytes(version: int) -> None:
    cls = messages.response_class(3, version)  # Metadata: a full answer is written ahead
    rng = random.Random(version)
    for count in (0, 1, 5, 200):  # 200: a length prefix of two bytes when flexible
        data = _sample(rng, cls)
        topics = [
            _sample(rng, entity_in(typing.get_type_hints(cls)["topics"])) for _ in range(count)
        ]
        ahead = EncodedArray()
        append = element_writer(cls, "topics")
        for topic in topics:
            append(ahead, topic)
        written, _ = encode_dict(cls, {**data, "topics": ahead})
        expected = _kio_bytes(cls, {**data, "topics": topics})
        assert b"".join(bytes(chunk) for chunk in written) == expected


def test_times_may_be_given_as_milliseconds_or_as_python_values() -> None:
    cls = messages.response_class(11, 9)  # JoinGroup: throttle_time is a timedelta_i32
    as_int = encode_dict(cls, {"throttle_time": 250, "member_id": "m"})
    as_delta = encode_dict(
        cls, {"throttle_time": datetime.timedelta(milliseconds=250), "member_id": "m"}
    )
    assert as_int == as_delta


@pytest.mark.parametrize(("api_key", "version", "cls"), REQUESTS, ids=lambda v: str(v))
def test_decoder_reads_what_kio_writes(api_key: int, version: int, cls: type) -> None:
    rng = random.Random(api_key * 100 + version + 7)
    for _ in range(12):
        data = _sample(rng, cls)
        try:
            entity = messages.build(cls, data)
            raw = _kio_bytes(cls, data)
        except Exception:
            continue  # a value kio itself refuses (a datetime left out, ...)
        assert plain(messages.decode_request(api_key, version, raw, 0)) == plain(entity)
