"""OffsetForLeaderEpoch (23), v2-v4.

For each partition, from the leader epoch checkpoint: the largest epoch not
above the requested one and its end offset (the start of the next epoch, or
the log end offset for the latest epoch, the leader's own epoch counting from
the log end when nothing was written in it yet); (-1, -1) when no epoch fits. A
current_leader_epoch newer than this broker's is UNKNOWN_LEADER_EPOCH, an
older one FENCED_LEADER_EPOCH.

With ACLs a topic needs DESCRIBE on it (or the caller CLUSTER_ACTION on the cluster):
TOPIC_AUTHORIZATION_FAILED otherwise.
"""

from __future__ import annotations

from typing import Any

from kio.schema.offset_for_leader_epoch.v4.request import OffsetForLeaderEpochRequest

from odradek.broker.handlers.authorization import cluster_allowed
from odradek.broker.handlers.base import Reply, RequestContext
from odradek.broker.security.resources import Operation, ResourceType
from odradek.protocol.errors import ErrorCode

MIN_VERSION, MAX_VERSION = 2, 4
# the fields read are those of v2: typed as the newest


def _answer(index: int, code: ErrorCode, epoch: int = -1, end_offset: int = -1) -> dict[str, Any]:
    return {"error_code": code, "partition": index, "leader_epoch": epoch, "end_offset": end_offset}


async def handle(ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> Reply:
    topics = []
    any_topic = cluster_allowed(ctx, Operation.CLUSTER_ACTION)
    for topic in request.topics:
        answers = []
        denied = not any_topic and not ctx.allowed(
            Operation.DESCRIBE, ResourceType.TOPIC, topic.topic
        )
        for p in topic.partitions:
            partition = ctx.services.topics.partition(topic.topic, p.partition)
            if denied:
                answers.append(_answer(p.partition, ErrorCode.topic_authorization_failed))
            elif partition is None:
                answers.append(_answer(p.partition, ErrorCode.unknown_topic_or_partition))
            elif not partition.led_here:
                answers.append(_answer(p.partition, partition.unavailable_error))
            elif p.current_leader_epoch > partition.leader_epoch:
                answers.append(_answer(p.partition, ErrorCode.unknown_leader_epoch))
            elif 0 <= p.current_leader_epoch < partition.leader_epoch:
                answers.append(_answer(p.partition, ErrorCode.fenced_leader_epoch))
            else:
                epoch, end_offset = partition.log.end_offset_for_epoch(
                    p.leader_epoch, partition.leader_epoch
                )
                answers.append(_answer(p.partition, ErrorCode.none, epoch, end_offset))
        topics.append({"topic": topic.topic, "partitions": answers})
    return {"throttle_time": 0, "topics": topics}
