"""AdminClient group operations (Java and librdkafka): list, describe and delete
groups; list, alter and delete committed offsets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from helpers import java
from helpers.broker import Broker
from helpers.env import require_module
from helpers.topics import create_topic

from groups.members import RANGE, Members, all_partitions, wait_settled

require_module("confluent_kafka")

from confluent_kafka import (  # noqa: E402
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient  # noqa: E402

pytestmark = pytest.mark.timeout(120)
TIMEOUT = 15


def admin(b: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap})


def java_admin(b: Broker, command: str, *args: str) -> list[dict[str, Any]]:
    return java.admin(b.bootstrap, command, *args).records


def test_java_admin_groups_and_offsets(
    shared_broker: Broker, unique_topic: str, name_factory: Callable[[str], str]
) -> None:
    """A live group and an offsets-only group: list, describe, alter / list / delete
    offsets, delete groups (the live one refuses while it has members)."""
    b = shared_broker
    live, idle = name_factory("live"), name_factory("idle")
    create_topic(b.bootstrap, unique_topic, 2)
    t0, t1 = f"{unique_topic}:0", f"{unique_topic}:1"
    java_admin(
        b, "alter-group-offsets", "--group", idle, "--offset", f"{t0}=5", "--offset", f"{t1}=7"
    )
    offsets = java_admin(b, "group-offsets", "--group", idle)
    assert [(r["partition"], r["offset"]) for r in offsets] == [(0, 5), (1, 7)]

    with Members(b.bootstrap, live) as members:
        c0 = members.start("C0", [unique_topic], {"partition.assignment.strategy": RANGE})
        wait_settled([c0], all_partitions({unique_topic: 2}))
        c0.commit({t0: 3})

        listed = {r["group"]: r for r in java_admin(b, "list-groups")}
        assert listed[live]["state"].lower() == "stable" and not listed[live]["simple"]
        assert listed[idle]["state"].lower() == "empty"

        described = {
            r["group"]: r
            for r in java_admin(b, "describe-groups", "--group", live, "--group", idle)
        }
        d = described[live]
        assert d["state"].lower() == "stable" and d["assignor"] == "range"
        assert [m["client_id"] for m in d["members"]] == ["C0"]
        assert sorted(f"{a['topic']}:{a['partition']}" for a in d["members"][0]["assignment"]) == [
            t0,
            t1,
        ]
        assert described[idle]["state"].lower() == "empty" and described[idle]["members"] == []

        # offsets of a subscribed topic cannot be deleted; groups with members neither
        res = java_admin(b, "delete-group-offsets", "--group", live, "--partition", t0)
        assert res[0]["deleted"] is False
        assert res[0]["failure"]["type"].endswith("GroupSubscribedToTopicException"), res
        res = java_admin(b, "delete-groups", "--group", live)
        assert res[0]["deleted"] is False
        assert res[0]["failure"]["type"].endswith("GroupNotEmptyException"), res
        # altering the offsets of a live group is refused (UNKNOWN_MEMBER_ID)
        altered = java.admin(
            b.bootstrap, "alter-group-offsets", "--group", live, "--offset", f"{t0}=1", check=False
        )
        assert altered.error_type is not None, altered.describe()
        c0.close()

    # C0 has closed: the group is empty now
    assert [
        (r["partition"], r["offset"]) for r in java_admin(b, "group-offsets", "--group", live)
    ] == [(0, 3)]
    res = java_admin(b, "delete-group-offsets", "--group", live, "--partition", t0)
    assert res[0]["deleted"] is True, res
    assert java_admin(b, "group-offsets", "--group", live) == []
    res = java_admin(b, "delete-group-offsets", "--group", idle, "--partition", t1)
    assert res[0]["deleted"] is True
    assert [
        (r["partition"], r["offset"]) for r in java_admin(b, "group-offsets", "--group", idle)
    ] == [(0, 5)]

    res = java_admin(b, "delete-groups", "--group", live, "--group", idle)
    assert [r["deleted"] for r in res] == [True, True], res
    listed = {r["group"] for r in java_admin(b, "list-groups")}
    assert live not in listed and idle not in listed
    assert java_admin(b, "group-offsets", "--group", idle) == []
    res = java_admin(b, "delete-groups", "--group", idle)
    assert res[0]["failure"]["type"].endswith("GroupIdNotFoundException"), res


def test_librdkafka_admin_groups_and_offsets(
    shared_broker: Broker, unique_topic: str, unique_group: str
) -> None:
    b = shared_broker
    create_topic(b.bootstrap, unique_topic, 3)
    a = admin(b)
    request = ConsumerGroupTopicPartitions(
        unique_group, [TopicPartition(unique_topic, p, 10 * (p + 1)) for p in range(3)]
    )
    altered = a.alter_consumer_group_offsets([request])[unique_group].result(timeout=TIMEOUT)
    assert sorted((p.partition, p.offset) for p in altered.topic_partitions) == [
        (0, 10),
        (1, 20),
        (2, 30),
    ]
    assert all(p.error is None for p in altered.topic_partitions)

    listed = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(unique_group)])[
        unique_group
    ].result(timeout=TIMEOUT)
    assert sorted((p.partition, p.offset) for p in listed.topic_partitions) == [
        (0, 10),
        (1, 20),
        (2, 30),
    ]

    groups = a.list_consumer_groups().result(timeout=TIMEOUT)
    ours = [g for g in groups.valid if g.group_id == unique_group]
    assert len(ours) == 1 and ours[0].state == ConsumerGroupState.EMPTY
    assert not groups.errors

    desc = a.describe_consumer_groups([unique_group])[unique_group].result(timeout=TIMEOUT)
    assert desc.group_id == unique_group and desc.state == ConsumerGroupState.EMPTY
    assert desc.members == []

    deleted = a.delete_consumer_groups([unique_group])
    assert deleted[unique_group].result(timeout=TIMEOUT) is None
    listed = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(unique_group)])[
        unique_group
    ].result(timeout=TIMEOUT)
    assert listed.topic_partitions == [] or all(p.offset < 0 for p in listed.topic_partitions)
    with pytest.raises(Exception) as failure:
        a.delete_consumer_groups([unique_group])[unique_group].result(timeout=TIMEOUT)
    assert "GROUP_ID_NOT_FOUND" in str(failure.value), failure.value
