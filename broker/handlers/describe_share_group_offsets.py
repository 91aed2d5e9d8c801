"""DescribeShareGroupOffsets (90), v0-v1: each share-partition's start offset (the
first record not yet delivered for good), its leader epoch and (v1) its lag.

- A group that is not a share group answers GROUP_ID_NOT_FOUND; null topics mean every
  topic the group has state for. A partition without state answers start offset -1.
- With ACLs: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
  (TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.handlers.base import Reply, RequestContext
from broker.handlers.share_admin import group_problem, lag, read_state, topic_problem
from broker.security.resources import Operation
from coordinator.share.records import ShareKey
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1


async def handle(ctx: RequestContext, request: Any) -> Reply:
    groups = []
    for group in request.groups:
        problem = await group_problem(ctx, group.group_id, Operation.DESCRIBE, must_be_empty=False)
        if problem is not None:
            code, message = problem
            groups.append(
                {
                    "group_id": group.group_id,
                    "topics": [],
                    "error_code": code,
                    "error_message": message,
                }
            )
            continue
        wanted = _wanted(ctx, group)
        topics = [await _topic(ctx, group.group_id, name, parts) for name, parts in wanted]
        groups.append(
            {
                "group_id": group.group_id,
                "topics": topics,
                "error_code": ErrorCode.none,
                "error_message": None,
            }
        )
    return {"throttle_time": 0, "groups": groups}


def _wanted(ctx: RequestContext, group: Any) -> list[tuple[str, list[int]]]:
    if group.topics is not None:
        return [(t.topic_name, list(t.partitions)) for t in group.topics]
    by_topic: dict[uuid.UUID, list[int]] = {}
    for key in ctx.broker.share.keys_of_group(group.group_id):
        by_topic.setdefault(key.topic_id, []).append(key.partition)
    wanted = []
    for topic_id, partitions in by_topic.items():
        topic = ctx.broker.topics.by_id(topic_id)
        if topic is not None:
            wanted.append((topic.name, sorted(partitions)))
    return sorted(wanted)


async def _topic(
    ctx: RequestContext, group_id: str, name: str, partitions: list[int]
) -> dict[str, Any]:
    topic, code = topic_problem(ctx, name, Operation.DESCRIBE)
    answers = []
    for index in partitions:
        answer: dict[str, Any] = {
            "partition_index": index,
            "start_offset": -1,
            "leader_epoch": -1,
            "lag": -1,
            "error_code": code,
            "error_message": None,
        }
        if topic is not None and not 0 <= index < len(topic.partitions):
            answer["error_code"] = ErrorCode.unknown_topic_or_partition
        elif topic is not None:
            state = await read_state(ctx, ShareKey(group_id, topic.topic_id, index))
            if state is not None:
                partition = topic.partitions[index]
                answer["start_offset"] = state["start_offset"]
                answer["leader_epoch"] = max(state["leader_epoch"], 0)
                if partition.hosted:  # (a cluster: the end is known where a replica is)
                    answer["lag"] = lag(state, partition.high_watermark)
        answers.append(answer)
    return {
        "topic_name": name,
        "topic_id": topic.topic_id if topic is not None else uuid.UUID(int=0),
        "partitions": answers,
    }
