"""DeleteTopics (20), v1-v6.

- Topics by name, or from v6 by id (UNKNOWN_TOPIC_ID when unknown).
- Unknown names answer UNKNOWN_TOPIC_OR_PARTITION; with
  `delete.topic.enable=false` every deletion is TOPIC_DELETION_DISABLED.
- The partitions' files are removed and parked fetches on them wake up.
"""

from __future__ import annotations

from typing import Any

from broker.handlers.base import Reply, RequestContext
from protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 6


async def handle(ctx: RequestContext, request: Any) -> Reply:
    broker = ctx.broker
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    results = []
    for name, topic_id in wanted:
        if name is None and topic_id is not None:
            topic = broker.topics.by_id(topic_id)
            missing = ErrorCode.unknown_topic_id
        else:
            topic = broker.topics.get(name) if name is not None else None
            missing = ErrorCode.unknown_topic_or_partition
        result: dict[str, Any] = {"name": name, "topic_id": topic_id, "error_code": 0}
        if not broker.config.delete_topic_enable:
            result["error_code"] = ErrorCode.topic_deletion_disabled
        elif topic is None:
            result["error_code"] = missing
        else:
            await broker.delete_topic(topic.name)
            result["name"] = topic.name
            result["topic_id"] = topic.topic_id
        results.append(result)
    return {"throttle_time": 0, "responses": results}
