"""DeleteTopics (20), v1-v6.

- Topics by name, or from v6 by id (UNKNOWN_TOPIC_ID when unknown).
- Unknown names answer UNKNOWN_TOPIC_OR_PARTITION; with
  `delete.topic.enable=false` every deletion is TOPIC_DELETION_DISABLED.
- The partitions' files are removed and parked fetches on them wake up.
- With ACLs (unless DELETE on the cluster) a topic needs DELETE on it
  (TOPIC_AUTHORIZATION_FAILED); a named topic the principal may not DESCRIBE answers
  TOPIC_AUTHORIZATION_FAILED whether it exists or not, and one given by id has its
  name withheld.
"""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 1, 6


async def handle(ctx: RequestContext, request: Any) -> Reply:
    services = ctx.services
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    results = []
    every_topic = cluster_allowed(ctx, Operation.DELETE)
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            topic = services.topics.by_id(topic_id)
            missing = ErrorCode.unknown_topic_id
        else:
            topic = services.topics.get(name) if name is not None else None
            missing = ErrorCode.unknown_topic_or_partition
        result: dict[str, Any] = {"name": name, "topic_id": topic_id, "error_code": 0}
        known_name = topic.name if topic is not None else name
        describable = every_topic or known_name is None or _may(ctx, Operation.DESCRIBE, known_name)
        deletable = every_topic or known_name is None or _may(ctx, Operation.DELETE, known_name)
        if not services.config.delete_topic_enable:
            result["error_code"] = ErrorCode.topic_deletion_disabled
        elif name is None and topic is not None and not deletable:
            result["error_code"] = ErrorCode.topic_authorization_failed
            result["name"] = topic.name if describable else None
        elif name is not None and not describable:
            result["error_code"] = ErrorCode.topic_authorization_failed
        elif topic is None:
            result["error_code"] = missing
            result["error_message"] = default_message(missing)  # Kafka's words
        elif not deletable:
            result["error_code"] = ErrorCode.topic_authorization_failed
        else:
            await services.delete_topic(topic.name)
            result["name"] = topic.name
            result["topic_id"] = topic.topic_id
        results.append(result)
    return {"throttle_time": 0, "responses": results}


def _may(ctx: RequestContext, operation: Operation, name: str) -> bool:
    return ctx.allowed(operation, ResourceType.TOPIC, name)
