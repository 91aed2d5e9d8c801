"""Bad input to StreamsGroupHeartbeat and StreamsGroupDescribe, on Odradek and Apache
Kafka 4.4 (`either_broker`): each gets Kafka's error code and message, and the group is
afterwards exactly as before (described the same, its member still heartbeating at its
epoch). Truncated and oversized requests close the connection and change nothing."""

from __future__ import annotations

import random
import socket
import struct
import time
from typing import Any

import pytest
from conformance.scenarios_streams_groups import heartbeat_body as body
from conformance.scenarios_streams_groups import joining
from helpers.names import unique_name
from helpers.wire import WireClient

pytestmark = pytest.mark.timeout(240)

HEARTBEAT, DESCRIBE, INCREMENTAL_ALTER_CONFIGS, FIND_COORDINATOR = 88, 89, 44, 10
INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND = 42, 25, 110, 69
STREAMS_INVALID_TOPOLOGY, FENCED_INSTANCE_ID, UNKNOWN_TOPIC_OR_PARTITION = 130, 82, 3


def topology(source: str, epoch: int = 0, **extra: Any) -> dict[str, Any]:
    sub = {
        "subtopology_id": "0",
        "source_topics": [source],
        "source_topic_regex": [],
        "state_changelog_topics": [],
        "repartition_sink_topics": [],
        "repartition_source_topics": [],
        "copartition_groups": [],
        **extra,
    }
    return {"epoch": epoch, "subtopologies": [sub]}


def owning(*partitions: int, subtopology: str = "0") -> dict[str, Any]:
    active = [{"subtopology_id": subtopology, "partitions": list(partitions)}]
    return {"active_tasks": active, "standby_tasks": [], "warmup_tasks": []}


def described(client: WireClient, group: str) -> Any:
    answer = client.call(
        DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False}
    )
    return answer.groups[0]


def prepared(client: WireClient) -> tuple[str, str, str, int]:
    """A group with one member holding every task: (group, source topic, member, epoch)."""
    source, group, member = unique_name("bad-src"), unique_name("bad-app"), unique_name("m")
    client.create_topic(source, 2)
    deadline = time.monotonic() + 30
    while True:
        found = client.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
        if found.coordinators[0].error_code == 0 and described(client, group).error_code not in (
            14, 15, 16,
        ):  # fmt: skip
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.2)
    configs = [
        {"name": "streams.initial.rebalance.delay.ms", "config_operation": 0, "value": "0"},
        {"name": "streams.assignment.interval.ms", "config_operation": 0, "value": "0"},
    ]
    altered = client.call(
        INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [{"resource_type": 32, "resource_name": group, "configs": configs}],
            "validate_only": False,
        },
    )
    assert altered.responses[0].error_code == 0, altered
    while True:  # Kafka's coordinator learns of a new topic a moment after it is created
        joined = client.call(HEARTBEAT, 0, body(group, member, 0, **joining(topology(source))))
        assert joined.error_code == 0, joined
        if joined.active_tasks:
            break
        assert time.monotonic() < deadline, joined
        client.call(HEARTBEAT, 0, body(group, member, -1))
        time.sleep(0.5)
    assert sorted(joined.active_tasks[0].partitions) == [0, 1]
    return group, source, member, int(joined.member_epoch)


def test_bad_heartbeats_get_kafkas_errors_and_change_nothing(either_broker: str) -> None:
    with WireClient(either_broker) as client:
        group, source, member, epoch = prepared(client)
        before = described(client, group)
        other = unique_name("other")
        fenced_smaller = (
            f"The streams group member has a smaller member epoch ({epoch - 1}) than the one "
            f"known by the group coordinator ({epoch}). The member must abandon all its "
            "partitions and rejoin."
        )
        fenced_greater = fenced_smaller.replace("smaller", "greater").replace(
            f"({epoch - 1})", f"({epoch + 1})"
        )
        cases = [
            # an unknown member, of a known and of an unknown group
            (body(group, other, 1), UNKNOWN_MEMBER_ID,
             f"Member {other} is not a member of group {group}."),
            (body(f"{group}-x", member, 1), GROUP_ID_NOT_FOUND,
             f"Streams group {group}-x not found."),
            # stale epochs
            (body(group, member, epoch - 1, **owning(0, 1)), FENCED_MEMBER_EPOCH, fenced_smaller),
            (body(group, member, epoch + 1), FENCED_MEMBER_EPOCH, fenced_greater),
            (body(group, member, -3), INVALID_REQUEST,
             "MemberEpoch is -3, but must be greater than or equal to -2."),
            # a topology that does not match the group's
            (body(group, other, 0, **joining(topology(source, 0, repartition_sink_topics=["x"]))),
             INVALID_REQUEST, "Topology updates are not supported yet."),
            (body(group, other, 0, **joining(topology(source, 1))), INVALID_REQUEST,
             "Topology updates are not supported yet."),
            (body(group, member, epoch, topology=topology(source)), INVALID_REQUEST,
             "Topology can only be provided when (re-)joining."),
            (body(group, other, 0, **joining(topology(source, source_topic_regex=["a.*"]))),
             INVALID_REQUEST, "Regular expressions for source topics are not supported yet."),
            (body(group, other, 0, **joining(topology("__consumer_offsets"))),
             STREAMS_INVALID_TOPOLOGY,
             "Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is "
             "prohibited."),
            (body(group, other, 0, **joining(topology("no/slash"))), STREAMS_INVALID_TOPOLOGY,
             "Topic names no/slash are not valid topic names."),
            # tasks the topology does not have
            (body(group, member, epoch, **owning(0, subtopology="9")), INVALID_REQUEST,
             "Subtopology 9 does not exist in the topology."),
            (body(group, member, epoch, **owning(5)), INVALID_REQUEST,
             "Task 5 for subtopology 0 is invalid. Number of tasks for this subtopology: 2"),
            (body(group, member, epoch, active_tasks=[]), INVALID_REQUEST,
             "If one task-type is non-null, all must be non-null."),
            # static membership
            (body(group, member, epoch, instance_id="someone"), UNKNOWN_MEMBER_ID,
             "Instance id someone is unknown."),
            (body(group, member, -2), INVALID_REQUEST, "InstanceId can't be null."),
            (body(group, " ", 0, **joining(topology(source))), INVALID_REQUEST,
             "MemberId can't be empty."),
        ]  # fmt: skip
        for request, code, message in cases:
            answer = client.call(HEARTBEAT, 0, request)
            assert (answer.error_code, answer.error_message) == (code, message), request
            assert answer.member_epoch == 0 and answer.active_tasks is None
        assert described(client, group) == before
        again = client.call(HEARTBEAT, 0, body(group, member, epoch, **owning(0, 1)))
        assert (again.error_code, again.member_epoch) == (0, epoch)


def heartbeat_frame_of(request: dict[str, Any]) -> bytes:
    encoder = WireClient.__new__(WireClient)  # only its encoding is used: no socket
    encoder.correlation = 0
    return encoder.request_bytes(HEARTBEAT, 0, request)[1]


def heartbeat_frame(group: str, member: str, epoch: int) -> bytes:
    return heartbeat_frame_of(body(group, member, epoch))


def closed(bootstrap: str, data: bytes) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        sock.settimeout(10)
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:
            return True


def test_truncated_and_oversized_heartbeats_close_the_connection(either_broker: str) -> None:
    with WireClient(either_broker) as client:
        group, _source, member, epoch = prepared(client)
        before = described(client, group)
    frame = heartbeat_frame(group, member, epoch)
    size = struct.unpack(">i", frame[:4])[0]
    cut = size // 2  # the header whole, the body cut in the middle
    truncated = struct.pack(">i", cut) + frame[4 : 4 + cut]
    assert closed(either_broker, truncated), "a truncated heartbeat was answered"
    oversized = struct.pack(">i", 100 * 1024 * 1024 + 1) + frame[4:]
    assert closed(either_broker, oversized), "an oversized request was read"
    with WireClient(either_broker) as client:
        assert described(client, group) == before
        again = client.call(HEARTBEAT, 0, body(group, member, epoch, **owning(0, 1)))
        assert (again.error_code, again.member_epoch) == (0, epoch)


def test_mutated_heartbeats_are_answered_or_refused(either_broker: str) -> None:
    """Bytes of a valid join flipped at random (seeded): each request is answered or its
    connection closed, never left hanging, and the broker serves on."""
    shape = topology(
        unique_name("fz-src"),
        state_changelog_topics=[
            {"name": unique_name("fz-changelog"), "partitions": 0, "replication_factor": 0,
             "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}
        ],
        copartition_groups=[
            {"source_topics": [0], "source_topic_regex": [], "repartition_source_topics": []}
        ],
    )  # fmt: skip
    join = body(
        unique_name("fz-app"), "m", 0, **joining(shape), user_endpoint={"host": "h", "port": 1}
    )
    frame = heartbeat_frame_of(join)
    rng = random.Random(7)
    host, port = either_broker.rsplit(":", 1)
    outcomes = {"answered": 0, "closed": 0}
    for _ in range(200):
        data = bytearray(frame)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(14, len(data))] = rng.randrange(256)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(bytes(data))
            try:
                outcomes["answered" if sock.recv(4) else "closed"] += 1
            except ConnectionResetError:
                outcomes["closed"] += 1
    assert outcomes["answered"] and outcomes["closed"], outcomes
    with WireClient(either_broker) as client:
        group, _source, member, epoch = prepared(client)
        again = client.call(HEARTBEAT, 0, body(group, member, epoch, **owning(0, 1)))
        assert (again.error_code, again.member_epoch) == (0, epoch)
