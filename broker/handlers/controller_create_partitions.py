"""CreatePartitions (37), v3, on the controller listener: a broker of the cluster asks
for a topic to grow; the new partitions are placed as at creation, with the topic's
replication factor, or where the request's assignments say."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.create_partitions.v3.request import CreatePartitionsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller

MIN_VERSION, MAX_VERSION = 3, 3


def _grow(shard: Any, name: str, count: int, assignments: list[list[int]] | None) -> Any:
    return shard.create_partitions(name, count, assignments)


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> Reply:
    results = []
    for topic in request.topics:
        name, count = topic.name, topic.count
        assignments: list[list[int]] | None = None
        if topic.assignments is not None:
            assignments = [list(a.broker_ids) for a in topic.assignments]
        grow = partial(_grow, name=name, count=count, assignments=assignments)
        answer = await answered_by_controller(ctx, grow)
        results.append(
            {
                "name": name,
                "error_code": answer["error_code"],
                "error_message": answer.get("error_message"),
            }
        )
    return {"throttle_time": 0, "results": results}
