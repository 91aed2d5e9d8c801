"""ListPartitionReassignments (46), v0: the reassignments in progress, from this
broker's view of the cluster's metadata: every partition's replicas (the target ones
first, then those leaving), the replicas being added and those being removed. Topics
null: every reassignment; otherwise the partitions asked for that are moving (unknown
ones left out, as Kafka does). On one node of its own nothing ever moves. On the
controller listener (`--bootstrap-controller`), from the active controller's metadata;
another controller answers NOT_CONTROLLER. With ACLs the caller needs DESCRIBE on the
cluster (CLUSTER_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest

from odradek.broker.handlers.authorization import cluster_allowed, needs_permission
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.coordinator.cluster import reassignment
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: ListPartitionReassignmentsRequest) -> Reply:
    if not cluster_allowed(ctx, Operation.DESCRIBE):
        code = ErrorCode.cluster_authorization_failed
        message = needs_permission(ctx, "ListPartitionReassignments", Operation.DESCRIBE)
        return {"throttle_time": 0, "error_code": code, "error_message": message, "topics": []}
    wanted = None
    if request.topics is not None:
        wanted = [(t.name, list(t.partition_indexes)) for t in request.topics]
    member, controller = ctx.services.member, ctx.services.controller
    if ctx.listener.controller:  # the active controller's own metadata
        if controller is None or not controller.is_active:
            code = ErrorCode.not_controller
            return {"throttle_time": 0, "error_code": code, "error_message": None, "topics": []}
        moving = reassignment.ongoing(controller.shard.topics, wanted)
    else:
        moving = [] if member is None else reassignment.ongoing(member.view.topics, wanted)
    topics = [
        {
            "name": name,
            "partitions": [
                {
                    "partition_index": index,
                    "replicas": list(p.replicas),
                    "adding_replicas": list(p.adding),
                    "removing_replicas": list(p.removing),
                }
                for index, p in partitions
            ],
        }
        for name, partitions in moving
    ]
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.none,
        "error_message": None,
        "topics": topics,
    }
