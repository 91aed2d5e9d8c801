"""AlterPartitionReassignments (45), v0-v1.

- Each partition gets a target replica list, or null to cancel the reassignment in
  progress. In a cluster the request goes to the controller as it came; it starts the
  moves (coordinator/cluster/reassignment.py: the new replicas fetch, join the ISR,
  then the leaving ones stop and delete their copy) and answers at once; the answer
  comes back once this broker's view has the change.
- Errors per partition, in Kafka's words: UNKNOWN_TOPIC_OR_PARTITION,
  INVALID_REPLICA_ASSIGNMENT (an empty list, an unregistered broker, a broker twice),
  NO_REASSIGNMENT_IN_PROGRESS (a cancel with nothing to cancel), and from v1, when
  `allow_replication_factor_change` is false, INVALID_REPLICATION_FACTOR for a target
  of another size than the partition's replicas (the original ones while it moves).
- On one node of its own the only broker is this node: a target of this node alone
  changes nothing and is done at once.
- With ACLs the caller needs ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED for
  the request and every partition.
"""

from __future__ import annotations

from typing import Any

from kio.schema.alter_partition_reassignments.v1.request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
)

from odradek.broker.cluster.admin import as_dict
from odradek.broker.cluster.node_client import NodeUnreachable
from odradek.broker.handlers.authorization import cluster_allowed, needs_permission
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.coordinator.cluster import reassignment
from odradek.coordinator.cluster import records as rec
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 1
# v0 and v1 differ by allow_replication_factor_change (true when absent): typed as v1
ALTER_PARTITION_REASSIGNMENTS = 45


def _all_failed(
    request: AlterPartitionReassignmentsRequest, code: int, message: str | None
) -> Reply:
    return {
        "throttle_time": 0,
        "allow_replication_factor_change": True,
        "error_code": code,
        "error_message": message,
        "responses": [
            {
                "name": topic.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": code,
                        "error_message": message,
                    }
                    for p in topic.partitions
                ],
            }
            for topic in request.topics
        ],
    }


def _alone(ctx: RequestContext, topic: str, target: ReassignablePartition, allow: bool) -> Any:
    """One partition on a node of its own: its one replica is this node."""
    node = ctx.services.config.node_id
    partition = ctx.services.topics.partition(topic, target.partition_index)
    if partition is None:
        missing = ctx.services.topics.get(topic) is None
        return (
            ErrorCode.unknown_topic_or_partition,
            f"Unable to find a topic named {topic}."
            if missing
            else f"Unable to find partition {topic}:{target.partition_index}.",
        )
    current = rec.PartitionValue((node,), (node,), node, 0, 0)
    replicas = None if target.replicas is None else list(target.replicas)
    try:
        reassignment.reassign(
            topic, target.partition_index, current, replicas, {node}, {node}, allow
        )
    except reassignment.ReassignmentError as exc:
        return exc.code, exc.message
    return ErrorCode.none, None


async def handle(ctx: RequestContext, request: AlterPartitionReassignmentsRequest) -> Reply:
    if not cluster_allowed(ctx, Operation.ALTER):
        message = needs_permission(ctx, "AlterPartitionReassignments", Operation.ALTER)
        return _all_failed(request, ErrorCode.cluster_authorization_failed, message)
    allow = request.allow_replication_factor_change if ctx.version >= 1 else True
    member = ctx.services.member
    if member is not None:
        forwarded = as_dict(request)
        forwarded["allow_replication_factor_change"] = allow
        try:
            reply = await member.ask_controller(ALTER_PARTITION_REASSIGNMENTS, 1, forwarded)
            await member.settle()
        except NodeUnreachable as exc:
            return _all_failed(request, ErrorCode.request_timed_out, str(exc))
        return as_dict(reply)
    results = [
        _alone(ctx, topic.name, target, allow)
        for topic in request.topics
        for target in topic.partitions
    ]
    return answer(request, allow, results)


def answer(
    request: AlterPartitionReassignmentsRequest,
    allow: bool,
    results: list[tuple[int, str | None]],
) -> Reply:
    """The answer to `request`: (error code, message) of each partition it names, in
    the request's order."""
    each = iter(results)
    responses = []
    for topic in request.topics:
        partitions = []
        for target in topic.partitions:
            code, message = next(each)
            partitions.append(
                {
                    "partition_index": target.partition_index,
                    "error_code": code,
                    "error_message": message,
                }
            )
        responses.append({"name": topic.name, "partitions": partitions})
    return {
        "throttle_time": 0,
        "allow_replication_factor_change": allow,
        "error_code": ErrorCode.none,
        "error_message": None,
        "responses": responses,
    }
