"""protocol/schemas/: StreamsGroupHeartbeat v1, StreamsGroupDescribe v1 and
StreamsGroupTopologyDescriptionUpdate v0 against bytes laid out as Kafka 4.4's
generated write() methods lay them out (every version of these APIs is flexible:
compact strings and arrays, a tagged-field count closing each struct), read back."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from helpers.messages import plain
from kio.serial import entity_reader

from odradek.broker.handlers.streams_group_heartbeat import error_reply
from odradek.protocol import messages
from odradek.protocol.encoder import encode_dict

NO_TAGS = b"\x00"


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def text(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    raw = value.encode()
    return uvarint(len(raw) + 1) + raw


def array(items: list[bytes] | None) -> bytes:
    if items is None:
        return b"\x00"
    return uvarint(len(items) + 1) + b"".join(items)


def i8(value: int) -> bytes:
    return struct.pack(">b", value)


def i16(value: int) -> bytes:
    return struct.pack(">h", value)


def i32(value: int) -> bytes:
    return struct.pack(">i", value)


def i64(value: int) -> bytes:
    return struct.pack(">q", value)


def written(api_key: int, version: int, data: dict[str, Any], response: bool) -> bytes:
    """`data` encoded both ways the broker encodes (kio's writer on the built object,
    and protocol/encoder.py from the dict), which must agree."""
    of = messages.response_class if response else messages.request_class
    cls = of(api_key, version)
    through_kio = messages.encode(messages.build(cls, data))
    chunks, size = encode_dict(cls, data)
    through_encoder = b"".join(bytes(c) for c in chunks)
    assert through_encoder == through_kio and size == len(through_kio)
    return through_kio


def read_back(api_key: int, version: int, raw: bytes) -> Any:
    value, end = entity_reader(messages.response_class(api_key, version))(raw, 0)
    assert end == len(raw)
    return value


def test_our_classes_are_the_ones_used_for_the_new_versions() -> None:
    for api_key, version in ((88, 1), (89, 1), (93, 0)):
        for cls in (
            messages.request_class(api_key, version),
            messages.response_class(api_key, version),
        ):
            assert cls.__module__.startswith("odradek.protocol.schemas.")
            assert cls.__api_key__ == api_key and cls.__version__ == version
            assert messages.is_flexible(api_key, version)
    assert messages.response_class(88, 0).__module__.startswith("kio.schema.")


HEARTBEAT_ANSWER: dict[str, Any] = {
    "throttle_time": 0,
    "error_code": 0,
    "error_message": None,
    "member_id": "m-1",
    "member_epoch": 4,
    "heartbeat_interval": 5000,
    "task_offset_interval": 60000,
    "acceptable_recovery_lag": 2**40,
    "status": [{"status_code": 6, "status_detail": "tags"}],
    "active_tasks": [{"subtopology_id": "0", "partitions": [1, 2]}],
    "standby_tasks": [],
    "warmup_tasks": None,
    "topology_description_required": True,
    "endpoint_information_epoch": 3,
    "partitions_by_user_endpoint": [
        {
            "user_endpoint": {"host": "h", "port": 9092},
            "active_partitions": [{"topic": "t", "partitions": [0]}],
            "standby_partitions": [],
        }
    ],
}


def test_heartbeat_response_v1_bytes() -> None:
    expected = b"".join(
        [
            i32(0),  # throttle time
            i16(0),
            text(None),  # error message
            text("m-1"),
            i32(4),  # member epoch
            i32(5000),  # heartbeat interval
            # v1: no int32 AcceptableRecoveryLagLegacy here
            i32(60000),  # task offset interval
            i64(2**40),  # AcceptableRecoveryLag, int64 from v1
            array([i8(6) + text("tags") + NO_TAGS]),
            array([text("0") + array([i32(1), i32(2)]) + NO_TAGS]),
            array([]),  # standby
            array(None),  # warm-up: null
            i8(1),  # TopologyDescriptionRequired, v1
            i32(3),  # endpoint information epoch
            array(
                [
                    text("h")
                    + struct.pack(">H", 9092)
                    + NO_TAGS
                    + array([text("t") + array([i32(0)]) + NO_TAGS])
                    + array([])
                    + NO_TAGS
                ]
            ),
            NO_TAGS,
        ]
    )
    raw = written(88, 1, HEARTBEAT_ANSWER, response=True)
    assert raw == expected
    back = read_back(88, 1, raw)
    assert back.acceptable_recovery_lag == 2**40
    assert back.topology_description_required is True
    assert back.partitions_by_user_endpoint[0].user_endpoint.port == 9092


def test_heartbeat_response_v0_keeps_the_int32_lag_before_the_offset_interval() -> None:
    data = {**HEARTBEAT_ANSWER, "acceptable_recovery_lag": 7}
    del data["topology_description_required"]
    raw = written(88, 0, data, response=True)
    head = i32(0) + i16(0) + text(None) + text("m-1") + i32(4) + i32(5000)
    assert raw.startswith(head + i32(7) + i32(60000) + array([i8(6) + text("tags") + NO_TAGS]))


def test_heartbeat_response_v1_defaults_as_kafka() -> None:
    """A refusal leaves AcceptableRecoveryLag at its default -1, as Kafka's does."""
    refusal = error_reply(25, "gone")
    raw = written(88, 1, refusal, response=True)
    body = i32(0) + i16(25) + text("gone") + text("") + i32(0) * 3 + i64(-1)
    assert raw == body + array([]) + b"\x00" * 3 + i8(0) + i32(0) + b"\x00" + NO_TAGS


def test_heartbeat_request_v1_reads_as_v0() -> None:
    """Request v1 is v0 with a new number: the same bytes read the same."""
    raw = b"".join(
        [
            text("g"),
            text("m"),
            i32(0),  # member epoch
            i32(0),  # endpoint information epoch
            text(None),  # instance id
            text("r1"),  # rack id
            i32(30000),  # rebalance timeout
            i8(1),  # topology present
            i32(0)
            + array(
                [
                    text("0")
                    + array([text("in")])
                    + array([])
                    + array([])
                    + array([])
                    + array([])
                    + array([])
                    + NO_TAGS
                ]
            )
            + NO_TAGS,
            array([]),
            array([]),
            array([]),  # owned tasks
            text("p"),  # process id
            i8(-1),  # no user endpoint
            array([text("zone") + text("a") + NO_TAGS]),  # client tags
            array(None),
            array(None),  # task offsets, end offsets
            i8(0),  # shutdown application
            NO_TAGS,
        ]
    )
    v0 = messages.decode_request(88, 0, raw, 0)
    v1 = messages.decode_request(88, 1, raw, 0)
    assert plain(v1) == plain(v0)
    assert v1.rack_id == "r1" and v1.client_tags[0].key == "zone"
    assert v1.topology.subtopologies[0].source_topics == ("in",)


def test_describe_request_v1_bytes() -> None:
    body = {
        "group_ids": ["a", "b"],
        "include_authorized_operations": False,
        "include_topology_description": True,
    }
    raw = written(89, 1, body, response=False)
    assert raw == array([text("a"), text("b")]) + i8(0) + i8(1) + NO_TAGS
    read = messages.decode_request(89, 1, raw, 0)
    assert read.include_topology_description is True and read.group_ids == ("a", "b")


def _node(name: str, kind: int, sink: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "node_type": kind,
        "source_topics": ["in"] if kind == 1 else [],
        "sink_topic": sink,
        "stores": ["s"] if kind == 2 else [],
        "successors": [],
    }


def _node_bytes(name: str, kind: int, sink: str | None) -> bytes:
    return (
        text(name)
        + i8(kind)
        + array([text("in")] if kind == 1 else [])
        + text(sink)
        + array([text("s")] if kind == 2 else [])
        + array([])
        + NO_TAGS
    )


DESCRIPTION = {
    "subtopologies": [{"subtopology_id": "0", "nodes": [_node("src", 1, None)]}],
    "global_stores": [{"source": _node("gs", 1, None), "processor": _node("gp", 2, "out")}],
}
DESCRIPTION_BYTES = (
    array([text("0") + array([_node_bytes("src", 1, None)]) + NO_TAGS])
    + array([_node_bytes("gs", 1, None) + _node_bytes("gp", 2, "out") + NO_TAGS])
    + NO_TAGS
)


def _described(**extra: Any) -> dict[str, Any]:
    return {
        "error_code": 0,
        "error_message": None,
        "group_id": "g",
        "group_state": "Stable",
        "group_epoch": 2,
        "assignment_epoch": 2,
        "topology": None,
        "members": [],
        "authorized_operations": -(2**31),
        **extra,
    }


def test_describe_response_v1_bytes() -> None:
    answer = {
        "throttle_time": 0,
        "groups": [
            _described(
                topology_description=DESCRIPTION,
                topology_description_status=3,
                assignor_name="sticky",
            ),
            _described(error_code=69, topology_description_status=0),  # defaults after
        ],
    }
    v0_part = text(None) + text("g") + text("Stable") + i32(2) + i32(2) + i8(-1) + array([])
    v0_part += i32(-(2**31))
    expected = (
        i32(0)
        + array(
            [
                i16(0) + v0_part + i8(1) + DESCRIPTION_BYTES + i8(3) + text("sticky") + NO_TAGS,
                i16(69) + v0_part + i8(-1) + i8(0) + text(None) + NO_TAGS,
            ]
        )
        + NO_TAGS
    )
    raw = written(89, 1, answer, response=True)
    assert raw == expected
    back = read_back(89, 1, raw)
    first, second = back.groups
    assert first.assignor_name == "sticky" and first.topology_description_status == 3
    assert first.topology_description.global_stores[0].processor.sink_topic == "out"
    assert second.topology_description is None and second.assignor_name is None


def test_describe_response_v0_has_none_of_it() -> None:
    answer = {"throttle_time": 0, "groups": [_described(assignor_name="sticky")]}
    raw = written(89, 0, answer, response=True)
    assert b"sticky" not in raw
    assert raw.endswith(i32(-(2**31)) + NO_TAGS + NO_TAGS)


UPDATE = {
    "group_id": "g",
    "member_id": "m",
    "topology_epoch": 5,
    "topology_description": DESCRIPTION,
}
UPDATE_BYTES = text("g") + text("m") + i32(5) + DESCRIPTION_BYTES + NO_TAGS


def test_topology_description_update_request_v0_bytes() -> None:
    raw = written(93, 0, UPDATE, response=False)
    assert raw == UPDATE_BYTES
    read = messages.decode_request(93, 0, raw, 0)
    assert read.topology_epoch == 5
    assert read.topology_description.subtopologies[0].nodes[0].source_topics == ("in",)
    assert read.topology_description.global_stores[0].processor.stores == ("s",)


@pytest.mark.parametrize("cut", [1, 7, len(UPDATE_BYTES) - 1])
def test_topology_description_update_request_truncated_is_malformed(cut: int) -> None:
    with pytest.raises(messages.MalformedRequest):
        messages.decode_request(93, 0, UPDATE_BYTES[:cut], 0)


def test_topology_description_update_request_array_past_the_end_is_malformed() -> None:
    at = len(text("g") + text("m") + i32(5))
    oversized = UPDATE_BYTES[:at] + uvarint(1_000_000) + UPDATE_BYTES[at + 1 :]
    with pytest.raises(messages.MalformedRequest):
        messages.decode_request(93, 0, oversized, 0)


def test_topology_description_update_response_v0_bytes() -> None:
    message = "The broker has no streams group topology description plugin configured."
    answer = {"throttle_time": 0, "error_code": 35, "error_message": message}
    raw = written(93, 0, answer, response=True)
    assert raw == i32(0) + i16(35) + text(message) + NO_TAGS
    assert read_back(93, 0, raw).error_message == message
