"""Sans-IO protocol code, tested with bytes."""

from __future__ import annotations

import contextlib
import datetime
import struct
from collections.abc import Callable
from typing import Any

import pytest
from helpers.messages import plain
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol import messages
from odradek.protocol.batch import (
    HEADER_SIZE,
    InvalidBatch,
    TruncatedBatch,
    build_batch,
    crc_matches,
    iter_batches,
    iter_records,
    read_header,
    set_base_offset,
    set_max_timestamp,
)
from odradek.protocol.decoder import DecodeError, decode
from odradek.protocol.header import (
    FrameError,
    frame_size,
    parse_request_header,
    response_header,
    skip_tagged_fields,
)
from odradek.protocol.produce_request import (
    PartitionData,
    ProduceRequest,
    TopicData,
    decode_produce_request,
)
from odradek.protocol.produce_response import encode_produce_response


def request_bytes(api_key: int, version: int, correlation: int, client: str | None) -> bytes:
    out = struct.pack(">hhi", api_key, version, correlation)
    if client is None:
        return out + struct.pack(">h", -1)
    raw = client.encode()
    return out + struct.pack(">h", len(raw)) + raw


def test_request_header_v1_and_v2() -> None:
    raw = request_bytes(3, 9, 42, "client-1")
    header = parse_request_header(raw + b"\x00", flexible=True)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 9, 42)
    assert header.client_id == "client-1"
    assert header.body_offset == len(raw) + 1
    plain = parse_request_header(raw, flexible=False)
    assert plain.body_offset == len(raw)
    assert parse_request_header(request_bytes(3, 1, 1, None), False).client_id is None


def test_header_with_lying_client_id_length() -> None:
    raw = struct.pack(">hhih", 3, 1, 7, 500) + b"abc"
    with pytest.raises(FrameError):
        parse_request_header(raw, flexible=False)


def test_tagged_fields_are_skipped_and_bounded() -> None:
    assert skip_tagged_fields(b"\x02\x00\x01x\x05\x02yz", 0) == 8
    with pytest.raises(FrameError):
        skip_tagged_fields(b"\x01\x00\x7f", 0)


@pytest.mark.parametrize("size", [2**31 - 1, 104857601, -1, 3])
def test_frame_size_limits(size: int) -> None:
    with pytest.raises(FrameError):
        frame_size(struct.pack(">i", size), 104857600)


def test_frame_size_within_limit() -> None:
    assert frame_size(struct.pack(">i", 1000), 104857600) == 1000


def test_response_header_versions() -> None:
    assert response_header(5, False) == b"\x00\x00\x00\x05"
    assert response_header(5, True) == b"\x00\x00\x00\x05\x00"


def test_build_fills_zero_values_and_drops_unknown_fields() -> None:
    data = {"topics": [{"name": "t", "partitions": [{"partition_index": 0}]}], "nope": 1}
    v1 = messages.build_response(3, 1, data)
    v12 = messages.build_response(3, 12, data)
    assert v1.topics[0].partitions[0].leader_id == 0
    assert v12.topics[0].topic_id is None  # nullable in kio, written as the zero UUID
    round_trip = messages.encode(v12)
    decoded, _ = messages._reader(type(v12))(round_trip, 0)
    assert decoded == v12


def test_batch_round_trip_and_crc() -> None:
    batch = bytearray(build_batch([(b"k", b"v"), (None, b"w")], timestamp=1000))
    header = read_header(batch)
    assert header.records_count == 2 and header.last_offset_delta == 1
    assert crc_matches(batch, header)
    set_base_offset(batch, 0, 77)
    assert read_header(batch).base_offset == 77
    assert crc_matches(batch, read_header(batch)), "base offset is outside the CRC"
    set_max_timestamp(batch, read_header(batch), 5000)
    stamped = read_header(batch)
    assert stamped.max_timestamp == 5000 and stamped.log_append_time
    assert crc_matches(batch, stamped)
    assert [(d, k, v) for d, k, v in iter_records(batch)] == [(0, b"k", b"v"), (1, None, b"w")]


def test_corrupt_and_truncated_batches() -> None:
    batch = bytearray(build_batch([(b"k", b"v")]))
    with pytest.raises(TruncatedBatch):
        list(iter_batches(batch[:-1]))
    with pytest.raises(TruncatedBatch):
        list(iter_batches(batch[:30]))
    batch[-1] ^= 0xFF
    with pytest.raises(InvalidBatch, match="CRC"):
        list(iter_batches(batch))
    wrong_magic = bytearray(build_batch([(b"k", b"v")]))
    wrong_magic[16] = 1
    with pytest.raises(InvalidBatch, match="magic"):
        list(iter_batches(wrong_magic))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_batch_parser_never_crashes_on_garbage(data: bytes) -> None:
    try:
        for header in iter_batches(data):
            assert header.size >= HEADER_SIZE
    except InvalidBatch:
        pass


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([(0, 9), (1, 12), (3, 12), (18, 3), (19, 7), (2, 7), (22, 4)]),
    st.binary(max_size=300),
)
def test_request_decoder_rejects_garbage_cleanly(key_version: tuple[int, int], body: bytes) -> None:
    api_key, version = key_version
    with contextlib.suppress(messages.MalformedRequest):
        messages.decode_request(api_key, version, body, 0)


def test_array_length_of_billions_is_rejected_not_allocated() -> None:
    # This ListOffsets v7 body once made the decoder reserve 195 GB and abort.
    body = bytes.fromhex("ffacff8080ff80cb8a5b250287d201ecffff02800000007f")
    with pytest.raises(messages.MalformedRequest):
        messages.decode_request(2, 7, body, 0)


def test_lying_array_length_does_not_allocate() -> None:
    # Metadata v1 body: topics array claiming 2^31-1 entries, then nothing.
    with pytest.raises(messages.MalformedRequest):
        messages.decode_request(3, 1, struct.pack(">i", 2**31 - 1), 0)


def test_decoder_agrees_with_kio_on_valid_requests() -> None:
    samples = {
        (1, 12): {
            "max_wait": 500,
            "min_bytes": 1,
            "max_bytes": 100,
            "isolation_level": 1,
            "session_id": 4,
            "session_epoch": 2,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "fetch_offset": 9, "partition_max_bytes": 10}],
                }
            ],
            "forgotten_topics_data": [{"topic": "u", "partitions": [1, 2]}],
            "rack_id": "r",
            "cluster_id": "c",
        },
        (3, 12): {"topics": None, "allow_auto_topic_creation": True},
        (19, 7): {
            "topics": [
                {
                    "name": "n",
                    "num_partitions": 2,
                    "replication_factor": 1,
                    "configs": [{"name": "a", "value": None}],
                }
            ],
            "timeout": 5,
            "validate_only": True,
        },
    }
    for (api_key, version), body in samples.items():
        entity = messages.build(messages.request_class(api_key, version), body)
        raw = messages.encode(entity)
        assert plain(messages.decode_request(api_key, version, raw, 0)) == plain(entity)


# -- Produce responses written without kio ---------------------------------------------------

_partition_answers = st.fixed_dictionaries(
    {
        "index": st.integers(0, 2**31 - 1),
        "error_code": st.sampled_from([0, 2, 10, 47, 87]),
        "base_offset": st.integers(-1, 2**62),
        "log_append_time": st.one_of(st.just(-1), st.integers(0, 2**41)),
        "log_start_offset": st.integers(-1, 2**62),
        "error_message": st.one_of(st.none(), st.text(max_size=40)),
        "record_errors": st.lists(
            st.fixed_dictionaries(
                {
                    "batch_index": st.integers(0, 2**31 - 1),
                    "batch_index_error_message": st.one_of(st.none(), st.text(max_size=40)),
                }
            ),
            max_size=3,
        ),
    }
)
_topic_answers = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.text(min_size=1, max_size=30),
            "partition_responses": st.lists(_partition_answers, max_size=4),
        }
    ),
    max_size=4,
)


@given(version=st.integers(3, 13), topics=_topic_answers, throttle=st.integers(0, 10_000))
@settings(max_examples=300)
def test_produce_response_bytes_match_kio(version: int, topics: list, throttle: int) -> None:
    kio_bytes = messages.encode(
        messages.build_response(0, version, {"responses": topics, "throttle_time": throttle})
    )
    assert encode_produce_response(version, topics, throttle) == kio_bytes


# -- Produce requests read without kio ------------------------------------------------------

_produce_requests = st.fixed_dictionaries(
    {
        "transactional_id": st.one_of(st.none(), st.text(max_size=20)),
        "acks": st.integers(-(2**15), 2**15 - 1),
        "timeout": st.integers(0, 2**31 - 1),
        "topic_data": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.text(max_size=20),
                    "partition_data": st.lists(
                        st.fixed_dictionaries(
                            {
                                "index": st.integers(-(2**31), 2**31 - 1),
                                "records": st.one_of(st.none(), st.binary(max_size=80)),
                            }
                        ),
                        max_size=4,
                    ),
                }
            ),
            max_size=3,
        ),
    }
)


def _produce_by_generic_decoder(version: int, raw: bytes) -> ProduceRequest:
    entity = decode(messages.request_class(0, version), raw, 0)
    return ProduceRequest(
        entity.transactional_id,
        entity.acks,
        entity.timeout // datetime.timedelta(milliseconds=1),
        tuple(
            TopicData(
                getattr(topic, "name", ""),
                tuple(PartitionData(p.index, p.records) for p in topic.partition_data),
                getattr(topic, "topic_id", None),
            )
            for topic in entity.topic_data
        ),
    )


def _outcome(read: Callable[[bytes], ProduceRequest], raw: bytes) -> ProduceRequest | str:
    try:
        return read(raw)
    except DecodeError:
        return "DecodeError"


@given(
    version=st.integers(3, 13),
    body=_produce_requests,
    cut=st.integers(0, 400),
    flip=st.tuples(st.integers(0, 400), st.integers(1, 255)),
)
@settings(max_examples=400)
def test_produce_request_reader_agrees_with_generic_decoder(
    version: int, body: dict[str, Any], cut: int, flip: tuple[int, int]
) -> None:
    raw = messages.encode(messages.build(messages.request_class(0, version), body))
    decoded = decode_produce_request(version, raw, 0)
    assert decoded == _produce_by_generic_decoder(version, raw)
    assert decoded.acks == body["acks"]
    assert [p.records for t in decoded.topic_data for p in t.partition_data] == [
        p["records"] for t in body["topic_data"] for p in t["partition_data"]
    ]
    # Damaged copies: both readers fail, or both read the same thing.
    truncated = raw[: cut % (len(raw) + 1)]
    garbled = bytearray(raw)
    garbled[flip[0] % len(raw)] ^= flip[1]
    for damaged in (truncated, bytes(garbled)):
        by_hand = _outcome(lambda raw: decode_produce_request(version, raw, 0), damaged)
        generic = _outcome(lambda raw: _produce_by_generic_decoder(version, raw), damaged)
        assert by_hand == generic


_HEAD_V3 = struct.pack(">hhi", -1, 1, 100)  # null transactional id, acks, timeout
_HEAD_V9 = b"\x00" + struct.pack(">hi", 1, 100)


_PARTITION_V9 = b"\x02t\x02" + struct.pack(">i", 0)  # topic "t", one partition, index 0


@pytest.mark.parametrize(
    ("version", "body", "refused"),
    [
        (3, _HEAD_V3 + struct.pack(">ihi", 1, -1, 0), True),  # null topic name
        (9, _HEAD_V9 + b"\x02\x00\x01\x00\x00", True),  # null topic name, flexible
        (3, _HEAD_V3 + struct.pack(">ih", 1, 1) + b"\xff" + struct.pack(">i", 0), True),  # UTF-8
        (3, _HEAD_V3 + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">i", -1), True),  # null array
        (9, _HEAD_V9 + b"\x81\x80\x80\x80\x80\x00\x00", True),  # a six-byte varint
        (9, _HEAD_V9 + b"\x81\x80\x80\x80\x00\x00", False),  # a five-byte one
        (9, _HEAD_V9 + b"\x02" + _PARTITION_V9 + b"\x00\x01\x05\x01\xaa\x00\x00", False),
        (9, _HEAD_V9 + b"\x02" + _PARTITION_V9 + b"\x00\x01\x05\x02\xaa\x00\x00", True),
        (9, _HEAD_V9 + b"\x02" + _PARTITION_V9 + b"\x7f", True),  # records run past the end
        (3, struct.pack(">hhii", -1, 1, 100, 2**31 - 1), True),  # billions of topics, no bytes
    ],
)
def test_produce_request_reader_edge_cases(version: int, body: bytes, refused: bool) -> None:
    by_hand = _outcome(lambda raw: decode_produce_request(version, raw, 0), body)
    assert by_hand == _outcome(lambda raw: _produce_by_generic_decoder(version, raw), body)
    assert (by_hand == "DecodeError") is refused


@given(version=st.integers(3, 13), body=st.binary(max_size=120))
@settings(max_examples=300)
def test_produce_request_reader_agrees_on_random_bytes(version: int, body: bytes) -> None:
    by_hand = _outcome(lambda raw: decode_produce_request(version, raw, 0), body)
    assert by_hand == _outcome(lambda raw: _produce_by_generic_decoder(version, raw), body)


def test_produce_request_records_are_a_writable_view_of_the_frame() -> None:
    batch = build_batch([(b"k", b"v")])
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 100,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}],
    }
    frame = bytearray(messages.encode(messages.build(messages.request_class(0, 9), body)))
    records = decode_produce_request(9, frame, 0).topic_data[0].partition_data[0].records
    assert records is not None and not records.readonly and bytes(records) == batch
    records[0] = 0x7F
    assert frame.find(b"\x7f" + batch[1:]) > 0
