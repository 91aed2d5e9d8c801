"""OffsetDelete (47), v0.

Removes committed offsets of a group. A partition of a topic the group's
members are subscribed to answers GROUP_SUBSCRIBED_TO_TOPIC; an unknown group
GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from broker.handlers.groups_common import on_group_shard

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: Any) -> Reply:
    partitions = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    code, answer = await on_group_shard(
        ctx, request.group_id, lambda s: s.delete_offsets(request.group_id, partitions)
    )
    top, codes = (code, {}) if code else answer
    return {
        "error_code": top,
        "throttle_time": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": codes.get((t.name, p.partition_index), 0),
                    }
                    for p in t.partitions
                ],
            }
            for t in request.topics
        ]
        if top == 0
        else [],
    }
