"""DescribeShareGroupOffsets (90), v0-v1: each share-partition's start offset (the
first record not yet delivered for good), its leader epoch and (v1) its lag.

- As on Kafka, the group is not looked up: a partition without state (of a group that
  does not exist, of another kind, or of an unknown topic) answers start offset and
  lag -1. Null topics mean every topic the group has state for. The lag is the log end
  less the start less what is done, negative when the start lies past the end. An
  empty group id answers UNKNOWN_SERVER_ERROR, as Kafka fails on it.
- With ACLs: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
  (TOPIC_AUTHORIZATION_FAILED for its partitions).
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_admin import lag, read_state, topic_problem
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.share.records import ShareKey
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 0, 1
# v0 and v1 have the same fields: typed as the newest


async def handle(ctx: RequestContext, request: DescribeShareGroupOffsetsRequest) -> Reply:
    groups = []
    for group in request.groups:
        if not ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, group.group_id):
            groups.append(
                {
                    "group_id": group.group_id,
                    "topics": [],
                    "error_code": ErrorCode.group_authorization_failed,
                    "error_message": None,
                }
            )
            continue
        if not group.group_id:  # Kafka fails on an empty group id
            failed = ErrorCode.unknown_server_error
            groups.append(
                {
                    "group_id": "",
                    "topics": [],
                    "error_code": failed,
                    "error_message": default_message(failed),
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


def _wanted(
    ctx: RequestContext, group: DescribeShareGroupOffsetsRequestGroup
) -> list[tuple[str, list[int]]]:
    if group.topics is not None:
        return [(t.topic_name, list(t.partitions)) for t in group.topics]
    by_topic: dict[uuid.UUID, list[int]] = {}
    for key in ctx.services.share.keys_of_group(group.group_id):
        by_topic.setdefault(key.topic_id, []).append(key.partition)
    wanted = []
    for topic_id, partitions in by_topic.items():
        topic = ctx.services.topics.by_id(topic_id)
        if topic is not None:
            wanted.append((topic.name, sorted(partitions)))
    return sorted(wanted)


async def _topic(
    ctx: RequestContext, group_id: str, name: str, partitions: list[int]
) -> dict[str, Any]:
    topic, code = topic_problem(ctx, name, Operation.DESCRIBE)
    if code == ErrorCode.unknown_topic_or_partition:
        code = ErrorCode.none  # a topic without state, as any other
    answers = []
    for index in partitions:
        answer: dict[str, Any] = {
            "partition_index": index,
            "start_offset": -1,
            "leader_epoch": 0,
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
