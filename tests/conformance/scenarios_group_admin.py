"""Scenarios of offsets and group administration: OffsetCommit and OffsetFetch across
versions and their errors, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete and
FindCoordinator's versions and keys."""

from __future__ import annotations

import base64
import dataclasses
import uuid
from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_admin import until_known
from conformance.scenarios_classic_groups import (
    commit_body,
    consumer_member,
    describe,
    join_body,
    lone_member,
    share_member,
    subscription,
)
from conformance.scenarios_groups import ready
from conformance.scenarios_topics import quietly_create

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP = 8, 9, 10, 11
LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE, METADATA = 16, 42, 47, 3


def commit_partitions(
    run: Run, group: str, topics: dict[str, list[tuple[int, str | None]]], version: int = 8
) -> Any:
    """A simple commit (no member) of offset 5 with the given metadata per partition."""
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": index,
                        "committed_offset": 5,
                        "committed_leader_epoch": -1,
                        "committed_metadata": metadata,
                    }
                    for index, metadata in partitions
                ],
            }
            for topic, partitions in topics.items()
        ],
    }
    return run.call(OFFSET_COMMIT, version, body)


def fetch_groups(
    run: Run,
    *groups: tuple[str, dict[str, list[int]] | None],
    version: int = 8,
    member: dict[str, Any] | None = None,
    require_stable: bool = False,
) -> Any:
    body = {
        "groups": [
            {
                "group_id": group,
                "topics": None
                if topics is None
                else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                **(member or {}),
            }
            for group, topics in groups
        ],
        "require_stable": require_stable,
    }
    return run.call(OFFSET_FETCH, version, body)


@scenario("offset-commit.metadata-size", "metadata at and over offset.metadata.max.bytes (4096)")
def _metadata_size(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic, 6)
    ready(run, 0, group)
    partitions = [
        (0, "x" * 4096),
        (1, "x" * 4097),
        (2, "é" * 4096),  # 8192 bytes, 4096 characters
        (3, "\U0001f600" * 2048),  # 4096 UTF-16 units
        (4, "\U0001f600" * 2049),
        (5, ""),
    ]
    commit_partitions(run, group, {topic: partitions})
    answer = run.quiet(
        OFFSET_FETCH,
        8,
        {
            "groups": [
                {
                    "group_id": group,
                    "topics": [{"name": topic, "partition_indexes": [0, 1, 2, 3, 4, 5]}],
                }
            ],
            "require_stable": False,
        },
    )
    kept = answer.groups[0].topics[0].partitions
    run.record(
        "committed", [(p.partition_index, p.committed_offset, len(p.metadata)) for p in kept]
    )


@scenario("offset-commit.unknown-partitions", "unknown topics and partitions beside a good one")
def _commit_unknown(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic, 2)
    ready(run, 0, group)
    commit_partitions(
        run,
        group,
        {topic: [(0, None), (1, None), (2, None), (-1, None)], run.name("none"): [(0, None)]},
    )
    fetch_groups(run, (group, {topic: [0, 1, 2], run.name("none"): [0]}))
    fetch_groups(run, (group, None))


@scenario("offset-commit.versions", "simple commits with OffsetCommit v2 to v8")
def _commit_versions(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    for version in (2, 3, 4, 5, 6, 7, 8):
        partition: dict[str, Any] = {
            "partition_index": 0,
            "committed_offset": version,
            "committed_metadata": f"v{version}",
        }
        body: dict[str, Any] = {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [{"name": topic, "partitions": [partition]}],
        }
        if version <= 4:
            body["retention_time"] = 60000 if version == 2 else -1
        if version >= 6:
            partition["committed_leader_epoch"] = 0
        if version >= 7:
            body["group_instance_id"] = None
        run.call(OFFSET_COMMIT, version, body)
        fetch_groups(run, (group, {topic: [0]}))


@scenario(
    "offset-commit.unknown-group-generation", "a member's commit to a group that does not exist"
)
def _commit_unknown_group(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, 1, "m"))
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, -1, "m"))
    run.call(OFFSET_COMMIT, 8, commit_body(group, topic, 0, ""))
    fetch_groups(run, (group, {topic: [0]}))
    describe(run, group, version=6)


@scenario("offset-fetch.versions", "OffsetFetch v1 to v9, one group or several")
def _fetch_versions(run: Run) -> None:
    group, topic, unknown = run.name("g"), run.name("t"), run.name("none")
    quietly_create(run, topic, 2)
    ready(run, 0, group)
    ready(run, 0, unknown)
    commit_partitions(run, group, {topic: [(0, "m")]})
    asked = [{"name": topic, "partition_indexes": [0, 1]}]
    run.call(OFFSET_FETCH, 1, {"group_id": group, "topics": asked})
    for version in (2, 5, 6):
        run.call(OFFSET_FETCH, version, {"group_id": group, "topics": None})
        run.call(OFFSET_FETCH, version, {"group_id": unknown, "topics": asked})
    run.call(OFFSET_FETCH, 7, {"group_id": group, "topics": asked, "require_stable": True})
    # several groups: Kafka answers them in the order asked
    fetch_groups(run, (group, {topic: [0]}), (unknown, None), (unknown, {topic: [1]}))
    fetch_groups(
        run, (group, {topic: [0]}), version=9, member={"member_id": None, "member_epoch": -1}
    )
    fetch_groups(
        run, (group, {topic: [0]}), version=9, member={"member_id": "m", "member_epoch": 3}
    )


@scenario("offset-fetch.classic-member", "OffsetFetch v9 naming a classic group's member")
def _fetch_classic_member(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, group)
    me, generation = lone_member(run, group)
    run.quiet(OFFSET_COMMIT, 8, commit_body(group, topic, generation, me))
    for member_id, epoch in ((me, generation), (me, generation + 1), ("stranger", -1), (None, -1)):
        fetch_groups(
            run,
            (group, {topic: [0]}),
            version=9,
            member={"member_id": member_id, "member_epoch": epoch},
        )


@scenario("describe-groups.cases", "DescribeGroups v0-v6: unknown, empty, stable, rebalancing")
def _describe(run: Run) -> None:
    empty, stable, unknown, topic = run.name("e"), run.name("s"), run.name("u"), run.name("t")
    quietly_create(run, topic)
    for group in (empty, stable, unknown):
        ready(run, 0, group)
    commit_partitions(run, empty, {topic: [(0, None)]})
    lone_member(run, stable, metadata=subscription(topic))
    # one group a request: Kafka answers several in the order of its coordinator shards
    for version in (0, 3, 5, 6):
        for group in (empty, stable, unknown):
            body = {"groups": [group], "include_authorized_operations": version >= 3}
            run.call(15, version, body)
    describe(run, "", version=6)
    describe(run, stable, stable, version=6)


@scenario("describe-groups.other-types", "DescribeGroups v6 of a consumer group and a share group")
def _describe_other_types(run: Run) -> None:
    share, consumer, topic = run.name("share"), run.name("consumer"), run.name("t")
    quietly_create(run, topic)
    ready(run, 0, share)
    ready(run, 0, consumer)
    share_member(run, share, topic)
    consumer_member(run, consumer, topic)
    describe(run, share, version=6)
    describe(run, consumer, version=6)


def listed(run: Run, version: int, body: dict[str, Any]) -> None:
    """ListGroups, keeping only this run's groups of the answer (the broker is shared)."""
    answer = run.quiet(LIST_GROUPS, version, body)
    mine = sorted(
        (g for g in answer.groups if g.group_id.startswith(run.prefix)), key=lambda g: g.group_id
    )
    shown = {"error_code": answer.error_code, "groups": mine}
    run.steps.append({"api": LIST_GROUPS, "version": version, "answer": shown})


@scenario("list-groups.filters", "ListGroups v0-v5 with state and type filters")
def _list_groups(run: Run) -> None:
    empty, stable, share, consumer = (
        run.name(x) for x in ("a-empty", "b-stable", "c-share", "d-consumer")
    )
    topic = run.name("t")
    quietly_create(run, topic)
    for group in (empty, stable, share, consumer):
        ready(run, 0, group)
    commit_partitions(run, empty, {topic: [(0, None)]})
    lone_member(run, stable)
    share_member(run, share, topic)
    consumer_member(run, consumer, topic)
    listed(run, 0, {})
    listed(run, 3, {})
    for states in (["Stable"], ["empty", " STABLE "], ["Bogus"], []):
        listed(run, 4, {"states_filter": states})
    for types in (["classic"], ["Consumer", "share"], ["bogus"], ["streams"]):
        listed(run, 5, {"states_filter": [], "types_filter": types})
    listed(run, 5, {"states_filter": ["Empty"], "types_filter": ["classic"]})


@scenario(
    "delete-groups.cases", "DeleteGroups: non-empty, with offsets only, unknown, deleted twice"
)
def _delete_groups(run: Run) -> None:
    empty, busy, unknown, topic = run.name("e"), run.name("b"), run.name("u"), run.name("t")
    quietly_create(run, topic)
    for group in (empty, busy, unknown):
        ready(run, 0, group)
    commit_partitions(run, empty, {topic: [(0, None)]})
    lone_member(run, busy)
    for version in (0, 1, 2, 3):
        for group in (busy, unknown):
            run.call(DELETE_GROUPS, version, {"groups_names": [group]})
    run.call(DELETE_GROUPS, 3, {"groups_names": [empty]})
    run.call(DELETE_GROUPS, 3, {"groups_names": [empty]})
    run.call(DELETE_GROUPS, 3, {"groups_names": [""]})
    fetch_groups(run, (empty, {topic: [0]}))
    describe(run, empty, version=6)
    run.call(DELETE_GROUPS, 3, {"groups_names": [busy, busy]})


def offset_delete(run: Run, group: str, topics: dict[str, list[int]]) -> Any:
    body = {
        "group_id": group,
        "topics": [
            {"name": t, "partitions": [{"partition_index": p} for p in ps]}
            for t, ps in topics.items()
        ],
    }
    return run.call(OFFSET_DELETE, 0, body)


@scenario("offset-delete.cases", "OffsetDelete of subscribed, unsubscribed and unknown topics")
def _offset_delete(run: Run) -> None:
    group, subscribed, other = run.name("g"), run.name("sub"), run.name("other")
    quietly_create(run, subscribed, 2)
    quietly_create(run, other)
    ready(run, 0, group)
    commit_partitions(run, group, {subscribed: [(0, None)], other: [(0, None)]})
    lone_member(run, group, metadata=subscription(subscribed))
    offset_delete(run, group, {subscribed: [0, 1], other: [0, 3], run.name("none"): [0]})
    fetch_groups(run, (group, {subscribed: [0], other: [0]}))
    offset_delete(run, run.name("unknown"), {other: [0]})
    offset_delete(run, "", {other: [0]})
    # a group whose members speak another protocol than "consumer": nothing is subscribed
    connect = run.name("connect")
    ready(run, 0, connect)
    run.quiet(JOIN_GROUP, 9, join_body(connect, group_instance_id="c", protocol_type="connect"))
    commit_partitions(run, connect, {other: [(0, None)]})
    offset_delete(run, connect, {other: [0]})


def find(run: Run, version: int, **body: Any) -> Any:
    return run.call(FIND_COORDINATOR, version, body)


@scenario("find-coordinator.versions", "FindCoordinator v0-v3 with one key, of each type")
def _find_versions(run: Run) -> None:
    group, txn = run.name("g"), run.name("t")
    ready(run, 0, group)
    ready(run, 1, txn)
    find(run, 0, key=group)
    find(run, 0, key="")
    for version in (1, 2, 3):
        find(run, version, key=group, key_type=0)
        find(run, version, key=txn, key_type=1)
        find(run, version, key="", key_type=0)
        find(run, version, key="", key_type=1)
        find(run, version, key=group, key_type=2)
        find(run, version, key=group, key_type=-1)


@scenario("find-coordinator.several-keys", "FindCoordinator v4 with several keys, good and bad")
def _find_several(run: Run) -> None:
    a, b, txn = run.name("a"), run.name("b"), run.name("t")
    ready(run, 0, a)
    ready(run, 0, b)
    ready(run, 1, txn)
    find(run, 4, key_type=0, coordinator_keys=[a, b])
    find(run, 4, key_type=0, coordinator_keys=[a, "", b])
    find(run, 4, key_type=1, coordinator_keys=[txn, ""])
    find(run, 4, key_type=0, coordinator_keys=[])
    find(run, 5, key_type=1, coordinator_keys=[txn, txn])


def find_share(run: Run, version: int, key: str, topic_id: str, hex_id: str) -> None:
    """FindCoordinator of one share key, kept with the topic id made neutral (it differs
    between brokers)."""
    answer = run.quiet(FIND_COORDINATOR, version, {"key_type": 2, "coordinator_keys": [key]})
    neutral = tuple(
        dataclasses.replace(c, key=c.key.replace(topic_id, "<topic id>").replace(hex_id, "<hex>"))
        for c in answer.coordinators
    )
    kept = dataclasses.replace(answer, coordinators=neutral)
    run.steps.append({"api": FIND_COORDINATOR, "version": version, "answer": kept})


@scenario("find-coordinator.share-keys", "FindCoordinator v6 share keys: group:topicId:partition")
def _find_share(run: Run) -> None:
    topic, group = run.name("t"), run.name("g")
    quietly_create(run, topic, 2)
    body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    raw_id = run.quiet(METADATA, 12, body).topics[0].topic_id
    topic_id = base64.urlsafe_b64encode(raw_id.bytes).decode().rstrip("=")  # Kafka's form
    good = f"{group}:{topic_id}:1"
    run.until(
        lambda: run.quiet(FIND_COORDINATOR, 6, {"key_type": 2, "coordinator_keys": [good]}),
        lambda answer: answer.coordinators[0].error_code == 0,
        timeout=30,
    )
    for key in (
        good,
        f"{group}:{topic_id}",
        f"{group}:{raw_id}:0",  # the id's hexadecimal form
        f"{group}:{topic_id}:x",
        f"{group}:{topic_id}:-1",
        f":{topic_id}:0",
        f"{group}:{topic_id}:0:0",
        f"a:b:{group}:{topic_id}:0",
        "",
    ):
        find_share(run, 6, key, topic_id, str(raw_id))
    find_share(run, 5, good, topic_id, str(raw_id))


@scenario("offsets.by-topic-id", "OffsetCommit and OffsetFetch v10: topics by id, unknown ids")
def _offsets_by_topic_id(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic, 2)
    ready(run, 0, group)
    known = until_known(run, topic, 2).topics[0].topic_id
    unknown = uuid.uuid4()

    def partitions(*indexes: int) -> list[dict[str, Any]]:
        return [
            {
                "partition_index": index,
                "committed_offset": 7,
                "committed_leader_epoch": -1,
                "committed_metadata": "m",
            }
            for index in indexes
        ]

    commit = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {"topic_id": known, "partitions": partitions(0, 5)},
            {"topic_id": unknown, "partitions": partitions(0)},
            {"topic_id": uuid.UUID(int=0), "partitions": partitions(1)},
        ],
    }
    run.call(OFFSET_COMMIT, 10, commit)
    commit["topics"] = [{"topic_id": known, "partitions": partitions(1)}]
    run.call(OFFSET_COMMIT, 10, commit)
    asked = [
        {"topic_id": unknown, "partition_indexes": [0]},
        {"topic_id": known, "partition_indexes": [0, 1, 3]},
    ]
    body = {"groups": [{"group_id": group, "topics": asked}], "require_stable": False}
    answer = run.call(OFFSET_FETCH, 10, body)
    run.record("ids answered", [t.topic_id == known for t in answer.groups[0].topics])
    every = {"groups": [{"group_id": group, "topics": None}], "require_stable": False}
    answer = run.call(OFFSET_FETCH, 10, every)
    run.record("ids of every topic", [t.topic_id == known for t in answer.groups[0].topics])
    run.call(
        OFFSET_FETCH, 10, {**body, "groups": [{"group_id": run.name("none"), "topics": asked}]}
    )
