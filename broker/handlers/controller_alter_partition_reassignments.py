"""AlterPartitionReassignments (45), v0-v1, on the controller listener: a broker of the
cluster passes on its client's request; each partition's move (or cancel) is one
operation on the cluster's metadata (coordinator/cluster/reassignment.py: alter)."""

from __future__ import annotations

from functools import partial
from typing import Any

from kio.schema.alter_partition_reassignments.v1.request import (
    AlterPartitionReassignmentsRequest,
)

from odradek.broker.handlers.alter_partition_reassignments import answer
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.coordinator.cluster import reassignment

MIN_VERSION, MAX_VERSION = 0, 1


def _alter(shard: Any, topic: str, index: int, details: dict[str, Any]) -> Any:
    return reassignment.alter(shard, topic, index, details)


async def handle(ctx: RequestContext, request: AlterPartitionReassignmentsRequest) -> Reply:
    allow = request.allow_replication_factor_change if ctx.version >= 1 else True
    results = []
    for topic in request.topics:
        for target in topic.partitions:
            details = {
                "replicas": None if target.replicas is None else list(target.replicas),
                "allow_replication_factor_change": allow,
            }
            operation = partial(
                _alter, topic=topic.name, index=target.partition_index, details=details
            )
            outcome = await answered_by_controller(ctx, operation)
            results.append((outcome["error_code"], outcome.get("error_message")))
    return answer(request, allow, results)
