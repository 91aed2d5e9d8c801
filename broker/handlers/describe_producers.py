"""DescribeProducers (61), v0: the producer state of partitions: each active
producer's epoch, last sequence and timestamp, and its open transaction's
first offset (-1 if none). With ACLs a topic needs READ on it:
TOPIC_AUTHORIZATION_FAILED otherwise."""

from __future__ import annotations

from typing import Any

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 0, 0


def _failed(index: int, code: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "error_message": None,
        "active_producers": [],
    }


async def handle(ctx: RequestContext, request: Any) -> Reply:
    topics = []
    for topic in request.topics:
        partitions = []
        readable = ctx.allowed(Operation.READ, ResourceType.TOPIC, topic.name)
        for index in topic.partition_indexes:
            partition = ctx.services.topics.partition(topic.name, index)
            if not readable:
                partitions.append(_failed(index, ErrorCode.topic_authorization_failed))
                continue
            if partition is None:
                partitions.append(_failed(index, ErrorCode.unknown_topic_or_partition))
                continue
            partitions.append(
                {
                    "partition_index": index,
                    "error_code": 0,
                    "error_message": None,
                    "active_producers": [
                        {
                            "producer_id": pid,
                            "producer_epoch": entry.epoch,
                            "last_sequence": entry.last_sequence,
                            "last_timestamp": entry.last_timestamp,
                            "coordinator_epoch": 0,
                            "current_txn_start_offset": entry.transaction_first_offset,
                        }
                        for pid, entry in partition.producers.producers.items()
                    ],
                }
            )
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
