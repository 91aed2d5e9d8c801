"""DescribeQuorum (55), v0-v2: the metadata quorum as `kafka-metadata-quorum.sh` shows it.

- One voter: this controller, the leader, with the metadata log's end as its offset
  and the high watermark (every write is on disk before it counts).
- Observers: the registered brokers, with the metadata offset each last reported in
  a heartbeat and when.
- v2 adds the voters' controller listeners (`nodes`).
- Any other topic or partition: UNKNOWN_TOPIC_OR_PARTITION; a node that is no
  controller: NOT_CONTROLLER.
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest

from odradek.broker.cluster.controller import METADATA_TOPIC
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 2
# v0-v2 have the same fields: typed as the newest


def _replica(node_id: int, log_end_offset: int, seen_ms: int) -> dict[str, Any]:
    return {
        "replica_id": node_id,
        "replica_directory_id": None,
        "log_end_offset": log_end_offset,
        "last_fetch_timestamp": seen_ms,
        "last_caught_up_timestamp": seen_ms,
    }


async def handle(ctx: RequestContext, request: DescribeQuorumRequest) -> Reply:
    controller = ctx.services.controller
    if controller is None:
        return {"error_code": ErrorCode.not_controller, "topics": [], "nodes": []}
    end = controller.high_watermark()
    now_ms = int(time.time() * 1000)
    topics = []
    for topic in request.topics:
        partitions: list[dict[str, Any]] = []
        for partition in topic.partitions:
            index = partition.partition_index
            if topic.topic_name != METADATA_TOPIC or index != 0:
                partitions.append(
                    {"partition_index": index, "error_code": ErrorCode.unknown_topic_or_partition}
                )
                continue
            partitions.append(
                {
                    "partition_index": 0,
                    "error_code": 0,
                    "leader_id": controller.node_id,
                    "leader_epoch": 1,
                    "high_watermark": end,
                    "current_voters": [_replica(controller.node_id, end, now_ms)],
                    "observers": [
                        _replica(node_id, seen.log_end_offset, seen.last_seen_ms)
                        for node_id, seen in sorted(controller.observers.items())
                        if node_id != controller.node_id
                    ],
                }
            )
        topics.append({"topic_name": topic.topic_name, "partitions": partitions})
    nodes = [
        {
            "node_id": controller.node_id,
            "listeners": [
                {
                    "name": listener.name,
                    "host": listener.advertised_host,
                    "port": listener.advertised_port,
                }
                for listener in ctx.services.listeners
                if listener.controller
            ],
        }
    ]
    return {"error_code": 0, "topics": topics, "nodes": nodes}
