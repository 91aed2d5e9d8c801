"""DeleteShareGroupOffsets (92), v0: forget an empty share group's state for whole
topics; the group starts them again where `share.auto.offset.reset` says.

- A group with members answers NON_EMPTY_GROUP; one that is not a share group
  GROUP_ID_NOT_FOUND; unknown topics UNKNOWN_TOPIC_OR_PARTITION.
- With ACLs: DELETE on the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
  (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.share_admin import group_problem, topic_problem
from odradek.broker.security.resources import Operation
from odradek.coordinator.runtime import Result
from odradek.coordinator.share.records import ShareKey
from odradek.coordinator.share.shard import ShareShard
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: Any) -> Reply:
    group_id = request.group_id
    problem = await group_problem(ctx, group_id, Operation.DELETE)
    if problem is not None:
        code, message = problem
        return {"throttle_time": 0, "error_code": code, "error_message": message, "responses": []}
    responses = []
    share = ctx.services.share
    for requested in request.topics:
        topic, code = topic_problem(ctx, requested.topic_name, Operation.READ)
        if topic is not None:
            for key in share.keys_of_group(group_id):
                if key.topic_id == topic.topic_id:
                    await share.run(key, functools.partial(_delete, key=key))
        responses.append(
            {
                "topic_name": requested.topic_name,
                "topic_id": topic.topic_id if topic is not None else uuid.UUID(int=0),
                "error_code": code,
                "error_message": None,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "responses": responses,
    }


def _delete(shard: ShareShard, key: ShareKey) -> Result[int]:
    return shard.delete(key)
