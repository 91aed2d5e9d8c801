"""Bad input to every group API through the raw wire client: Kafka's error codes, the
broker keeps serving, and a committed offset is still there afterwards."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from helpers.broker import Broker
from helpers.topics import create_topic
from helpers.wire import WireClient

from groups import wiregroup as wg

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def anchored(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> Iterator[tuple[WireClient, str, str]]:
    """A topic, and a committed offset in ``<group>-anchor`` checked after the test."""
    create_topic(shared_broker.bootstrap, unique_topic, 2)
    anchor = unique_group + "-anchor"
    with WireClient(shared_broker.bootstrap) as w:
        assert wg.commit(w, anchor, {(unique_topic, 0): 77}) == {(unique_topic, 0): 0}
        yield w, unique_topic, unique_group
    with WireClient(shared_broker.bootstrap) as w:
        assert wg.fetch(w, anchor, [(unique_topic, 0)]) == {(unique_topic, 0): (77, "", 0)}
        assert (
            w.call(18, 3, {"client_software_name": "t", "client_software_version": "1"}).error_code
            == 0
        )


def test_join_group_bad_input(anchored: tuple[WireClient, str, str]) -> None:
    w, topic, group = anchored
    assert wg.join(w, "").error_code == wg.INVALID_GROUP_ID
    for session in (5999, 1800001, 0, -1):
        assert wg.join(w, group, session=session).error_code == wg.INVALID_SESSION_TIMEOUT
    # no protocols at all, or an empty protocol type
    assert wg.join(w, group, protocols=[]).error_code == wg.INCONSISTENT_GROUP_PROTOCOL
    assert wg.join(w, group, protocol_type="").error_code == wg.INCONSISTENT_GROUP_PROTOCOL
    # a member id the group never issued
    assert wg.join(w, group, member_id="made-up").error_code == wg.UNKNOWN_MEMBER_ID
    # garbage metadata is opaque: passed through to the leader byte for byte
    garbage = os.urandom(300)
    first = wg.join_full(w, group, protocols=[("range", garbage), ("x" * 200, b"")])
    assert first.error_code == 0
    assert [bytes(m.metadata) for m in first.members] == [garbage]
    assert first.protocol_name == "range"
    # a second member whose protocols do not overlap, or another protocol type
    with WireClient(w.sock.getpeername()[0] + ":" + str(w.sock.getpeername()[1])) as other:
        assert (
            wg.join(other, group, protocols=[("roundrobin", b"")]).error_code
            == wg.INCONSISTENT_GROUP_PROTOCOL
        )
        assert (
            wg.join(other, group, protocol_type="connect").error_code
            == wg.INCONSISTENT_GROUP_PROTOCOL
        )
    s = wg.sync(
        w,
        group,
        first.generation_id,
        first.member_id,
        {first.member_id: garbage[::-1], "not-a-member": b"x"},
    )
    assert s.error_code == 0 and bytes(s.assignment) == garbage[::-1]
    described = wg.describe(w, group)
    assert described.group_state == "Stable"
    assert [bytes(m.member_metadata) for m in described.members] == [garbage]
    # many protocols, long names
    many = [(f"p{i}-" + "y" * 100, b"\x00" * 10) for i in range(500)]
    assert wg.join_full(w, group + "-many", protocols=many).error_code == 0
    # JoinGroup v0 (no member id round trip) still works
    v0 = wg.join(w, group + "-v0", version=0)
    assert v0.error_code == 0 and v0.member_id


def test_sync_heartbeat_bad_input(anchored: tuple[WireClient, str, str]) -> None:
    w, topic, group = anchored
    # unknown group
    assert wg.sync(w, group + "-none", 1, "m").error_code == wg.UNKNOWN_MEMBER_ID
    assert wg.heartbeat(w, group + "-none", 1, "m") == wg.UNKNOWN_MEMBER_ID
    # empty group id
    assert wg.sync(w, "", 1, "m").error_code == wg.INVALID_GROUP_ID
    assert wg.heartbeat(w, "", 1, "m") == wg.INVALID_GROUP_ID
    member, gen = wg.join_and_sync(w, group, topic)
    assert wg.heartbeat(w, group, gen, member) == wg.NONE
    assert wg.heartbeat(w, group, gen + 5, member) == wg.ILLEGAL_GENERATION
    assert wg.heartbeat(w, group, -1, member) == wg.ILLEGAL_GENERATION
    assert wg.heartbeat(w, group, gen, "made-up") == wg.UNKNOWN_MEMBER_ID
    assert wg.sync(w, group, gen + 1, member).error_code == wg.ILLEGAL_GENERATION
    assert wg.sync(w, group, gen, "made-up").error_code == wg.UNKNOWN_MEMBER_ID
    # a stable group answers a repeated SyncGroup with the same assignment
    again = wg.sync(w, group, gen, member)
    assert again.error_code == 0 and bytes(again.assignment) == wg.assignment({topic: [0]})
    # SyncGroup v5 with the wrong protocol type / name
    body = {
        "group_id": group,
        "generation_id": gen,
        "member_id": member,
        "group_instance_id": None,
        "protocol_type": "connect",
        "protocol_name": "range",
        "assignments": [],
    }
    assert w.call(wg.SYNC, 5, body).error_code == wg.INCONSISTENT_GROUP_PROTOCOL
    body.update(protocol_type="consumer", protocol_name="sticky")
    assert w.call(wg.SYNC, 5, body).error_code == wg.INCONSISTENT_GROUP_PROTOCOL
    assert wg.heartbeat(w, group, gen, member) == wg.NONE


def test_leave_group_bad_input(anchored: tuple[WireClient, str, str]) -> None:
    w, topic, group = anchored
    assert wg.leave(w, "", [("m", None)]).error_code == wg.INVALID_GROUP_ID
    # a group that does not exist: each member is unknown, as Kafka 4.4 answers
    unknown = wg.leave(w, group + "-none", [("m", None)])
    assert unknown.error_code == 0
    assert [m.error_code for m in unknown.members] == [wg.UNKNOWN_MEMBER_ID]
    member, gen = wg.join_and_sync(w, group, topic)
    crowd = [(f"ghost-{i}", None) for i in range(5000)] + [("", "no-such-instance")]
    resp = wg.leave(w, group, [*crowd, (member, None)])
    assert resp.error_code == 0
    codes = {m.member_id or m.group_instance_id: m.error_code for m in resp.members}
    assert len(resp.members) == 5002
    assert codes[member] == 0 and codes["ghost-17"] == wg.UNKNOWN_MEMBER_ID
    assert codes["no-such-instance"] == wg.UNKNOWN_MEMBER_ID
    assert wg.describe(w, group).group_state == "Empty"
    # v0 leave of an unknown member
    assert (
        w.call(wg.LEAVE, 0, {"group_id": group, "member_id": "ghost"}).error_code
        == wg.UNKNOWN_MEMBER_ID
    )
    # the group is empty: a new member starts generation gen + 1... + 1
    again = wg.join_full(w, group, topics=[topic])
    assert again.error_code == 0 and again.generation_id > gen


def test_offset_apis_bad_input(anchored: tuple[WireClient, str, str]) -> None:
    w, topic, group = anchored
    tp = (topic, 0)
    # unknown topic / partition
    codes = wg.commit(w, group, {("no-such-topic-" + group, 0): 1, (topic, 99): 1, tp: 5})
    assert codes == {
        ("no-such-topic-" + group, 0): wg.UNKNOWN_TOPIC_OR_PARTITION,
        (topic, 99): wg.UNKNOWN_TOPIC_OR_PARTITION,
        tp: 0,
    }
    # a member id / generation for a group without members
    assert wg.commit(w, group, {tp: 6}, 3, "made-up") == {tp: wg.UNKNOWN_MEMBER_ID}
    assert wg.commit(w, group + "-new", {tp: 6}, 3, "made-up") == {tp: wg.ILLEGAL_GENERATION}
    # a simple commit while the group has members is refused
    member, gen = wg.join_and_sync(w, group, topic)
    assert wg.commit(w, group, {tp: 6}) == {tp: wg.UNKNOWN_MEMBER_ID}
    assert wg.commit(w, group, {tp: 6}, gen, member) == {tp: 0}
    # negative and huge offsets are stored as given
    assert wg.commit(w, group, {tp: 2**63 - 1}, gen, member) == {tp: 0}
    assert wg.fetch(w, group, [tp])[tp][0] == 2**63 - 1
    # fetch: unknown group, unknown partitions -> -1 without error; v8 several groups
    assert wg.fetch(w, group + "-none", [tp]) == {tp: (-1, "", 0)}
    resp = w.call(
        wg.FETCH,
        8,
        {
            "groups": [
                {"group_id": group, "topics": None},
                {
                    "group_id": group + "-none",
                    "topics": [{"name": topic, "partition_indexes": [0]}],
                },
            ],
            "require_stable": True,
        },
    )
    assert [g.error_code for g in resp.groups] == [0, 0]
    assert resp.groups[0].topics[0].partitions[0].committed_offset == 2**63 - 1
    # OffsetDelete: unknown group, subscribed topic
    resp = w.call(
        wg.OFFSET_DELETE,
        0,
        {
            "group_id": group + "-none",
            "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}],
        },
    )
    assert resp.error_code == wg.GROUP_ID_NOT_FOUND
    resp = w.call(
        wg.OFFSET_DELETE,
        0,
        {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}]},
    )
    assert resp.error_code == 0
    assert resp.topics[0].partitions[0].error_code == wg.GROUP_SUBSCRIBED_TO_TOPIC
    # DeleteGroups: unknown, non-empty, empty id
    resp = w.call(wg.DELETE, 2, {"groups_names": [group + "-none", group, ""]})
    assert [r.error_code for r in resp.results] == [
        wg.GROUP_ID_NOT_FOUND,
        wg.NON_EMPTY_GROUP,
        wg.GROUP_ID_NOT_FOUND,
    ]
    # DescribeGroups: unknown group is Dead, no error
    d = wg.describe(w, group + "-none")
    assert d.error_code == 0 and d.group_state == "Dead" and list(d.members) == []
    # ListGroups v4 with a state filter that matches nothing known
    resp = w.call(wg.LIST, 4, {"states_filter": ["NoSuchState"]})
    assert resp.error_code == 0 and list(resp.groups) == []
    resp = w.call(wg.LIST, 4, {"states_filter": ["Stable"]})
    assert group in [g.group_id for g in resp.groups]
    assert wg.fetch(w, group, [tp])[tp][0] == 2**63 - 1
