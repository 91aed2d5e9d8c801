"""DescribeLogDirs (35), v1-v5: one result per log directory (`log.dirs`), with the
sizes of the partitions whose replica it holds (in a cluster, not every partition).

topics = null describes every partition; unknown topics are left out, and so are
topics with no partition in a directory, as Kafka does. A replica being moved
(AlterReplicaLogDirs) shows twice: its current log, and its future log in the target
directory with is_future_key and, as offset_lag, how far the copy is behind. An
offline directory answers KAFKA_STORAGE_ERROR with no topics and no sizes. v4 adds
each directory's total and usable bytes, v5 whether it is cordoned (never here).
With ACLs the caller needs DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED and
no directories otherwise.
"""

from __future__ import annotations

import shutil
from typing import Any

from kio.schema.describe_log_dirs.v1.request import DescribeLogDirsRequest as V1
from kio.schema.describe_log_dirs.v2.request import DescribeLogDirsRequest as V2
from kio.schema.describe_log_dirs.v3.request import DescribeLogDirsRequest as V3
from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest as V4
from kio.schema.describe_log_dirs.v5.request import DescribeLogDirsRequest as V5

from odradek.broker.dataplane.log_dirs import LogDir
from odradek.broker.dataplane.topics import Partition
from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 5

DescribeLogDirsRequest = V1 | V2 | V3 | V4 | V5

# one directory's rows: topic name -> its partitions' rows
Rows = dict[str, list[dict[str, Any]]]


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> Reply:
    if not cluster_allowed(ctx, Operation.DESCRIBE):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.cluster_authorization_failed,
            "results": [],
        }
    services = ctx.services
    rows: dict[LogDir, Rows] = {d: {} for d in services.topics.log_dirs}
    for partition in _wanted(ctx, request):
        name = partition.topic.name
        if partition.log_dir is not None:
            rows[partition.log_dir].setdefault(name, []).append(
                _row(partition.index, partition.log.size_bytes(), 0, False)
            )
        move = services.replica_moves.of(partition)
        if move is not None:
            rows[move.target].setdefault(name, []).append(
                _row(partition.index, move.future.size_bytes(), move.offset_lag, True)
            )
    return {
        "throttle_time": 0,
        "error_code": 0,
        "results": [_result(ctx, log_dir, topics) for log_dir, topics in rows.items()],
    }


def _wanted(ctx: RequestContext, request: DescribeLogDirsRequest) -> list[Partition]:
    """The partitions asked about that have a live replica here."""
    registry = ctx.services.topics
    if request.topics is None:
        return list(registry.hosted_partitions())
    wanted = []
    for entry in request.topics:
        topic = registry.get(entry.topic)
        if topic is None:
            continue
        for i in entry.partitions:
            if 0 <= i < len(topic.partitions):
                partition = topic.partitions[i]
                if partition.hosted and not partition.offline:
                    wanted.append(partition)
    return wanted


def _row(index: int, size: int, lag: int, future: bool) -> dict[str, Any]:
    return {
        "partition_index": index,
        "partition_size": size,
        "offset_lag": lag,
        "is_future_key": future,
    }


def _result(ctx: RequestContext, log_dir: LogDir, topics: Rows) -> dict[str, Any]:
    try:
        usage = shutil.disk_usage(log_dir.path) if log_dir.online else None
    except OSError as exc:
        ctx.services.topics.fail_dir(log_dir, exc, "describe")
        usage = None
    if usage is None:
        return {
            "error_code": ErrorCode.kafka_storage_error,
            "log_dir": log_dir.name,
            "topics": [],
            "total_bytes": -1,
            "usable_bytes": -1,
            "is_cordoned": False,
        }
    return {
        "error_code": 0,
        "log_dir": log_dir.name,
        "topics": [{"name": name, "partitions": rows} for name, rows in topics.items()],
        "total_bytes": usage.total,
        "usable_bytes": usage.free,
        "is_cordoned": False,
    }
