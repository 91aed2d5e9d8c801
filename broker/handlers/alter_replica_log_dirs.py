"""AlterReplicaLogDirs (34), v1-v2: move replicas of this node to another of its log
directories (the copy runs in the background: dataplane/replica_moves.py).

Per partition, in Kafka's order: a topic name too long for the future log's directory
name (over 255 characters) is INVALID_TOPIC_EXCEPTION; a path that is not exactly one
of the log directories (absolute, as DescribeLogDirs names them) LOG_DIR_NOT_FOUND; an
offline target KAFKA_STORAGE_ERROR. Then the directory is remembered for a replica
this node does not have yet, which will be created there: a partition of an unknown
topic answers UNKNOWN_TOPIC_OR_PARTITION, one whose replicas are elsewhere
REPLICA_NOT_AVAILABLE. A replica that is offline, or that cannot start a copy while a
log directory is offline, is KAFKA_STORAGE_ERROR. A replica already in the target
directory, or already moving there, answers NONE and nothing changes; one moving to
another directory starts over towards the new one.

With ACLs the caller needs ALTER on the cluster: every partition answers
CLUSTER_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from kio.schema.alter_replica_log_dirs.v1.request import AlterReplicaLogDirsRequest as V1
from kio.schema.alter_replica_log_dirs.v2.request import AlterReplicaLogDirsRequest as V2

from odradek.broker.dataplane.log_dirs import future_name, is_full_disk
from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 2

AlterReplicaLogDirsRequest = V1 | V2
MAX_DIR_NAME = 255


async def handle(ctx: RequestContext, request: AlterReplicaLogDirsRequest) -> Reply:
    wanted: dict[tuple[str, int], str] = {}  # the last path named for a partition wins
    for entry in request.dirs:
        for topic in entry.topics:
            for index in topic.partitions:
                wanted[(topic.name, index)] = entry.path
    if not cluster_allowed(ctx, Operation.ALTER):
        return _reply(
            {tp: ErrorCode.cluster_authorization_failed for tp in _in_request_order(request)}
        )
    return _reply({tp: _move(ctx, tp, path) for tp, path in wanted.items()})


def _in_request_order(request: AlterReplicaLogDirsRequest) -> list[tuple[str, int]]:
    return [(t.name, i) for entry in request.dirs for t in entry.topics for i in t.partitions]


def _move(ctx: RequestContext, tp: tuple[str, int], path: str) -> ErrorCode:
    name, index = tp
    if len(future_name(f"{name}-{index}")) > MAX_DIR_NAME:
        return ErrorCode.invalid_topic_exception
    topics = ctx.services.topics
    log_dirs = topics.log_dirs
    target = log_dirs.get(path)
    if target is None:
        return ErrorCode.log_dir_not_found
    if not target.online:
        return ErrorCode.kafka_storage_error
    partition = topics.partition(name, index)
    moves = ctx.services.replica_moves
    if partition is not None and partition.offline:
        return ErrorCode.kafka_storage_error
    if partition is None or not partition.hosted:
        topics.preferred[tp] = target
        if partition is None:
            return ErrorCode.unknown_topic_or_partition
        return ErrorCode.replica_not_available
    move = moves.of(partition)
    if partition.log_dir is target or (move is not None and move.target is target):
        if move is not None and move.target is not target:
            moves.stop(move)
        return ErrorCode.none
    if len(log_dirs.online()) < len(log_dirs.dirs):
        return ErrorCode.kafka_storage_error
    try:
        moves.start(partition, target)
    except OSError as exc:
        if not is_full_disk(exc):
            topics.fail_dir(target, exc, "create future log")
        return ErrorCode.kafka_storage_error
    return ErrorCode.none


def _reply(results: dict[tuple[str, int], ErrorCode]) -> Reply:
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (name, index), code in results.items():
        by_topic.setdefault(name, []).append({"partition_index": index, "error_code": code})
    return {
        "throttle_time": 0,
        "results": [
            {"topic_name": name, "partitions": partitions} for name, partitions in by_topic.items()
        ],
    }
