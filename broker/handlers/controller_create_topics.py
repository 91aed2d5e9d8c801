"""CreateTopics (19), v7, on the controller listener: a broker of the cluster asks,
having checked names, counts and configs as it would alone; the controller places
the replicas round-robin over the live brokers (INVALID_REPLICATION_FACTOR when there
are fewer than asked for), or where the request's assignments say
(INVALID_REPLICA_ASSIGNMENT for unregistered brokers, a broker twice, uneven
replica counts, or no live replica), and answers TOPIC_ALREADY_EXISTS for a name
taken meanwhile."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.create_topics.v7.request import CreateTopicsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller

MIN_VERSION, MAX_VERSION = 7, 7


def _create(shard: Any, details: dict[str, Any]) -> Any:
    return shard.create_topic(details)


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> Reply:
    results = []
    for topic in request.topics:
        details = {
            "name": topic.name,
            "partitions": topic.num_partitions,
            "replication_factor": topic.replication_factor,
            "configs": {c.name: c.value for c in topic.configs if c.value is not None},
            "assignments": {a.partition_index: list(a.broker_ids) for a in topic.assignments},
        }
        answer = await answered_by_controller(ctx, partial(_create, details=details))
        results.append(
            {
                "name": topic.name,
                "topic_id": answer.get("topic_id"),
                "error_code": answer["error_code"],
                "error_message": answer.get("error_message"),
                "num_partitions": topic.num_partitions,
                "replication_factor": topic.replication_factor,
                "configs": None,
            }
        )
    return {"throttle_time": 0, "topics": results}
