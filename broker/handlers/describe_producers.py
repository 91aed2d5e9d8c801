"""DescribeProducers (61), v0: the producer state of partitions: each active
producer's epoch, last sequence and timestamp, and its open transaction's
first offset (-1 if none). With ACLs a topic needs READ on it:
TOPIC_AUTHORIZATION_FAILED otherwise."""

from __future__ import annotations

from typing import Any

from kio.schema.describe_producers.v0.request import DescribeProducersRequest

from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode, default_message

MIN_VERSION, MAX_VERSION = 0, 0


def _failed(index: int, code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": code,
        "error_message": message,
        "active_producers": [],
    }


async def handle(ctx: RequestContext, request: DescribeProducersRequest) -> Reply:
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
                # Kafka's words only for a topic it does not know, not a partition
                unknown = ErrorCode.unknown_topic_or_partition
                known = ctx.services.topics.get(topic.name) is not None
                partitions.append(
                    _failed(index, unknown, None if known else default_message(unknown))
                )
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
                            "coordinator_epoch": entry.coordinator_epoch,
                            "current_txn_start_offset": entry.transaction_first_offset,
                        }
                        for pid, entry in partition.producers.producers.items()
                    ],
                }
            )
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
