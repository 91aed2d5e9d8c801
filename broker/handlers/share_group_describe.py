"""ShareGroupDescribe (77), v1: share groups with their epochs, the assignor and each
member's subscription and assignment. A group id that is not a share group answers
GROUP_ID_NOT_FOUND. With ACLs a group needs DESCRIBE on it (GROUP_AUTHORIZATION_FAILED);
its authorized operations when asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.consumer_group_describe import _assignment
from odradek.broker.handlers.groups_common import describe_each, described_group, missing_group

MIN_VERSION, MAX_VERSION = 1, 1


async def handle(ctx: RequestContext, request: ShareGroupDescribeRequest) -> Reply:
    groups = await describe_each(ctx, request, _describe, _described, missing_group)
    return {"throttle_time": 0, "groups": groups}


def _describe(group_id: str) -> Callable[[Any], Any]:
    return lambda shard: shard.describe_share_group(group_id)


def _described(group: dict[str, Any]) -> dict[str, Any]:
    names = group["topic_names"]
    members = [
        {
            "member_id": m.member_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed_topic_names),
            "assignment": _assignment(m.assigned, names),
        }
        for m in group["members"]
    ]
    return described_group(group, members)
