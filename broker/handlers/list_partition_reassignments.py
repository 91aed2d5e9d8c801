"""ListPartitionReassignments (46), v0: the reassignments in progress. Replicas only
move where a topic is created or grows, never by reassignment, so there are none: the
answer lists no topic. With ACLs the caller needs DESCRIBE on the cluster
(CLUSTER_AUTHORIZATION_FAILED)."""

from __future__ import annotations

from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest

from odradek.broker.handlers.authorization import cluster_allowed, needs_permission
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


async def handle(ctx: RequestContext, request: ListPartitionReassignmentsRequest) -> Reply:
    code, message = ErrorCode.none, None
    if not cluster_allowed(ctx, Operation.DESCRIBE):
        code = ErrorCode.cluster_authorization_failed
        message = needs_permission(ctx, "ListPartitionReassignments", Operation.DESCRIBE)
    return {"throttle_time": 0, "error_code": code, "error_message": message, "topics": []}
