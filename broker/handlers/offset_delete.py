"""OffsetDelete (47), v0.

Removes committed offsets of a group. A partition of a topic the group's
members are subscribed to answers GROUP_SUBSCRIBED_TO_TOPIC; an unknown group
GROUP_ID_NOT_FOUND.

With ACLs: DELETE on the group (GROUP_AUTHORIZATION_FAILED for the whole request) and
READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions, which stay).
"""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.authorization import allowed_names
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: Any) -> Reply:
    if not ctx.allowed(Operation.DELETE, ResourceType.GROUP, request.group_id):
        return {
            "error_code": ErrorCode.group_authorization_failed,
            "throttle_time": 0,
            "topics": [],
        }
    readable = allowed_names(
        ctx, Operation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    partitions = [
        (t.name, p.partition_index)
        for t in request.topics
        if t.name in readable
        for p in t.partitions
    ]
    code, answer = await on_group_shard(
        ctx, request.group_id, lambda s: s.delete_offsets(request.group_id, partitions)
    )
    top, codes = (code, {}) if code else answer
    unreadable = ErrorCode.topic_authorization_failed
    return {
        "error_code": top,
        "throttle_time": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": codes.get((t.name, p.partition_index), 0)
                        if t.name in readable
                        else unreadable,
                    }
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ]
        if top == 0
        else [],
    }
