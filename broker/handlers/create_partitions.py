"""CreatePartitions (37), v0-v3.

- The count is the new total; it must be larger than the current one
  (INVALID_PARTITIONS otherwise). Assignments, if given, must name only this
  broker (INVALID_REPLICA_ASSIGNMENT); in a cluster the controller checks them
  (one replica list per new partition, of the topic's replication factor, registered
  brokers, one live at least) and places the partitions there. Unknown topic:
  UNKNOWN_TOPIC_OR_PARTITION. validate_only changes nothing.
- Consumers subscribed to the topic see the new partitions on their next
  metadata refresh.
- With ACLs a topic needs ALTER on it: TOPIC_AUTHORIZATION_FAILED otherwise (before
  any other check).
"""

from __future__ import annotations

from typing import Any

from odradek.broker.dataplane.topics import TopicError
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 3


def _check(ctx: RequestContext, topic: Any) -> tuple[ErrorCode, str | None]:
    if not ctx.allowed(Operation.ALTER, ResourceType.TOPIC, topic.name):
        return ErrorCode.topic_authorization_failed, "The topic authorization is failed."
    existing = ctx.services.topics.get(topic.name)
    if existing is None:
        return ErrorCode.unknown_topic_or_partition, f"The topic '{topic.name}' does not exist."
    current = len(existing.partitions)
    if topic.count == current:
        return ErrorCode.invalid_partitions, f"Topic already has {current} partition(s)."
    if topic.count < current:
        return (
            ErrorCode.invalid_partitions,
            f"The topic {topic.name} currently has {current} partition(s); {topic.count} "
            "would not be an increase.",
        )
    if topic.assignments is not None and ctx.services.member is None:
        node = ctx.services.config.node_id
        if len(topic.assignments) != topic.count - current or any(
            list(a.broker_ids) != [node] for a in topic.assignments
        ):
            return ErrorCode.invalid_replica_assignment, f"replicas must be exactly broker {node}"
    return ErrorCode.none, None


async def handle(ctx: RequestContext, request: Any) -> Reply:
    results = []
    for topic in request.topics:
        code, message = _check(ctx, topic)
        if code == ErrorCode.none and not request.validate_only:
            try:
                assignments = None
                if topic.assignments is not None:
                    assignments = [list(a.broker_ids) for a in topic.assignments]
                await ctx.services.add_partitions(topic.name, topic.count, assignments)
            except TopicError as exc:
                code, message = ErrorCode(exc.code), exc.message
        results.append({"name": topic.name, "error_code": code, "error_message": message})
    return {"throttle_time": 0, "results": results}
