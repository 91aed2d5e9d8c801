"""Scenarios of the newer group protocols: ConsumerGroupHeartbeat and
ConsumerGroupDescribe (KIP-848), ShareGroupHeartbeat and ShareGroupDescribe
(KIP-932), each with the errors a member can run into."""

from __future__ import annotations

from typing import Any

from conformance.harness import Run, scenario
from conformance.scenarios_groups import ready
from conformance.scenarios_topics import quietly_create

CONSUMER_HEARTBEAT, CONSUMER_DESCRIBE, SHARE_HEARTBEAT, SHARE_DESCRIBE = 68, 69, 76, 77


def consumer_heartbeat(run: Run, group: str, member: str, epoch: int, **fields: Any) -> Any:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout": 30000,
        "subscribed_topic_names": None,
        "server_assignor": None,
        "topic_partitions": None,
        **fields,
    }
    return run.call(CONSUMER_HEARTBEAT, 0, body)


@scenario("consumer-group-heartbeat.errors", "a join, a fenced epoch, an unknown member, bad input")
def _consumer_heartbeat(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic, 2)
    ready(run, 0, group)
    member = run.name("member")  # (named by the run: messages quote it)
    joined = consumer_heartbeat(
        run, group, member, 0, subscribed_topic_names=[topic], topic_partitions=[]
    )
    epoch = int(joined.member_epoch)
    consumer_heartbeat(run, group, member, epoch + 3)
    consumer_heartbeat(run, group, run.name("stranger"), 1)
    consumer_heartbeat(run, group, member, 0)  # epoch 0 without a subscription
    consumer_heartbeat(run, group, "", 0, subscribed_topic_names=[topic], topic_partitions=[])
    consumer_heartbeat(run, "", member, 0, subscribed_topic_names=[topic], topic_partitions=[])
    consumer_heartbeat(
        run, group, member, -1, subscribed_topic_names=[topic], server_assignor="no-such"
    )
    consumer_heartbeat(run, group, member, -1)
    run.call(CONSUMER_DESCRIBE, 0, {"group_ids": [group], "include_authorized_operations": False})


def share_heartbeat(run: Run, group: str, member: str, epoch: int, **fields: Any) -> Any:
    body = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "rack_id": None,
        "subscribed_topic_names": None,
        **fields,
    }
    return run.call(SHARE_HEARTBEAT, 1, body)


@scenario("share-group-heartbeat.errors", "a join, a fenced epoch, an unknown member, bad input")
def _share_heartbeat(run: Run) -> None:
    group, topic = run.name("g"), run.name("t")
    quietly_create(run, topic, 2)
    ready(run, 0, group)
    member = run.name("member")
    joined = share_heartbeat(run, group, member, 0, subscribed_topic_names=[topic])
    epoch = int(joined.member_epoch)
    share_heartbeat(run, group, member, epoch + 3)
    share_heartbeat(run, group, run.name("stranger"), 1)
    share_heartbeat(run, group, member, 0)
    share_heartbeat(run, group, member, -2)
    share_heartbeat(run, group, member, 0, rack_id="", subscribed_topic_names=[topic])
    share_heartbeat(run, group, member, -1)
    run.call(SHARE_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})
