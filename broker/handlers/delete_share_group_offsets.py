"""DeleteShareGroupOffsets (92), v0: forget an empty share group's state for whole
topics; the group starts them again where `share.auto.offset.reset` says.

- A group with members answers NON_EMPTY_GROUP; one that is not a share group
  GROUP_ID_NOT_FOUND; an empty group id INVALID_GROUP_ID; unknown topics, and topics
  the group has no state for, UNKNOWN_TOPIC_OR_PARTITION (answered before the others,
  as on Kafka).
- With ACLs: DELETE on the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
  (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_admin import group_problem, topic_problem
from odradek.broker.security.resources import Operation, ResourceType
from odradek.coordinator.runtime import Result
from odradek.coordinator.share.records import ShareKey
from odradek.coordinator.share.shard import ShareShard
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 0, 0
NOTHING_TO_DELETE = "There is no offset information to delete."


async def handle(ctx: RequestContext, request: DeleteShareGroupOffsetsRequest) -> Reply:
    group_id = request.group_id
    problem: tuple[ErrorCode, str | None] | None
    if not group_id and ctx.allowed(Operation.DELETE, ResourceType.GROUP, group_id):
        problem = ErrorCode.invalid_group_id, default_message(ErrorCode.invalid_group_id)
    else:
        problem = await group_problem(ctx, group_id, Operation.DELETE)
    if problem is not None:
        code, message = problem
        return {"throttle_time": 0, "error_code": code, "error_message": message, "responses": []}
    refused: list[dict[str, Any]] = []  # answered first, as Kafka does
    deleted: list[dict[str, Any]] = []
    share = ctx.services.share
    for requested in request.topics:
        topic, code = topic_problem(ctx, requested.topic_name, Operation.READ)
        message = default_message(code) if code else None
        if topic is not None:
            keys = [k for k in share.keys_of_group(group_id) if k.topic_id == topic.topic_id]
            if not keys:
                code, message = ErrorCode.unknown_topic_or_partition, NOTHING_TO_DELETE
            for key in keys:
                await share.run(key, functools.partial(_delete, key=key))
        (refused if code else deleted).append(
            {
                "topic_name": requested.topic_name,
                "topic_id": topic.topic_id if topic is not None else uuid.UUID(int=0),
                "error_code": code,
                "error_message": message,
            }
        )
    responses = refused + deleted
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "responses": responses,
    }


def _delete(shard: ShareShard, key: ShareKey) -> Result[int]:
    return shard.delete(key)
