"""ConsumerGroupDescribe (69), v0-v1: consumer-protocol groups with their epochs, the
assignor, and each member's subscription, current and target assignment. A group id
that is not a consumer group answers GROUP_ID_NOT_FOUND. With ACLs a group needs
DESCRIBE on it (GROUP_AUTHORIZATION_FAILED); its authorized operations when asked for."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import describe_each, described_group, missing_group

MIN_VERSION, MAX_VERSION = 0, 1
# v0 and v1 have the same fields: typed as the newest


async def handle(ctx: RequestContext, request: ConsumerGroupDescribeRequest) -> Reply:
    groups = await describe_each(ctx, request, _describe, _described, missing_group)
    return {"throttle_time": 0, "groups": groups}


def _describe(group_id: str) -> Callable[[Any], Any]:
    return lambda shard: shard.describe_consumer_group(group_id)


def _assignment(
    parts: Mapping[uuid.UUID, frozenset[int]], names: Mapping[uuid.UUID, str]
) -> dict[str, Any]:
    return {
        "topic_partitions": [
            {"topic_id": topic_id, "topic_name": names.get(topic_id, ""), "partitions": sorted(p)}
            for topic_id, p in sorted(parts.items())
        ]
    }


def _described(group: dict[str, Any]) -> dict[str, Any]:
    names = group["topic_names"]
    members = [
        {
            "member_id": m["member_id"],
            "instance_id": m["instance_id"],
            "rack_id": m["rack_id"],
            "member_epoch": m["member_epoch"],
            "client_id": m["client_id"],
            "client_host": m["client_host"],
            "subscribed_topic_names": list(m["subscribed_topic_names"]),
            "subscribed_topic_regex": m["subscribed_topic_regex"] or "",
            "assignment": _assignment(m["assignment"], names),
            "target_assignment": _assignment(m["target_assignment"], names),
            "member_type": 0 if m["classic"] else 1,  # classic or consumer protocol
        }
        for m in group["members"]
    ]
    return described_group(group, members)
