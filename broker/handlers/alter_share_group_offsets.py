"""AlterShareGroupOffsets (91), v0: set where share-partitions of an empty share group
start again (everything in flight there is forgotten).

- A group with members answers NON_EMPTY_GROUP, one of another type GROUP_ID_NOT_FOUND;
  a group that does not exist yet gets the state it will start from.
- Unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION; a negative offset or one
  past the log end: INVALID_REQUEST.
- With ACLs: READ on the group (GROUP_AUTHORIZATION_FAILED) and on each topic
  (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.handlers.base import Reply, RequestContext
from broker.handlers.share_admin import group_problem, topic_problem
from broker.security.resources import Operation
from coordinator.share.records import ShareKey
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: Any) -> Reply:
    problem = await group_problem(
        ctx, request.group_id, Operation.READ, must_be_empty=True, may_be_missing=True
    )
    if problem is not None:
        code, message = problem
        return {"throttle_time": 0, "error_code": code, "error_message": message, "responses": []}
    responses = []
    for requested in request.topics:
        topic, code = topic_problem(ctx, requested.topic_name, Operation.READ)
        answers = []
        for p in requested.partitions:
            error, message = code, None
            if topic is not None:
                error, message = await _alter(ctx, request.group_id, topic, p)
            answers.append(
                {
                    "partition_index": p.partition_index,
                    "error_code": error,
                    "error_message": message,
                }
            )
        responses.append(
            {
                "topic_name": requested.topic_name,
                "topic_id": topic.topic_id if topic is not None else uuid.UUID(int=0),
                "partitions": answers,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "responses": responses,
    }


async def _alter(
    ctx: RequestContext, group_id: str, topic: Any, p: Any
) -> tuple[ErrorCode, str | None]:
    if not 0 <= p.partition_index < len(topic.partitions):
        return ErrorCode.unknown_topic_or_partition, None
    partition = topic.partitions[p.partition_index]
    if partition.hosted and not 0 <= p.start_offset <= partition.high_watermark:
        return ErrorCode.invalid_request, (
            f"The start offset {p.start_offset} is outside the partition "
            f"(0 to {partition.high_watermark})."
        )
    share = ctx.broker.share
    await share.ensure_started()
    key = ShareKey(group_id, topic.topic_id, p.partition_index)
    start = (
        max(p.start_offset, partition.log.log_start_offset) if partition.hosted else p.start_offset
    )
    await share.run(key, lambda s: s.alter_start(key, start))
    return ErrorCode.none, None
