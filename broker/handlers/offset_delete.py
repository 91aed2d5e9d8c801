"""OffsetDelete (47), v0.

Removes committed offsets of a group. A partition of a topic the group's
members are subscribed to answers GROUP_SUBSCRIBED_TO_TOPIC, one of an unknown topic
or partition UNKNOWN_TOPIC_OR_PARTITION (first in the answer, as Kafka); an unknown
group GROUP_ID_NOT_FOUND, an empty group id INVALID_GROUP_ID, a classic group with
members of another protocol than "consumer" NON_EMPTY_GROUP.

With ACLs: DELETE on the group (GROUP_AUTHORIZATION_FAILED for the whole request) and
READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions, which stay).
"""

from __future__ import annotations

from kio.schema.offset_delete.v0.request import OffsetDeleteRequest

from odradek.broker.handlers.authorization import allowed_names
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.groups_common import in_kafka_order, on_group_shard
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> Reply:
    if not ctx.allowed(Operation.DELETE, ResourceType.GROUP, request.group_id):
        return {
            "error_code": ErrorCode.group_authorization_failed,
            "throttle_time": 0,
            "topics": [],
        }
    if not request.group_id:
        return {"error_code": ErrorCode.invalid_group_id, "throttle_time": 0, "topics": []}
    readable = allowed_names(
        ctx, Operation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    early: dict[tuple[str, int], int] = {}  # refused before the coordinator is asked
    for t in request.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name not in readable:
                early[tp] = ErrorCode.topic_authorization_failed
            elif ctx.services.topics.partition(*tp) is None:
                early[tp] = ErrorCode.unknown_topic_or_partition
    partitions = [
        (t.name, p.partition_index)
        for t in request.topics
        for p in t.partitions
        if (t.name, p.partition_index) not in early
    ]
    code, answer = await on_group_shard(
        ctx, request.group_id, lambda s: s.delete_offsets(request.group_id, partitions)
    )
    top, codes = (code, {}) if code else answer
    if top:
        return {"error_code": top, "throttle_time": 0, "topics": []}
    topics = in_kafka_order(request.topics, early, lambda tp: codes.get(tp, 0))
    return {"error_code": 0, "throttle_time": 0, "topics": topics}
