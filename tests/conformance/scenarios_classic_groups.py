"""Scenarios of the classic group protocol: a whole JoinGroup, SyncGroup, Heartbeat,
LeaveGroup round, older versions, two members rebalancing, static members, and the
errors a member meets (generations, protocols, group ids, groups of another type)."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from helpers.wire import WireClient

from conformance.harness import Run, scenario
from conformance.scenarios_groups import ready
from conformance.scenarios_topics import quietly_create

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP = 8, 9, 11, 12, 13
SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 14, 15, 16, 42, 47
CONSUMER_HEARTBEAT, SHARE_HEARTBEAT = 68, 76


def string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0 (what a consumer sends in JoinGroup)."""
    return (
        struct.pack(">hi", 0, len(topics))
        + b"".join(string(t) for t in topics)
        + struct.pack(">i", -1)
    )


def assignment(topic: str, *partitions: int) -> bytes:
    """ConsumerProtocolAssignment v0 (what the leader hands out in SyncGroup)."""
    owned = struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return struct.pack(">hi", 0, 1) + string(topic) + owned + struct.pack(">i", -1)


def join_body(group: str, member_id: str = "", **fields: Any) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout": 10000,
        "rebalance_timeout": 10000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": fields.pop("metadata", b"")}],
        "reason": None,
        **fields,
    }


def sync_body(group: str, generation: int, member_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "group_id": group,
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [],
        **fields,
    }


def heartbeat(
    run: Run, group: str, generation: int, member_id: str, instance: str | None = None
) -> Any:
    body = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": instance,
    }
    return run.call(HEARTBEAT, 4, body)


def leave(run: Run, group: str, *members: tuple[str, str | None], version: int = 5) -> Any:
    listed = [{"member_id": m, "group_instance_id": i, "reason": None} for m, i in members]
    return run.call(LEAVE_GROUP, version, {"group_id": group, "members": listed})


def describe(run: Run, *groups: str, version: int = 5) -> Any:
    body = {"groups": list(groups), "include_authorized_operations": False}
    return run.call(DESCRIBE_GROUPS, version, body)


def commit_body(
    group: str, topic: str, generation: int = -1, member_id: str = "", **fields: Any
) -> dict[str, Any]:
    partition = {
        "partition_index": fields.pop("partition", 0),
        "committed_offset": fields.pop("offset", 7),
        "committed_leader_epoch": -1,
        "committed_metadata": fields.pop("metadata", None),
    }
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [partition]}],
        **fields,
    }


def start(
    run: Run, client: WireClient, api: int, version: int, body: dict[str, Any]
) -> Callable[[], Any]:
    """Send a request that will wait (a JoinGroup or SyncGroup of a rebalance) and give
    back the function that reads its answer and records it then."""
    correlation, data = client.request_bytes(api, version, body)
    client.send_raw(data)

    def finish() -> Any:
        answer = client.read_response(api, version, correlation)
        run.steps.append({"api": api, "version": version, "answer": answer})
        return answer

    return finish


def lone_member(
    run: Run,
    group: str,
    client: WireClient | None = None,
    instance: str | None = None,
    metadata: bytes = b"",
    quiet: bool = True,
    session_timeout: int = 10000,
) -> tuple[str, int]:
    """A member that joined alone and synced as leader: (member id, generation)."""
    send = run.quiet if quiet else run.call
    body = join_body(
        group, group_instance_id=instance, metadata=metadata, session_timeout=session_timeout
    )
    joined = send(JOIN_GROUP, 9, body, client)
    if joined.error_code == 79:  # MEMBER_ID_REQUIRED
        joined = send(JOIN_GROUP, 9, {**body, "member_id": joined.member_id}, client)
    assert joined.error_code == 0, joined
    generation = int(joined.generation_id)
    synced = sync_body(
        group,
        generation,
        joined.member_id,
        group_instance_id=instance,
        assignments=[{"member_id": joined.member_id, "assignment": b""}],
    )
    send(SYNC_GROUP, 5, synced, client)
    return joined.member_id, generation


@scenario("classic-group.full-round", "join, sync, heartbeat, commit, describe, leave")
def _full_round(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic, 2)
    ready(run, 0, group)
    body = join_body(group, metadata=subscription(topic))
    first = run.call(JOIN_GROUP, 9, body)
    joined = run.call(JOIN_GROUP, 9, {**body, "member_id": first.member_id})
    me, generation = joined.member_id, int(joined.generation_id)
    mine = [{"member_id": me, "assignment": assignment(topic, 0, 1)}]
    run.call(SYNC_GROUP, 5, sync_body(group, generation, me, assignments=mine))
    heartbeat(run, group, generation, me)
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, generation, me, metadata="m"))
    fetch = {"groups": [{"group_id": group, "topics": None}], "require_stable": True}
    run.call(OFFSET_FETCH, 8, fetch)
    describe(run, group)
    # the member of a stable group asks its assignment again: the same answer
    run.call(SYNC_GROUP, 5, sync_body(group, generation, me))
    leave(run, group, (me, None))
    describe(run, group)
    heartbeat(run, group, generation, me)


@scenario("classic-group.old-versions", "JoinGroup v0-v3, SyncGroup, Heartbeat, LeaveGroup v0")
def _old_versions(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    body = {
        "group_id": group,
        "session_timeout": 10000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription(topic)}],
    }
    joined = run.call(JOIN_GROUP, 0, body)
    me, generation = joined.member_id, int(joined.generation_id)
    sync = {"group_id": group, "generation_id": generation, "member_id": me}
    run.call(SYNC_GROUP, 0, {**sync, "assignments": [{"member_id": me, "assignment": b"a"}]})
    run.call(HEARTBEAT, 0, sync)
    commit = commit_body(group, topic, generation, me, retention_time=-1)
    del commit["group_instance_id"]
    for partition in commit["topics"][0]["partitions"]:
        del partition["committed_leader_epoch"]
    run.call(OFFSET_COMMIT, 2, commit)
    run.call(
        OFFSET_FETCH, 1, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]}
    )
    run.call(DESCRIBE_GROUPS, 0, {"groups": [group]})
    run.call(LEAVE_GROUP, 0, {"group_id": group, "member_id": me})
    run.call(LEAVE_GROUP, 0, {"group_id": group, "member_id": me})
    run.call(HEARTBEAT, 0, sync)
    # v3: a rejoin with the id from before is a new member of an empty group
    again = run.call(JOIN_GROUP, 3, {**body, "member_id": me, "rebalance_timeout": 10000})
    run.record("joined again", again.error_code)


@scenario(
    "classic-group.illegal-generation", "Heartbeat, SyncGroup, OffsetCommit of a wrong generation"
)
def _illegal_generation(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    me, generation = lone_member(run, group)
    heartbeat(run, group, generation + 1, me)
    heartbeat(run, group, generation - 1, me)
    run.call(SYNC_GROUP, 5, sync_body(group, generation + 1, me))
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, generation + 1, me))
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, -1, ""))
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, generation, "stranger"))
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, generation, me))
    heartbeat(run, group, generation, me)


@scenario("classic-group.rebalance", "a second member joins: rebalance in progress, then both in")
def _rebalance(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    first_client, second_client = run.client(), run.client()
    first, generation = lone_member(run, group, first_client)
    asked = run.call(JOIN_GROUP, 9, join_body(group), second_client)
    second_join = start(run, second_client, JOIN_GROUP, 9, join_body(group, asked.member_id))
    # the join is sent but not answered: wait until the broker has taken it in
    body = {"groups": [group], "include_authorized_operations": False}
    run.until(
        lambda: run.quiet(DESCRIBE_GROUPS, 5, body),
        lambda answer: answer.groups[0].group_state == "PreparingRebalance",
    )
    heartbeat(run, group, generation, first)
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, generation, first), first_client)
    describe(run, group)  # preparing a rebalance: no protocol, metadata nor assignments
    # the first member rejoins: the join phase completes for both
    rejoined = run.call(JOIN_GROUP, 9, join_body(group, first), first_client)
    other = second_join()
    run.record("same generation", rejoined.generation_id == other.generation_id)
    run.record("leader", rejoined.leader == first)
    next_generation = int(rejoined.generation_id)
    heartbeat(run, group, next_generation, first)  # completing the rebalance: fine
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, next_generation, first), first_client)
    follower_sync = start(
        run, second_client, SYNC_GROUP, 5, sync_body(group, next_generation, asked.member_id)
    )
    assignments = [
        {"member_id": first, "assignment": assignment(topic, 0)},
        # (as long as the other: Kafka lists members in no set order)
        {"member_id": asked.member_id, "assignment": assignment(topic, 1)},
    ]
    run.call(
        SYNC_GROUP,
        5,
        sync_body(group, next_generation, first, assignments=assignments),
        first_client,
    )
    follower_sync()
    heartbeat(run, group, next_generation, asked.member_id)
    heartbeat(run, group, generation, first)
    describe(run, group)


@scenario("classic-group.static-members", "a static member restarts: the old id is fenced")
def _static_members(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    body = join_body(group, group_instance_id="i1")
    joined = run.call(JOIN_GROUP, 9, body)  # static members need no member id first
    old, generation = joined.member_id, int(joined.generation_id)
    mine = [{"member_id": old, "assignment": b"a"}]
    run.call(
        SYNC_GROUP,
        5,
        sync_body(group, generation, old, group_instance_id="i1", assignments=mine),
    )
    restarted = run.call(JOIN_GROUP, 9, body)
    new = restarted.member_id
    run.record("a new member id", new != old)
    heartbeat(run, group, generation, old, "i1")
    heartbeat(run, group, int(restarted.generation_id), new, "i1")
    run.call(SYNC_GROUP, 5, sync_body(group, generation, old, group_instance_id="i1"))
    commit = commit_body(group, topic, generation, old, group_instance_id="i1")
    run.call(OFFSET_COMMIT, 8, commit)
    run.call(JOIN_GROUP, 9, {**body, "member_id": old})
    describe(run, group)
    leave(run, group, (old, "i1"), ("", "i2"))
    leave(run, group, ("", "i1"))
    describe(run, group)


@scenario("classic-group.inconsistent-protocols", "a joiner or a sync with another protocol")
def _inconsistent(run: Run) -> None:
    group = run.name("g")
    ready(run, 0, group)
    me, generation = lone_member(run, group)
    run.call(JOIN_GROUP, 9, join_body(group, protocol_type="connect"))
    other = join_body(group, protocols=[{"name": "roundrobin", "metadata": b""}])
    run.call(JOIN_GROUP, 5, other)
    run.call(JOIN_GROUP, 9, join_body(group, me, protocol_type="connect"))
    run.call(JOIN_GROUP, 9, join_body(group, protocols=[]))
    run.call(SYNC_GROUP, 5, sync_body(group, generation, me, protocol_type="connect"))
    run.call(SYNC_GROUP, 5, sync_body(group, generation, me, protocol_name="roundrobin"))
    run.call(SYNC_GROUP, 5, sync_body(group, generation, me, protocol_type=None))
    heartbeat(run, group, generation, me)


@scenario("classic-group.invalid-group-id", "the classic group APIs with an empty group id")
def _invalid_group_id(run: Run) -> None:
    topic = run.name("t")
    quietly_create(run, topic)
    ready(run, 0, "")
    run.call(JOIN_GROUP, 9, join_body(""))
    run.call(JOIN_GROUP, 9, join_body("", "m"))
    run.call(SYNC_GROUP, 5, sync_body("", 1, "m"))
    heartbeat(run, "", 1, "m")
    leave(run, "", ("m", None))
    describe(run, "")
    run.call(OFFSET_COMMIT, 8, commit_body("", topic))
    asked = [{"name": topic, "partition_indexes": [0]}]
    run.call(
        OFFSET_FETCH, 8, {"groups": [{"group_id": "", "topics": asked}], "require_stable": False}
    )
    run.call(DELETE_GROUPS, 2, {"groups_names": [""]})


@scenario(
    "classic-group.member-id-required", "MEMBER_ID_REQUIRED, then joins with and without the id"
)
def _member_id_required(run: Run) -> None:
    group = run.name("g")
    ready(run, 0, group)
    asked = run.call(JOIN_GROUP, 9, join_body(group))
    run.record("an id was given", bool(asked.member_id))
    run.call(JOIN_GROUP, 4, join_body(group))
    # the id handed out is pending: a heartbeat or sync does not know it yet
    heartbeat(run, group, 0, asked.member_id)
    run.call(SYNC_GROUP, 5, sync_body(group, 0, asked.member_id))
    joined = run.call(JOIN_GROUP, 9, join_body(group, asked.member_id))
    run.record("joined with it", joined.member_id == asked.member_id)
    heartbeat(run, group, int(joined.generation_id), asked.member_id)


@scenario("classic-group.session-timeouts", "session timeouts outside the broker's bounds")
def _session_timeouts(run: Run) -> None:
    group = run.name("g")
    ready(run, 0, group)
    run.call(JOIN_GROUP, 9, join_body(group, session_timeout=5999))
    run.call(JOIN_GROUP, 9, join_body(group, session_timeout=1800001))
    run.call(JOIN_GROUP, 9, join_body(group, session_timeout=6000, rebalance_timeout=-1))
    run.call(
        JOIN_GROUP,
        0,
        {
            "group_id": group,
            "session_timeout": 0,
            "member_id": "",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )


def consumer_member(run: Run, group: str, topic: str) -> Any:
    body = {
        "group_id": group,
        "member_id": run.name("m"),
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": [topic],
        "server_assignor": None,
        "topic_partitions": [],
    }
    return run.quiet(CONSUMER_HEARTBEAT, 0, body)


def share_member(run: Run, group: str, topic: str) -> Any:
    body = {
        "group_id": group,
        "member_id": run.name("s"),
        "member_epoch": 0,
        "rack_id": None,
        "subscribed_topic_names": [topic],
    }
    return run.quiet(SHARE_HEARTBEAT, 1, body)


@scenario("classic-group.other-group-types", "classic APIs on a share group and a consumer group")
def _other_types(run: Run) -> None:
    share, consumer, topic = run.name("share"), run.name("consumer"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, share)
    ready(run, 0, consumer)
    share_member(run, share, topic)
    consumer_member(run, consumer, topic)
    for group in (share, consumer):
        run.call(JOIN_GROUP, 9, join_body(group, protocol_type="other"))
        heartbeat(run, group, 1, run.name("m"))
        run.call(SYNC_GROUP, 5, sync_body(group, 1, run.name("m")))
        leave(run, group, (run.name("x"), None))
        run.call(OFFSET_COMMIT, 8, commit_body(group, topic, -1, ""))
        asked = [{"name": topic, "partition_indexes": [0]}]
        fetch = {"groups": [{"group_id": group, "topics": asked}], "require_stable": False}
        run.call(OFFSET_FETCH, 8, fetch)
        removed = {
            "group_id": group,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}],
        }
        run.call(OFFSET_DELETE, 0, removed)
        describe(run, group)
    run.call(DELETE_GROUPS, 2, {"groups_names": [share]})
