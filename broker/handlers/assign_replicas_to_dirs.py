"""AssignReplicasToDirs (73), v0: served on the controller listener. A broker says in
which of its log directories each of its replicas lies; the controller records it
(coordinator/cluster/directories.py), so that when a directory fails it knows which
replicas went with it."""

from __future__ import annotations

from kio.schema.assign_replicas_to_dirs.v0.request import AssignReplicasToDirsRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.handlers.controller_common import answered_by_controller
from odradek.coordinator.cluster import directories

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: AssignReplicasToDirsRequest) -> Reply:
    details = {
        "broker_id": request.broker_id,
        "broker_epoch": request.broker_epoch,
        "directories": [
            (directory.id_, topic.topic_id, partition.partition_index)
            for directory in request.directories
            for topic in directory.topics
            for partition in topic.partitions
        ],
    }
    answer = await answered_by_controller(ctx, lambda shard: directories.assign(shard, details))
    return {
        "throttle_time": 0,
        "error_code": answer["error_code"],
        "directories": answer.get("directories", []),
    }
