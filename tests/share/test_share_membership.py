"""Share-group membership: new partitions and subscription changes reach a running
ShareConsumer; `group.share.max.size` caps the members; a member that stops
heartbeating leaves the group after its session timeout."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka.admin import AdminClient, NewPartitions
from helpers.broker import BrokerFactory
from helpers.wire import WireClient

from share.sharing import FAST, earliest_group, poll_until, produce, share_consumer

SHARE_HEARTBEAT, SHARE_DESCRIBE = 76, 77
NONE, GROUP_MAX_SIZE_REACHED = 0, 81


def test_new_partitions_and_a_new_subscription_reach_the_member(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    broker = broker_factory(FAST)
    other = unique_topic + "-other"
    with WireClient(broker.bootstrap) as client:
        client.create_topic(unique_topic, 1)
        client.create_topic(other, 1)
    group = earliest_group(broker.bootstrap, unique_group)
    consumer = share_consumer(broker.bootstrap, group, [unique_topic])
    try:
        produce(broker.bootstrap, unique_topic, [b"p0"], partition=0)
        assert [d.value for d in poll_until(consumer, 1)] == [b"p0"]

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_partitions([NewPartitions(unique_topic, 2)]).values():
            future.result(timeout=15)
        produce(broker.bootstrap, unique_topic, [b"p1"], partition=1)
        got = poll_until(consumer, 1)
        assert [(d.partition, d.value) for d in got] == [(1, b"p1")]

        consumer.subscribe([unique_topic, other])
        produce(broker.bootstrap, other, [b"other"])
        assert [d.value for d in poll_until(consumer, 1)] == [b"other"]
    finally:
        consumer.close()


def heartbeat(client: WireClient, group: str, member: str, epoch: int, topics: Any) -> Any:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "subscribed_topic_names": topics,
    }
    return client.call(SHARE_HEARTBEAT, 1, body)


def members_of(client: WireClient, group: str) -> list[str]:
    described = client.call(SHARE_DESCRIBE, 1, {"group_ids": [group]}).groups[0]
    return sorted(m.member_id for m in described.members)


def test_max_size_and_session_timeout(
    broker_factory: BrokerFactory, unique_topic: str, unique_group: str
) -> None:
    broker = broker_factory({**FAST, "group.share.max.size": 2})
    with WireClient(broker.bootstrap) as client:
        client.create_topic(unique_topic, 1)
        epochs = {}
        for member in ("member-a", "member-b"):
            joined = heartbeat(client, unique_group, member, 0, [unique_topic])
            assert joined.error_code == NONE, joined
            epochs[member] = joined.member_epoch
        refused = heartbeat(client, unique_group, "member-c", 0, [unique_topic])
        assert refused.error_code == GROUP_MAX_SIZE_REACHED
        assert members_of(client, unique_group) == ["member-a", "member-b"]

        # member-a keeps heartbeating, member-b goes silent: gone after the session
        # timeout (6 s), and then there is room for member-c
        deadline = time.monotonic() + 20
        while members_of(client, unique_group) != ["member-a"]:
            assert time.monotonic() < deadline, members_of(client, unique_group)
            answer = heartbeat(client, unique_group, "member-a", epochs["member-a"], None)
            assert answer.error_code == NONE, answer
            epochs["member-a"] = answer.member_epoch
            time.sleep(0.5)
        assert heartbeat(client, unique_group, "member-c", 0, [unique_topic]).error_code == NONE
