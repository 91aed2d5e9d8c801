"""Scenarios of a share group's offsets, DescribeShareGroupOffsets (90),
AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92), and of the share-state
APIs a share coordinator serves its brokers (83-87) sent by a client."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_data import batch
from conformance.scenarios_fetch import topic_id, write
from conformance.scenarios_groups import NOT_READY, join, ready
from conformance.scenarios_share import ACCEPT, RELEASE, ShareMember, share_group
from conformance.scenarios_topics import quietly_create

FIND_COORDINATOR, SHARE_HEARTBEAT = 10, 76
INITIALIZE, READ, WRITE, DELETE, READ_SUMMARY = 83, 84, 85, 86, 87
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
SHARE_KEY = 2
STRANGER = uuid.UUID("8f4e1a52-1cf5-4d2b-9f8c-0123456789ab")


def describe_offsets(run: Run, group: str, topics: dict[str, list[int]] | None) -> Any:
    asked = (
        None if topics is None else [{"topic_name": t, "partitions": p} for t, p in topics.items()]
    )
    body = {"groups": [{"group_id": group, "topics": asked}]}
    return run.call(DESCRIBE_OFFSETS, 1, body)


def alter_offsets(run: Run, group: str, topic: str, offsets: dict[int, int]) -> Any:
    partitions = [{"partition_index": p, "start_offset": o} for p, o in offsets.items()]
    body = {"group_id": group, "topics": [{"topic_name": topic, "partitions": partitions}]}
    return run.call(ALTER_OFFSETS, 0, body)


def delete_offsets(run: Run, group: str, *topics: str) -> Any:
    body = {"group_id": group, "topics": [{"topic_name": t} for t in topics]}
    return run.call(DELETE_OFFSETS, 0, body)


def consumed(run: Run, records: int = 5, accepted: int = 3) -> tuple[str, str, ShareMember]:
    """A share group whose member acquired `records` records, accepted the first
    `accepted` and released the others, once the group's offsets show it. (Kafka
    writes a share-partition's start offset as it was before the acknowledgements
    being written moved it: only the release, written next, makes the start the same
    on both brokers; see `share-offsets.acknowledged-start`.)"""
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(records))
    group = share_group(run)
    member = ShareMember(run, group, [name])
    member.join(1)
    tid = topic_id(run, name)
    member.acquire(tid, records)
    member.acknowledge({(tid, 0): [(0, accepted - 1, ACCEPT)]}, quiet=True)
    member.acknowledge({(tid, 0): [(accepted, records - 1, RELEASE)]}, quiet=True)
    asked = {"groups": [{"group_id": group, "topics": [{"topic_name": name, "partitions": [0]}]}]}
    run.until(
        lambda: run.quiet(DESCRIBE_OFFSETS, 1, asked),
        lambda answer: answer.groups[0].topics[0].partitions[0].start_offset == accepted,
    )
    return group, name, member


def leave(member: ShareMember) -> None:
    answer = member.run.quiet(SHARE_HEARTBEAT, 1, member.heartbeat_body(epoch=-1))
    assert answer.error_code == 0, answer


@scenario("describe-share-group-offsets.cases", "a group's offsets and lag; unknown ones")
def _describe(run: Run) -> None:
    group, name, _member = consumed(run)
    describe_offsets(run, group, {name: [0]})
    describe_offsets(run, group, None)
    describe_offsets(run, group, {run.name("none"): [0]})
    describe_offsets(run, run.name("none"), {name: [0]})
    describe_offsets(run, "", {name: [0]})
    classic = run.name("classic")
    ready(run, 0, classic)
    first = join(run, classic)
    join(run, classic, first.member_id)
    describe_offsets(run, classic, {name: [0]})


@scenario("alter-share-group-offsets.cases", "an empty group's start moved; refusals")
def _alter(run: Run) -> None:
    group, name, member = consumed(run)
    alter_offsets(run, group, name, {0: 1})  # the member is still in the group
    leave(member)
    alter_offsets(run, group, name, {0: 1})
    describe_offsets(run, group, {name: [0]})
    alter_offsets(run, group, name, {0: 2, 4: 0})
    alter_offsets(run, group, run.name("none"), {0: 0})
    alter_offsets(run, run.name("new"), name, {0: 3})  # a share group made by its offsets
    alter_offsets(run, "", name, {0: 0})


@scenario("delete-share-group-offsets.cases", "an empty group's offsets deleted; refusals")
def _delete(run: Run) -> None:
    group, name, member = consumed(run)
    delete_offsets(run, group, name)  # the member is still in the group
    leave(member)
    delete_offsets(run, group, name)
    delete_offsets(run, group, name, run.name("none"))
    describe_offsets(run, group, {name: [0]})
    delete_offsets(run, run.name("none"), name)
    delete_offsets(run, "", name)


def state_ready(run: Run, group: str, tid: uuid.UUID) -> None:
    """Until the share coordinator of (group, topic, 0) is found and loaded."""
    key = f"{group}:{base64.urlsafe_b64encode(tid.bytes).rstrip(b'=').decode()}:0"
    found = run.until(
        lambda: run.quiet(FIND_COORDINATOR, 6, {"key_type": SHARE_KEY, "coordinator_keys": [key]}),
        lambda answer: answer.coordinators[0].error_code == 0,
        timeout=30,
    )
    assert found.coordinators[0].error_code == 0, found
    run.until(
        lambda: run.quiet(READ_SUMMARY, 1, state_body(group, tid, leader_epoch=0)),
        lambda answer: answer.results[0].partitions[0].error_code not in NOT_READY,
        timeout=30,
    )


def state_body(group: str, tid: uuid.UUID, **partition: Any) -> dict[str, Any]:
    return {
        "group_id": group,
        "topics": [{"topic_id": tid, "partitions": [{"partition": 0, **partition}]}],
    }


@scenario(
    "share-group-state.lifecycle", "InitializeShareGroupState, Read, Write, ReadSummary, Delete"
)
def _state(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    group, tid = run.name("g"), topic_id(run, name)
    state_ready(run, group, tid)
    run.call(INITIALIZE, 0, state_body(group, tid, state_epoch=1, start_offset=10))
    run.call(READ, 0, state_body(group, tid, leader_epoch=0))
    batches = [  # (nothing acknowledged at the start: see share-offsets.acknowledged-start)
        {"first_offset": 10, "last_offset": 12, "delivery_state": 0, "delivery_count": 1},
        {"first_offset": 13, "last_offset": 14, "delivery_state": 2, "delivery_count": 2},
    ]
    written = state_body(
        group,
        tid,
        state_epoch=1,
        leader_epoch=0,
        start_offset=10,
        delivery_complete_count=2,
        state_batches=batches,
    )
    run.call(WRITE, 1, written)
    run.call(READ, 0, state_body(group, tid, leader_epoch=0))
    run.call(READ_SUMMARY, 1, state_body(group, tid, leader_epoch=0))
    run.call(DELETE, 0, state_body(group, tid))
    run.call(READ, 0, state_body(group, tid, leader_epoch=0))


@scenario("share-group-state.errors", "uninitialised state, stale epochs, bad input")
def _state_errors(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    group, tid = run.name("g"), topic_id(run, name)
    state_ready(run, group, tid)
    run.call(READ, 0, state_body(group, tid, leader_epoch=0))
    run.call(READ_SUMMARY, 1, state_body(group, tid, leader_epoch=0))
    run.call(INITIALIZE, 0, state_body(group, tid, state_epoch=2, start_offset=5))
    run.call(INITIALIZE, 0, state_body(group, tid, state_epoch=1, start_offset=5))
    stale = state_body(
        group,
        tid,
        state_epoch=1,
        leader_epoch=0,
        start_offset=-1,
        delivery_complete_count=0,
        state_batches=[],
    )
    run.call(WRITE, 1, stale)
    run.call(READ, 0, state_body(group, tid, leader_epoch=-5))
    run.call(INITIALIZE, 0, state_body("", tid, state_epoch=1, start_offset=0))
    run.call(READ, 0, state_body(group, STRANGER, leader_epoch=0))
    run.call(READ_SUMMARY, 1, state_body(group, STRANGER, leader_epoch=0))
    run.call(DELETE, 0, state_body(group, STRANGER))
    body = state_body(group, tid, state_epoch=1, start_offset=0)
    body["topics"][0]["partitions"][0]["partition"] = -1
    run.call(INITIALIZE, 0, body)
    run.call(DELETE, 0, {"group_id": group, "topics": []})


@scenario(
    "share-offsets.acknowledged-start",
    "records acknowledged at a share-partition's start, as its state and offsets show",
)
def _acknowledged_start(run: Run) -> None:
    name = run.name("t")
    quietly_create(run, name)
    write(run, name, batch(5))
    group = share_group(run)
    member = ShareMember(run, group, [name])
    member.join(1)
    tid = topic_id(run, name)
    member.acquire(tid, 5)
    member.acknowledge({(tid, 0): [(0, 2, ACCEPT)]}, quiet=True)
    asked = {"groups": [{"group_id": group, "topics": [{"topic_name": name, "partitions": [0]}]}]}
    run.until(  # (Kafka writes the state a moment after it answers)
        lambda: run.quiet(DESCRIBE_OFFSETS, 1, asked),
        lambda answer: answer.groups[0].topics[0].partitions[0].lag == 2,
    )
    run.call(DESCRIBE_OFFSETS, 1, asked)
    other = run.name("other")
    state_ready(run, other, tid)
    run.call(INITIALIZE, 0, state_body(other, tid, state_epoch=1, start_offset=0))
    acknowledged = [
        {"first_offset": 0, "last_offset": 1, "delivery_state": 2, "delivery_count": 1},
        {"first_offset": 2, "last_offset": 3, "delivery_state": 0, "delivery_count": 1},
    ]
    written = state_body(
        other,
        tid,
        state_epoch=1,
        leader_epoch=0,
        start_offset=-1,
        delivery_complete_count=2,
        state_batches=acknowledged,
    )
    run.call(WRITE, 1, written)
    run.call(READ, 0, state_body(other, tid, leader_epoch=0))
