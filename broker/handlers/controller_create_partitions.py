"""CreatePartitions (37), v0-v3, on the controller listener: a broker of the cluster (or
a client that bootstraps from the controllers) asks for a topic to grow; the new
partitions are placed as at creation, with the topic's replication factor, or where
the request's assignments say. validate_only checks and adds none."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.create_partitions.v3.request import CreatePartitionsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller, dry_run

MIN_VERSION, MAX_VERSION = 0, 3
# v0-v3 have the same fields: typed as the newest


def _grow(shard: Any, name: str, count: int, assignments: list[list[int]] | None, dry: bool) -> Any:
    return dry_run(shard.create_partitions(name, count, assignments), dry)


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> Reply:
    results = []
    for topic in request.topics:
        name, count = topic.name, topic.count
        assignments: list[list[int]] | None = None
        if topic.assignments is not None:
            assignments = [list(a.broker_ids) for a in topic.assignments]
        grow = partial(
            _grow, name=name, count=count, assignments=assignments, dry=request.validate_only
        )
        answer = await answered_by_controller(ctx, grow)
        results.append(
            {
                "name": name,
                "error_code": answer["error_code"],
                "error_message": answer.get("error_message"),
            }
        )
    return {"throttle_time": 0, "results": results}
