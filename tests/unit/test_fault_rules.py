"""Faults as data (broker/faults/rules.py) and the answers they give
(broker/faults/error_replies.py): requests encoded as a client sends them, decoded as
the broker decodes them, the answer encoded and read back as a client reads it."""

from __future__ import annotations

import datetime
import io
import uuid
from typing import Any

import pytest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import GroupId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from odradek.broker.faults.error_replies import (
    error_reply,
    named_groups,
    named_partitions,
    named_transactional_ids,
)
from odradek.broker.faults.rules import FaultError, parse_fault
from odradek.protocol import messages
from odradek.protocol.errors import ErrorCode

API_KEYS = {"produce": 0, "fetch": 1, "joingroup": 11, "findcoordinator": 10}
COORDINATOR_APIS = frozenset({10, 11})


def _decoded(api_key: int, version: int, request: Any) -> Any:
    body = io.BytesIO()
    entity_writer(type(request))(body, request)
    return messages.decode_request(api_key, version, bytearray(body.getvalue()), 0)


def _answered(api_key: int, version: int, reply: dict[str, Any]) -> Any:
    chunks, _ = messages.encode_response(api_key, version, reply)
    raw = b"".join(bytes(c) for c in chunks)
    value, _end = entity_reader(messages.response_class(api_key, version))(raw, 0)
    return value


def _produce() -> ProduceRequest:
    return ProduceRequest(
        transactional_id="tx",
        acks=i16(-1),
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            TopicProduceData(
                name=TopicName("orders"),
                partition_data=(
                    PartitionProduceData(index=i32(0), records=None),
                    PartitionProduceData(index=i32(2), records=None),
                ),
            ),
        ),
    )


def test_a_produce_is_answered_with_the_error_for_each_partition_it_names() -> None:
    request = _decoded(0, 9, _produce())
    answer = _answered(0, 9, error_reply(0, request, ErrorCode.not_leader_or_follower, None))
    ((topic,),) = (answer.responses,)
    assert topic.name == "orders"
    assert [(p.index, p.error_code) for p in topic.partition_responses] == [
        (0, ErrorCode.not_leader_or_follower),
        (2, ErrorCode.not_leader_or_follower),
    ]
    assert list(named_partitions(0, request, lambda _id: None)) == [("orders", 0), ("orders", 2)]
    assert named_transactional_ids(0, request) == {"tx"}


def test_an_api_without_entries_is_answered_at_the_top() -> None:
    join = JoinGroupRequest(
        group_id=GroupId("g"),
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
        reason=None,
    )
    request = _decoded(11, 9, join)
    answer = _answered(11, 9, error_reply(11, request, ErrorCode.coordinator_not_available, None))
    assert answer.error_code == ErrorCode.coordinator_not_available
    assert answer.generation_id == -1
    assert named_groups(11, request) == {"g"}
    assert list(named_partitions(11, request, lambda _id: None)) == []


def test_find_coordinator_keys_are_answered_one_by_one() -> None:
    find = FindCoordinatorRequest(key_type=i16(0), coordinator_keys=("a", "b"))
    request = _decoded(10, 4, find)
    answer = _answered(10, 4, error_reply(10, request, ErrorCode.coordinator_not_available, "x"))
    assert [(c.key, c.error_code, c.error_message, c.node_id) for c in answer.coordinators] == [
        ("a", ErrorCode.coordinator_not_available, "x", -1),
        ("b", ErrorCode.coordinator_not_available, "x", -1),
    ]
    assert named_groups(10, request) == {"a", "b"}
    assert named_transactional_ids(10, request) == set()


def test_topic_ids_are_named_through_the_topics() -> None:
    topic_id = uuid.UUID(int=9)

    class Partition:
        partition = 3

    class Topic:
        topic = None
        topic_id = uuid.UUID(int=9)
        partitions = (Partition(),)

    class Fetch:
        topics = (Topic(),)

    names = {topic_id: "orders"}
    assert list(named_partitions(1, Fetch(), names.get)) == [("orders", 3)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "error", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"}, "ends by count"),
        ({"kind": "error", "api": "Nope", "error": "NONE", "count": 1}, "unknown API 'Nope'"),
        ({"kind": "error", "api": "Produce", "error": "NOPE", "count": 1}, "unknown error 'NOPE'"),
        ({"kind": "error", "api": "Produce", "error": "NONE", "count": 1}, "is not NONE"),
        ({"kind": "delay", "api": "Fetch", "count": 1}, "needs delay_ms"),
        ({"kind": "leaderless", "topic": "t", "count": 1}, "names its topic and partition"),
        ({"kind": "coordinator", "count": 1}, "names a group or a transactional_id"),
        ({"kind": "coordinator", "state": "gone", "group": "g", "count": 1}, "state must be"),
        ({"kind": "error", "api": "Produce", "error": 6, "count": 0}, "at least 1"),
        ({"kind": "boom", "count": 1}, "kind must be one of"),
        ({"kind": "error", "partition": 1, "count": 1}, "goes with its topic"),
        ({"kind": "error", "colour": "red", "count": 1}, "unknown fields: colour"),
    ],
)
def test_faults_that_make_no_sense_are_refused_with_the_reason(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(FaultError, match=message):
        parse_fault(1, spec, API_KEYS, COORDINATOR_APIS)


def test_a_fault_ends_by_count() -> None:
    spec = {"kind": "error", "api": "Produce", "error": 6, "count": 2, "topic": "t"}
    fault = parse_fault(1, spec, API_KEYS, COORDINATOR_APIS)
    assert fault.error == ErrorCode.not_leader_or_follower and fault.apis == {0}
    assert not fault.ended
    fault.take()
    fault.take()
    assert fault.ended and fault.fired == 2
    assert fault.described({0: "Produce"})["apis"] == ["Produce"]
