"""DescribeLogDirs (35), v1-v5: the one data directory, the sizes of the partitions
it holds a replica of (in a cluster, not every partition).

topics = null describes every partition; unknown topics are left out, as Kafka
does. v4 adds the directory's total and usable bytes, v5 whether it is cordoned (never here:
nothing moves replicas between directories). With ACLs the caller needs
DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED and no directories otherwise.
"""

from __future__ import annotations

import shutil

from kio.schema.describe_log_dirs.v1.request import DescribeLogDirsRequest as V1
from kio.schema.describe_log_dirs.v2.request import DescribeLogDirsRequest as V2
from kio.schema.describe_log_dirs.v3.request import DescribeLogDirsRequest as V3
from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest as V4
from kio.schema.describe_log_dirs.v5.request import DescribeLogDirsRequest as V5

from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 1, 5

DescribeLogDirsRequest = V1 | V2 | V3 | V4 | V5


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> Reply:
    if not cluster_allowed(ctx, Operation.DESCRIBE):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.cluster_authorization_failed,
            "results": [],
        }
    registry = ctx.services.topics
    if request.topics is None:
        wanted = [(t, [p.index for p in t.partitions if p.hosted]) for t in registry]
    else:
        wanted = []
        for entry in request.topics:
            topic = registry.get(entry.topic)
            if topic is not None:
                indexes: list[int] = [
                    i
                    for i in entry.partitions
                    if 0 <= i < len(topic.partitions) and topic.partitions[i].hosted
                ]
                wanted.append((topic, indexes))
    data_dir = ctx.services.config.data_dir
    usage = shutil.disk_usage(data_dir)
    topics = [
        {
            "name": topic.name,
            "partitions": [
                {
                    "partition_index": i,
                    "partition_size": topic.partitions[i].log.size_bytes(),
                    "offset_lag": 0,
                    "is_future_key": False,
                }
                for i in indexes
            ],
        }
        for topic, indexes in wanted
    ]
    return {
        "throttle_time": 0,
        "error_code": 0,
        "results": [
            {
                "error_code": 0,
                "log_dir": str(data_dir.resolve()),
                "topics": topics,
                "total_bytes": usage.total,
                "usable_bytes": usage.free,
                "is_cordoned": False,
            }
        ],
    }
