"""OffsetCommit (8), v2-v8.

- Members commit with their generation and member id (ILLEGAL_GENERATION,
  UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS while the
  assignment is being handed out). A group with no members takes "simple"
  commits (generation -1, no member id), as from an admin or assign() user.
- Metadata longer than `offset.metadata.max.bytes`: OFFSET_METADATA_TOO_LARGE
  for that partition only. Unknown topics: UNKNOWN_TOPIC_OR_PARTITION.
- The last commit wins, even when it moves an offset backwards.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from broker.handlers.groups_common import on_group_shard
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 2, 8


async def handle(ctx: RequestContext, request: Any) -> Reply:
    topics = ctx.broker.topics
    offsets = {}
    unknown = set()
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if topics.partition(*tp) is None:
                unknown.add(tp)
            else:
                epoch = getattr(p, "committed_leader_epoch", -1)
                offsets[tp] = (p.committed_offset, epoch, p.committed_metadata)
    details = {
        "group_id": request.group_id,
        "generation": request.generation_id_or_member_epoch,
        "member_id": request.member_id,
        "group_instance_id": getattr(request, "group_instance_id", None),
        "offsets": offsets,
    }
    codes: dict[tuple[str, int], int] = {}
    if offsets:
        code, answer = await on_group_shard(
            ctx, request.group_id, lambda s: s.commit_offsets(details)
        )
        codes = {tp: code for tp in offsets} if code else answer
    return {
        "throttle_time": 0,
        "topics": [
            {
                "name": topic.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": ErrorCode.unknown_topic_or_partition
                        if (topic.name, p.partition_index) in unknown
                        else codes.get((topic.name, p.partition_index), 0),
                    }
                    for p in topic.partitions
                ],
            }
            for topic in request.topics
        ],
    }
